"""Calibration in the background, on idle devices.

The runtime's scheduler runs a new kernel on the one device the prior predicts best
(``scheduler.policies``), so a first run compiles nowhere else. After that run, each other
capable device that has never timed the kernel compiles and times it here, on one daemon
thread, while no graph is running in this process and the process is near idle (the
user's own NumPy between runs uses the same cores): on zero-filled inputs of the kernel's
shapes, on the device's own thread (so it never overlaps the user's work there), its
compile recorded apart and left out of the timings it feeds the history. A later run then
chooses among calibrated devices without waiting for a compile in the foreground.

``HERMES_EXPLORE=0`` turns it off; kernels with more than ``MAX_BYTES`` of inputs and
output, co-execution tiles and pinned kernels are never explored here.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import threading
import time
from dataclasses import replace

import numpy as np

from hermes_nb.backends import get_device
from hermes_nb.compiler.progress import recording
from hermes_nb.ir.node import OpSpec
from hermes_nb.runtime import profile
from hermes_nb.scheduler import Decision, Scheduler, default_scheduler
from hermes_nb.settings import env_flag

log = logging.getLogger("hermes_nb.runtime")

MAX_BYTES = 64 << 20  # zero-filled inputs and an output this large, at most, per job
IDLE_POLL_S = 0.05
#: the process is busy (the user's NumPy, OpenCV, ... between Hermes runs) above this
#: share of one core over a poll: exploring then would take the cores it is using
BUSY_CPU_SHARE = 0.2

_jobs: queue.Queue[tuple[Scheduler, OpSpec, Decision, str]] = queue.Queue()
_pending: set[tuple[str, str]] = set()  # (signature, device) queued or running
_lock = threading.Lock()
_thread: list[threading.Thread] = []


def enabled() -> bool:
    """Whether new kernels are calibrated in the background (``HERMES_EXPLORE``, default on
    for a scheduler that runs new kernels on one device)."""
    return env_flag("HERMES_EXPLORE", True) and not default_scheduler().explore_new_kernels


def _nbytes(spec: OpSpec) -> int:
    sizes = [(spec.shape, spec.dtype), *zip(spec.in_shapes, spec.in_dtypes)]
    return sum(math.prod(s) * np.dtype(d).itemsize for s, d in sizes)


def after_first_run(spec: OpSpec, decision: Decision) -> None:
    """Queue the other capable devices that never timed ``decision``'s kernel."""
    # a cluster's worker has no open profile: its devices are not this process's to explore
    if decision.policy not in ("auto", "fastest", "cpu") or not profile.running() \
            or not enabled() or _nbytes(spec) > MAX_BYTES:
        return
    scheduler = default_scheduler()
    sig = decision.kernel.signature
    for c in decision.candidates:
        if c.device == decision.device or not c.healthy or scheduler.model.runs(sig, c.device):
            continue
        with _lock:
            if (sig, c.device) in _pending:
                continue
            _pending.add((sig, c.device))
        # the foreground leaves a pair being timed here alone, as it does its own in flight
        scheduler.reserve_runs(decision.kernel, c.device, scheduler.calibration_runs)
        _jobs.put((scheduler, spec, decision, c.device))
    _start()


def _forget_jobs() -> None:
    """A forked child has no explore thread: the parent's jobs are not its own."""
    global _jobs, _lock
    _jobs, _lock = queue.Queue(), threading.Lock()  # a lock held at the fork stays held
    _pending.clear()
    _thread.clear()


os.register_at_fork(after_in_child=_forget_jobs)


def _start() -> None:
    with _lock:
        if _thread and _thread[0].is_alive():
            return
        thread = threading.Thread(target=_loop, name="hermes-explore", daemon=True)
        _thread[:] = [thread]
    thread.start()


def busy() -> bool:
    """Whether jobs are queued or running."""
    with _lock:
        return bool(_pending)


def wait(timeout_s: float = 60.0) -> bool:
    """Wait until every queued job is done; whether they all are."""
    deadline = time.monotonic() + timeout_s
    while busy():
        if time.monotonic() > deadline:
            return False
        time.sleep(IDLE_POLL_S)
    return True


def _idle() -> bool:
    """No Hermes graph runs and the process itself is near idle over one poll (on a
    machine whose devices share the host's cores, exploring beside the user's own code
    would slow it)."""
    if profile.running():
        return False
    start = time.process_time()
    time.sleep(IDLE_POLL_S)
    return time.process_time() - start < BUSY_CPU_SHARE * IDLE_POLL_S and not profile.running()


def _loop() -> None:
    while True:
        job = _jobs.get()
        scheduler, spec, decision, device = job
        done = True
        try:
            while not _idle():
                time.sleep(IDLE_POLL_S)
            done = _explore(scheduler, spec, decision, device)
        except Exception as exc:  # a device that cannot run it is the foreground's to find out
            log.debug("hermes: background calibration of %s on %s failed: %s", spec.op,
                      device, exc)
        if not done:  # interrupted by the user's next run: the rest when idle again
            _jobs.put(job)
            continue
        scheduler.release_runs(decision.kernel, device, scheduler.calibration_runs)
        with _lock:
            _pending.discard((decision.kernel.signature, device))


def _explore(scheduler: Scheduler, spec: OpSpec, decision: Decision, device_id: str) -> bool:
    """Time the kernel on ``device_id`` until the pair is calibrated; False when a run of
    the user's began first (what was timed is kept)."""
    device = get_device(device_id)
    spec = replace(spec, device=device_id, key=spec.key + profile.BACKGROUND_SUFFIX)
    buffers = [device.run(device.from_host, np.zeros(s, d))
               for s, d in zip(spec.in_shapes, spec.in_dtypes)]
    while scheduler.model.runs(decision.kernel.signature, device_id) < scheduler.calibration_runs:
        if not _idle():
            return False
        seconds = device.run(_timed_run, device, spec, buffers)
        scheduler.observe(decision.kernel, device_id, seconds)
    log.debug("hermes: calibrated %s on %s in the background", spec.op, device_id)
    return True


def _timed_run(device: object, spec: OpSpec, buffers: list[object]) -> float:
    built = profile.CompileRecorder(spec.key, spec.op, spec.device)
    with recording(built):
        start = time.perf_counter()
        device.execute(spec, buffers)  # type: ignore[attr-defined]
        device.synchronize()  # type: ignore[attr-defined]
        end = time.perf_counter()
    return max(end - start - built.seconds, 0.0)
