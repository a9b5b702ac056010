"""Processes forked (``os.fork``, fork-start pools) after Hermes has run: ``cpu:0`` computes
correctly in the child, a device whose context does not survive a fork raises a clear
error, and spawn-start pools work on every device."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.backends.cpu import device as cpu
from hermes_nb.runtime import fork

pytestmark = pytest.mark.timeout(180)

N = 1 << 17  # above cpu.JIT_MIN_ELEMENTS' default: fused kernels are Numba kernels


def _data(i: int) -> np.ndarray:
    return np.linspace(-1.0, 1.0, N, dtype=np.float32) + np.float32(i)


def _expected(i: int) -> tuple[np.ndarray, float]:
    x = _data(i)
    y = np.maximum(x * np.float32(2) - np.float32(0.5), np.float32(0))
    return y, float(y.sum(dtype=np.float64))


def _work(i: int, device: str | None = "cpu:0") -> tuple[np.ndarray, float]:
    """A fused elementwise kernel and a fused reduction (Numba on cpu:0)."""
    def build() -> tuple[hm.Tensor, hm.Tensor]:
        y = hm.relu(hm.asarray(_data(i)) * 2.0 - 0.5)
        return y, y.sum()

    if device is None:
        y, s = build()
    else:
        with hm.device(device):
            y, s = build()
    y, s = hm.compute(y, s)
    return y.numpy(), float(s.numpy())


def _work_on(args: tuple[int, str | None]) -> tuple[np.ndarray, float]:
    return _work(*args)


def _check(result: tuple[np.ndarray, float], i: int) -> None:
    y, total = result
    want_y, want_total = _expected(i)
    np.testing.assert_allclose(y, want_y, rtol=1e-6)
    assert total == pytest.approx(want_total, rel=1e-4)


def _in_child(fn: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """Run ``fn`` in an ``os.fork()`` child; its return value or exception comes back.
    A child that hangs is killed and fails the test."""
    fd, answer = tempfile.mkstemp(suffix=".pickle")
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            try:
                payload = ("ok", fn())
            except BaseException as exc:  # sent back to the parent
                payload = ("error", exc)
            with os.fdopen(fd, "wb") as out:
                pickle.dump(payload, out)
        finally:
            os._exit(0)
    os.close(fd)
    try:
        status = _wait(pid, timeout_s)
        data = Path(answer).read_bytes()
    finally:
        os.unlink(answer)
    assert data, f"the forked child died without an answer (wait status {status})"
    kind, value = pickle.loads(data)
    if kind == "error":
        raise value
    return value


def _wait(pid: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the forked child hung for more than {timeout_s} s")
        time.sleep(0.02)


@pytest.fixture
def ran_everywhere(device: Any) -> str:
    """Hermes has run on ``device`` and on cpu:0 (Numba's threads started) in this process."""
    _check(_work(0, "cpu:0"), 0)
    _check(_work(0, device.id), 0)
    return device.id


def test_fork_child_computes_on_cpu(ran_everywhere: str) -> None:
    _check(_in_child(lambda: _work(3, "cpu:0")), 3)


def test_fork_child_unpinned_compute_is_correct(ran_everywhere: str) -> None:
    with hm.policy("round_robin"):  # every device gets its turn in the child
        results = _in_child(lambda: [_work(i, None) for i in range(3)])
    for i, result in enumerate(results):
        _check(result, i)


def test_fork_child_device_survives_or_names_itself(ran_everywhere: str) -> None:
    dev = hm.get_device(ran_everywhere)
    if dev.survives_fork:
        _check(_in_child(lambda: _work(2, ran_everywhere)), 2)
        return
    with pytest.raises(hm.DeviceError, match="spawn") as caught:
        _in_child(lambda: _work(2, ran_everywhere))
    assert ran_everywhere in str(caught.value)
    assert "fork" in str(caught.value)
    assert caught.value.device == ran_everywhere


def test_fork_child_without_numba_threads_uses_numpy() -> None:
    _check(_work(0, "cpu:0"), 0)
    unsafe = fork.numba_parallel_fork_unsafe()
    child_threshold = _in_child(lambda: cpu.JIT_MIN_ELEMENTS)
    if unsafe:  # GNU OpenMP layer started: a parallel Numba kernel would end the child
        assert child_threshold > N
    else:
        assert child_threshold == cpu.JIT_MIN_ELEMENTS


def test_fork_child_runs_a_conv_the_parent_compiled() -> None:
    """A conv (a parallel Numba kernel in the parent) computes in the child; where a
    parallel kernel would end it, through NumPy."""
    from hermes_nb.api.nn import conv, pool

    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(8, 4, 40, 40)).astype(np.float32), \
        rng.normal(size=(8, 4, 3, 3)).astype(np.float32)

    def layer() -> np.ndarray:
        with hm.device("cpu:0"):
            return pool(hm.relu(conv(x, w, pads=(1, 1, 1, 1))), "max", (2, 2), (2, 2)).numpy()

    parent = layer()  # above WINDOW_MIN_WORK: the generated kernels
    assert cpu.WINDOW_MIN_WORK <= 8 * 8 * 40 * 40 * 36
    np.testing.assert_allclose(_in_child(layer), parent, rtol=1e-5, atol=1e-5)
    if fork.numba_parallel_fork_unsafe():
        assert _in_child(lambda: cpu.WINDOW_MIN_WORK) > 8 * 8 * 40 * 40 * 36


def test_fork_child_runs_a_replay_the_parent_made() -> None:
    """A replay's launchers were decided in the parent (a parallel conv kernel); the child
    decides anew and computes the same values."""
    from hermes_nb.api.nn import conv
    from hermes_nb.runtime.replay import replay_of

    rng = np.random.default_rng(1)  # above PARALLEL_MIN_WORK: every thread in the parent
    x, w = rng.normal(size=(8, 4, 48, 48)).astype(np.float32), \
        rng.normal(size=(8, 4, 3, 3)).astype(np.float32)
    with hm.device("cpu:0"):
        t = hm.asarray(x)
        out = hm.relu(conv(t, w, pads=(1, 1, 1, 1)))
        out.numpy()
        replay = replay_of([out.node], [t.node], owned=True)
    (parent,) = replay.run([x])
    np.testing.assert_allclose(_in_child(lambda: replay.run([x])[0]), parent, rtol=1e-5,
                               atol=1e-5)


def test_fork_pool_map(ran_everywhere: str) -> None:
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.map_async(_work_on, [(i, "cpu:0") for i in range(4)]).get(timeout=60)
    for i, result in enumerate(results):
        _check(result, i)


def test_fork_pool_on_device(ran_everywhere: str) -> None:
    dev = hm.get_device(ran_everywhere)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        job = pool.map_async(_work_on, [(i, ran_everywhere) for i in range(4)])
        if dev.survives_fork:
            for i, result in enumerate(job.get(timeout=60)):
                _check(result, i)
            return
        with pytest.raises(hm.DeviceError, match=f"{ran_everywhere}.*spawn"):
            job.get(timeout=60)


def test_spawn_pool_map(ran_everywhere: str) -> None:
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        jobs = [(i, "cpu:0") for i in range(2)] + [(i, ran_everywhere) for i in range(2, 4)]
        results = pool.map_async(_work_on, jobs).get(timeout=120)
    for i, result in enumerate(results):
        _check(result, i)


def test_parent_keeps_working_after_fork(ran_everywhere: str) -> None:
    _in_child(lambda: None)
    _check(_work(5, ran_everywhere), 5)
    assert hm.get_device(ran_everywhere).unusable_reason is None


def test_fork_while_hermes_locks_are_held() -> None:
    """Another thread of the parent held Hermes's run and scheduler locks at the fork: the
    child has fresh ones."""
    from hermes_nb.runtime import profile
    from hermes_nb.scheduler import policies

    _check(_work(0, "cpu:0"), 0)
    scheduler = policies.default_scheduler()
    held = [profile._ids_lock, scheduler._lock, scheduler.model._lock, scheduler.health._lock]
    for lock in held:
        lock.acquire()
    try:
        _check(_in_child(lambda: _work(1, "cpu:0"), timeout_s=30), 1)
    finally:
        for lock in held:
            lock.release()
