"""The runtime places unpinned kernels with the scheduler, learns from measured runs,
explains its choice, and moves a failing kernel to another device."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.compiler import optimize
from hermes_nb.runtime import last_profile
from hermes_nb.scheduler import Scheduler, kernel_info_of, policies


@pytest.fixture
def fresh_scheduler(monkeypatch):
    """An empty, in-memory scheduler for this test alone."""
    scheduler = Scheduler(None)
    monkeypatch.setattr(policies, "_default", scheduler)
    return scheduler


def _opencl():
    for d in hm.devices():
        if d.kind == "opencl":
            return d
    pytest.skip("no OpenCL device: install pyopencl and an OpenCL platform (e.g. PoCL)")


def _kernel_of(tensor):
    (root,) = optimize([tensor.node])
    return kernel_info_of(root)


def test_injected_out_of_memory_falls_back_to_another_device(fresh_scheduler, monkeypatch):
    ocl = _opencl()
    x = np.linspace(-2, 2, 4096, dtype=np.float32)
    expr = hm.exp(hm.asarray(x)) * 2 + 1
    kernel = _kernel_of(expr)
    for _ in range(3):  # history says opencl:0 is far faster: auto will choose it
        fresh_scheduler.observe(kernel, ocl.id, 1e-6)
        fresh_scheduler.observe(kernel, "cpu:0", 1.0)
        for other in hm.devices():  # a second driver (opencl:1) slower still: cpu:0 is next
            if other.id not in (ocl.id, "cpu:0"):
                fresh_scheduler.observe(kernel, other.id, 10.0)
    assert expr.explain().kernels[-1].device == ocl.id

    real = type(ocl).execute

    def out_of_memory(self, spec, inputs):
        if spec.op == "fused_elementwise":
            raise MemoryError("injected: out of device memory")
        return real(self, spec, inputs)

    monkeypatch.setattr(type(ocl), "execute", out_of_memory)
    np.testing.assert_allclose(expr.numpy(), np.exp(x) * 2 + 1, rtol=1e-6)
    run = last_profile().kernels[-1]
    assert run.device == "cpu:0"
    assert len(run.failures) == 1 and ocl.id in run.failures[0] and "out of device memory" in run.failures[0]
    assert not fresh_scheduler.health.healthy(kernel.signature, ocl.id)
    # marked unhealthy: the next run goes straight to the healthy device
    np.testing.assert_allclose(expr.numpy(), np.exp(x) * 2 + 1, rtol=1e-6)
    assert last_profile().kernels[-1].failures == ()


def test_failure_everywhere_names_every_device(fresh_scheduler, monkeypatch):
    x = np.arange(4096, dtype=np.float32)
    for dev in hm.devices():
        monkeypatch.setattr(dev, "execute", lambda spec, inputs, _d=dev: (_ for _ in ()).throw(
            MemoryError(f"injected on {_d.id}")))
    with pytest.raises(hm.DeviceError) as info:
        (hm.asarray(x) * 3).numpy()
    message = str(info.value)
    if len(hm.devices()) > 1:
        assert "every capable device" in message
    for dev in hm.devices():
        assert f"injected on {dev.id}" in message


@pytest.fixture
def one_blas_thread():
    """NumPy's OpenBLAS on one thread for the test. With its pool of one thread per core,
    a 256² matmul takes 0.16 ms while the cores are free but 5-70 ms whenever another
    process holds one of them (the pool's threads wait for each other): on a loaded
    2-core machine two of cpu:0's three calibration runs could be such stalls, and its
    estimate then lost to opencl:0's. One thread takes 0.3 ms, loaded or not."""
    import ctypes

    maps = Path("/proc/self/maps").read_text(encoding="utf-8") if sys.platform == "linux" else ""
    paths = sorted({line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()})
    calls = [(getattr(lib, f"{prefix}get_num_threads{suffix}"),
              getattr(lib, f"{prefix}set_num_threads{suffix}"))
             for lib in map(ctypes.CDLL, paths)
             for prefix in ("scipy_openblas_", "openblas_") for suffix in ("64_", "")
             if hasattr(lib, f"{prefix}set_num_threads{suffix}")]
    before = [get() for get, _ in calls]
    for _, set_threads in calls:
        set_threads(1)
    yield
    for (_, set_threads), n in zip(calls, before):
        set_threads(n)


def test_auto_learns_to_put_matmul_on_the_cpu(fresh_scheduler, one_blas_thread):
    _opencl()
    a = hm.Tensor.random((256, 256), seed=1).compute()
    b = hm.Tensor.random((256, 256), seed=2).compute()
    product = a @ b
    first = product.explain().kernels[-1]
    assert first.calibrating
    for _ in range(8):  # calibration: each device is timed a few times
        product.numpy()
    chosen = product.explain().kernels[-1]
    assert not chosen.calibrating
    assert chosen.device == "cpu:0", chosen.reason
    assert set(chosen.estimates) == {d.id for d in hm.devices()}
    np.testing.assert_allclose(product.numpy(), a.numpy() @ b.numpy(), rtol=1e-4)


def test_cpu_policy_and_round_robin(fresh_scheduler):
    x = np.arange(4096, dtype=np.float32)
    with hm.policy("cpu"):
        plan = (hm.asarray(x) * 2 + 1).explain()
    assert {k.device for k in plan.kernels} == {"cpu:0"}
    if len(hm.devices()) < 2:
        return
    seen = set()
    with hm.policy("round_robin"):
        for _ in range(len(hm.devices())):
            np.testing.assert_array_equal((hm.asarray(x) * 2 + 1).numpy(), x * 2 + 1)
            seen.add(last_profile().kernels[-1].device)
    assert seen == {d.id for d in hm.devices()}


def test_unknown_policy_names_the_choices():
    with pytest.raises(ValueError, match=r"fastest.*round_robin"), hm.policy("quickest"):
        pass
