"""Kernel runs on cluster workers, reported back to the client that sent them.

A worker sends each kernel run as a Dask event (``Worker.log_event``) on the topic its task
carries (annotation ``hermes_report``: one topic per client, so two clients on one scheduler
never see each other's runs). The event holds the whole profile record (pickled, so fields
added to it travel too), the worker's host and the hardware's stable id. The client puts it
in the run's profile (moving the progress bar) and feeds the scheduler: the model pair is
the client's own device when the worker's device is the same hardware (same host, same
stable id), else ``host/stable id``, so two machines never share one estimate.
"""

from __future__ import annotations

import functools
import logging
import math
import pickle
import threading
import time
from dataclasses import replace
from typing import Any

import numpy as np

from hermes_nb import logrecords
from hermes_nb.backends import get_device
from hermes_nb.runtime import profile
from hermes_nb.runtime.cluster_devices import on_worker, stable_id
from hermes_nb.scheduler import default_scheduler
from hermes_nb.scheduler.history import local_host

log = logging.getLogger("hermes_nb.runtime")

ANNOTATION = "hermes_report"
#: how long a finished graph waits for reports still on their way: a worker sends a report
#: before its task's result on the same stream, and the scheduler passes both on in order,
#: so they are in already; a kernel whose result Dask had from an earlier graph sends none
GRACE_S = 0.05


def topic(client: Any) -> str:
    return f"hermes-kernels-{client.id}"


def subscribe(client: Any) -> None:
    client.subscribe_topic(topic(client), _on_event)


# ---------------------------------------------------------------------- worker side


def report(run_id: int, run: profile.KernelRun, spec: Any, device_id: str) -> bool:
    """On a cluster worker running a task of a listening client: send ``run`` of kernel
    ``spec`` on local device ``device_id`` home (True); elsewhere False, and the caller
    records it here as usual."""
    worker = on_worker()
    if worker is None:
        return False
    try:
        current = worker.get_current_task()
    except KeyError:  # not a task's thread: Hermes called inside a task, on its own threads
        return False
    task = worker.state.tasks.get(current)
    where = (getattr(task, "annotations", None) or {}).get(ANNOTATION)
    if not where:
        return False
    try:
        worker.log_event(where, {
            "run_id": run_id, "record": pickle.dumps(run), "worker": worker.address,
            "host": local_host(), "device": device_id, "stable_id": stable_id(get_device(device_id)),
            "clock": time.time() - time.perf_counter(), "nbytes": _nbytes(spec),
            "logs": logrecords.to_wire(logrecords.records_of_thread(run.start)),
        })
    except Exception as exc:  # the kernel ran: a report that cannot be sent must not fail it
        log.warning("hermes: could not report %s to its client: %s", spec.key, exc)
        return False
    return True


def _nbytes(spec: Any) -> int:
    """Bytes the kernel read and wrote."""
    sizes = [(spec.shape, spec.dtype), *zip(spec.in_shapes, spec.in_dtypes)]
    return int(sum(math.prod(s) * np.dtype(d).itemsize for s, d in sizes))


# ---------------------------------------------------------------------- client side


class _Waiting:
    """The kernels of one run whose reports are due, by key, with their decisions."""

    def __init__(self, decisions: dict[str, Any]) -> None:
        self.decisions = dict(decisions)
        self.ready = threading.Condition()

    def wait(self, timeout_s: float = GRACE_S) -> None:
        with self.ready:
            self.ready.wait_for(lambda: not self.decisions, timeout=timeout_s)


_runs: dict[int, _Waiting] = {}
_runs_lock = threading.Lock()


def expect(run_id: int, decisions: dict[str, Any]) -> _Waiting:
    """Start listening for run ``run_id``'s kernels (``decisions``: kernel key -> Decision)."""
    waiting = _Waiting(decisions)
    with _runs_lock:
        _runs[run_id] = waiting
    return waiting


def done(run_id: int) -> None:
    """Stop listening; give back the calibration slots of kernels that never reported
    (failed, or computed before by another graph), so none stays in flight."""
    with _runs_lock:
        waiting = _runs.pop(run_id, None)
    if waiting is None:
        return
    with waiting.ready:
        left, waiting.decisions = waiting.decisions, {}
    for decision in left.values():
        if decision is not None:
            default_scheduler().release(decision)


@functools.cache
def _local_by_stable_id() -> dict[str, str]:
    from hermes_nb.backends import devices

    return {stable_id(d): d.id for d in reversed(devices())}  # the first id wins


def model_device(message: dict[str, Any]) -> tuple[str, str]:
    """``(host, device)`` the scheduler learns a reported run under: ``("", local id)`` for
    hardware this machine has too, else the worker's host and the hardware's stable id."""
    if message["host"] == local_host():
        local = _local_by_stable_id().get(message["stable_id"])
        if local is not None:
            return "", local
    return message["host"], message["stable_id"]


def _on_event(event: tuple[float, dict[str, Any]]) -> None:
    try:
        _received(event[1])
    except Exception:  # a bad report must not break the client's event loop
        log.exception("hermes: a kernel report from a worker could not be read")


def _received(message: dict[str, Any]) -> None:
    run_id = message["run_id"]
    with _runs_lock:
        waiting = _runs.get(run_id)
    if waiting is None:  # a run that ended already (or was never ours)
        return
    run: profile.KernelRun = pickle.loads(message["record"])
    shift = message["clock"] - (time.time() - time.perf_counter())  # its clock onto ours
    run = replace(run, start=run.start + shift, end=run.end + shift,
                  device=f"{message['worker']}/{message['device']}")
    with waiting.ready:
        found = run.key in waiting.decisions
        decision = waiting.decisions.pop(run.key, None)
        waiting.ready.notify_all()
    profile.record(run_id, run)
    logrecords.ingest(message.get("logs", ()), message["worker"], shift)
    if found and decision is not None:
        host, device = model_device(message)
        default_scheduler().record(decision, run.seconds, device=device, host=host,
                                   name=profile.kernel_name(run_id, run.key))
