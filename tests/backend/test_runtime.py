"""The local runtime: each device's work runs on its own thread (or, for devices that run
on the caller's thread, one kernel at a time there), devices overlap."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hermes_nb as hm


def test_each_device_runs_on_its_own_thread(device, monkeypatch):
    seen: list[str] = []
    original = device.execute

    def recording(spec, inputs):
        seen.append(threading.current_thread().name)
        return original(spec, inputs)

    with hm.device(device):
        (hm.arange(8, dtype="float32") * 2 + 1).numpy()  # measured once: an estimate exists
    monkeypatch.setattr(device, "execute", recording)
    with hm.device(device):
        (hm.arange(8, dtype="float32") * 2 + 1).numpy()
    # a short graph placed only on caller-thread devices runs where compute() was called
    expected = (threading.current_thread().name if device.runs_on_caller
                else f"hermes-{device.id}_")
    assert seen and all(name.startswith(expected) for name in seen)


def test_a_long_graph_leaves_the_calling_thread_free_for_an_interrupt(monkeypatch):
    """Past the budget (or unmeasured), cpu:0 work runs on the helper thread, so the caller
    waits in short slices and sees Ctrl-C at once."""
    import hermes_nb.runtime as runtime

    device = hm.get_device("cpu:0")
    seen: list[str] = []
    original = device.execute

    def recording(spec, inputs):
        seen.append(threading.current_thread().name)
        return original(spec, inputs)

    monkeypatch.setattr(device, "execute", recording)
    monkeypatch.setattr(runtime, "CALLER_THREAD_BUDGET_S", 0.0)
    with hm.device("cpu:0"):
        out = (hm.arange(8, dtype="float32") * 2 + 1).numpy()
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 2 + 1)
    assert seen and threading.main_thread().name not in seen


def test_caller_thread_device_runs_one_kernel_at_a_time(monkeypatch):
    """Computes from several threads on a caller-thread device never overlap in it."""
    device = hm.get_device("cpu:0")
    assert device.runs_on_caller
    inside, most = [0], [0]
    guard = threading.Lock()
    original = device.execute

    def counting(spec, inputs):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            threading.Event().wait(0.02)  # long enough for the other threads to arrive
            return original(spec, inputs)
        finally:
            with guard:
                inside[0] -= 1

    monkeypatch.setattr(device, "execute", counting)
    results: list[np.ndarray] = []

    def work(k: int) -> None:
        with hm.device("cpu:0"):
            results.append((hm.arange(16, dtype="float32") * k).numpy())

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert sorted(float(r[1]) for r in results) == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.skipif(len(hm.devices()) < 2, reason="needs two devices to show overlap")
def test_kernels_on_different_devices_run_concurrently(monkeypatch):
    first, second = hm.devices()[:2]
    # both kernels must be inside execute at the same time to pass the barrier;
    # run one after the other, the barrier times out and breaks
    barrier = threading.Barrier(2, timeout=20)
    for dev in (first, second):
        original = dev.execute

        def meeting(spec, inputs, _original=original):
            if spec.op == "multiply":
                barrier.wait()
            return _original(spec, inputs)

        monkeypatch.setattr(dev, "execute", meeting)
    x = np.arange(6, dtype=np.float32)
    with hm.device(first):
        a = hm.asarray(x) * 2
    with hm.device(second):
        b = hm.asarray(x) * 3
    with hm.options(fuse=False):  # keep "multiply" a kernel of its own on every device
        ra, rb = hm.compute(a, b)
    np.testing.assert_array_equal(ra.numpy(), x * 2)
    np.testing.assert_array_equal(rb.numpy(), x * 3)
    assert ra.device == first.id and rb.device == second.id


def test_shared_subgraph_runs_once(device, monkeypatch):
    calls: list[str] = []
    original = device.execute

    def counting(spec, inputs):
        calls.append(spec.op)
        return original(spec, inputs)

    monkeypatch.setattr(device, "execute", counting)
    with hm.device(device):
        shared = hm.exp(hm.asarray(np.linspace(0, 1, 5, dtype=np.float32)))
        left, right = hm.compute(shared + 1, shared * 2)
    assert calls.count("exp") == 1
    np.testing.assert_allclose(left.numpy() - 1, right.numpy() / 2, rtol=1e-6)


def test_materialised_result_is_reused_without_recomputing(device, monkeypatch):
    with hm.device(device):
        base = (hm.arange(4, dtype="float32") + 1).compute()
    assert base.is_materialized and base.device == device.id
    calls: list[str] = []
    original = device.execute
    monkeypatch.setattr(device, "execute", lambda s, i: calls.append(s.op) or original(s, i))
    with hm.device(device):
        out = (base * base).numpy()
    np.testing.assert_array_equal(out, np.array([1, 4, 9, 16], np.float32))
    assert calls == ["multiply"]
