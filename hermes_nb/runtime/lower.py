"""Lowering the placed graph to a Dask task graph: one task per kernel.

Each task runs its kernel on the decided device, feeds the measured time back to the
scheduler, and on failure retries on the next-best healthy device.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import Any

import numpy as np

from hermes_nb.errors import DeviceError, DeviceMemoryError
from hermes_nb.ir.node import Node, OpSpec, is_borrowed, toposort
from hermes_nb.ir.random import draw
from hermes_nb.runtime import explore, profile
from hermes_nb.runtime.cluster_devices import bind
from hermes_nb.runtime.cluster_reports import report
from hermes_nb.runtime.coexec import lower_split
from hermes_nb.runtime.placement import Placement
from hermes_nb.runtime.remote import fetched, is_remote
from hermes_nb.runtime.resident import Resident
from hermes_nb.runtime.timing import timed
from hermes_nb.scheduler import Decision, default_scheduler

log = logging.getLogger("hermes_nb.runtime")


def lower(outputs: list[Node], placed: dict[int, Placement], run_id: int
          ) -> tuple[dict[str, Any], list[str]]:
    """A Dask graph computing ``outputs``, and the keys of the outputs."""
    graph: dict[str, Any] = {}
    wanted = {id(n) for n in outputs}
    nodes = toposort(outputs)
    inlined = _inlined_sources(nodes, wanted, placed)
    loads: dict[int, tuple[Any, ...]] = {}
    for node in nodes:
        where = placed[id(node)]
        if node.op == "buffer":
            handle = node.attrs["handle"]
            # a value held on a worker: a cluster graph names its Future instead
            graph[node.key] = (fetched, handle) if is_remote(handle) else handle
        elif node.op in ("constant", "random"):
            load = load_snapshot if is_borrowed(node) and id(node) in wanted else load_host_source
            task = (load, OpSpec.of(node, where.device))
            if id(node) in inlined:
                loads[id(node)] = task
            else:
                graph[node.key] = task
        elif _is_split(node, where):
            lower_split(node, OpSpec.of(node, where.device), where.tiles, run_id, graph)
        else:
            graph[node.key] = (run_op, OpSpec.of(node, where.device), where.decision, run_id,
                               *(loads.get(id(i), i.key) for i in node.inputs))
    return graph, [n.key for n in outputs]


def _is_split(node: Node, where: Placement) -> bool:
    return bool(where.tiles) and not has_integer_pow(OpSpec.of(node, where.device))


def _inlined_sources(nodes: list[Node], wanted: set[int], placed: dict[int, Placement]
                     ) -> set[int]:
    """Constants and random nodes read by one unsplit kernel only and not wanted themselves:
    their load runs inside that kernel's task (Dask runs a nested task inline), saving a
    task and a hop between threads each; they load on their device's thread as before."""
    readers: dict[int, list[Node]] = {}
    for node in nodes:
        for i in node.inputs:
            readers.setdefault(id(i), []).append(node)
    return {id(n) for n in nodes
            if n.op in ("constant", "random") and id(n) not in wanted
            and len(readers.get(id(n), ())) == 1
            and not _is_split(readers[id(n)][0], placed[id(readers[id(n)][0])])}


def host_source_value(spec: OpSpec) -> Any:
    """A constant's value, or the seeded random numbers a ``random`` node stands for, drawn on
    the host (identical on every device)."""
    if spec.op == "constant":
        return spec.attrs["value"]
    a = spec.attrs
    return draw(a["distribution"], spec.shape, spec.dtype, a["seed"], a["params"])


def load_host_source(spec: OpSpec) -> Resident:
    """Upload a constant, or draw seeded random numbers on the host and upload them."""
    value = host_source_value(spec)
    device = bind(spec.device, spec)  # on a worker: one it has, if not the one named
    check_allocation(spec, device)
    return Resident(device.id, _guarded(spec, device, lambda: device.run(device.from_host, value)))


def load_snapshot(spec: OpSpec) -> Resident:
    """A borrowed constant wanted as a result: uploaded from a copy of the caller's array,
    since a device that computes in host memory could otherwise hand out the array itself,
    and a result is a snapshot that a later write to the array must not change."""
    value = np.array(spec.attrs["value"], order="C", copy=True)
    value.flags.writeable = False
    return load_host_source(replace(spec, attrs={**spec.attrs, "value": value}))


def run_op(spec: OpSpec, decision: Decision | None, run_id: int, *inputs: Resident) -> Resident:
    """Run one kernel on its device, moving inputs there first; fall back on failure."""
    if has_integer_pow(spec):
        check_integer_powers(spec, inputs)
    failures: list[str] = []
    while True:
        device = bind(spec.device, spec)  # on a worker: one it has, if not the one named
        try:
            check_allocation(spec, device)
            buffers = [_moved(r, f"{spec.key} input {i}", device, run_id)
                       for i, r in enumerate(inputs)]
            estimate = decision.estimate_s if decision is not None else None
            start, out, end, built = device.run(timed, device, spec, buffers,
                                                estimate_s=estimate or 0.0)
        except Exception as exc:
            failures.append(f"{device.id}: {type(exc).__name__}: {exc}")
            retry = None
            if decision is not None and decision.policy != "pinned":  # a pin is the user's word
                retry = default_scheduler().failed(decision, exc)
            if retry is None:
                if len(failures) > 1:
                    raise DeviceError(
                        f"{spec.describe()} failed on every capable device: "
                        + "; ".join(failures), op=spec.op, device=device.id,
                    ) from exc
                if isinstance(exc, DeviceError):
                    raise
                raise _as_device_error(spec, device, exc) from exc
            log.warning("hermes: %s failed on %s (%s, raised at %s); retrying on %s", spec.op,
                        device.id, exc, _raised_at(exc), retry.device)
            decision, spec = retry, replace(spec, device=retry.device)
            continue
        _record(run_id, spec, decision, device.id, start, end, built, failures)
        return Resident(device.id, out)


def _raised_at(exc: BaseException) -> str:
    """Where ``exc`` was raised, for the fallback's warning: the innermost frame's file
    (from its package on) and line, so a rare failure says where it came from."""
    tb = exc.__traceback__
    if tb is None:
        return "an unknown place"
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    return f"{path.rsplit('site-packages/', 1)[-1]}:{tb.tb_lineno}"


def _record(run_id: int, spec: OpSpec, decision: Decision | None, device: str, start: float,
            end: float, built: profile.CompileRecorder, failures: list[str]) -> None:
    """The run into the profile, its builds as their own events; the scheduler learns the
    run time without the builds (a compile is paid once, an estimate is for every run)."""
    for event in built.events:
        profile.record(run_id, event)
    run = profile.KernelRun(spec.key, spec.op, device, start, end,
                            decision.estimate_s if decision is not None else None,
                            decision.reason if decision is not None else "", tuple(failures),
                            compile_s=built.seconds)
    if report(run_id, run, spec, device):  # on a cluster worker: its client records it
        return
    if decision is not None:
        default_scheduler().record(decision, run.seconds, device=device,
                                   name=profile.kernel_name(run_id, spec.key))
        if decision.calibrating:  # the other devices time a new kernel in the background
            explore.after_first_run(spec, decision)
    profile.record(run_id, run)


def check_allocation(spec: OpSpec, device: Any) -> None:
    """``MemoryError`` before allocating when the kernel's output is larger than the device's
    largest single buffer (OpenCL's ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``)."""
    limit = getattr(getattr(device, "cl_device", None), "max_mem_alloc_size", None)
    nbytes = math.prod(spec.shape) * spec.dtype.itemsize
    if isinstance(limit, int) and nbytes > limit:
        raise DeviceMemoryError(
            f"{spec.describe()}: the result needs one buffer of {nbytes} bytes "
            f"({nbytes / 2**30:.2f} GiB) on {device.id} ({device.name}), more than its largest "
            f"allocation CL_DEVICE_MAX_MEM_ALLOC_SIZE = {limit} bytes ({limit / 2**30:.2f} GiB); "
            "use smaller pieces or a smaller dtype, or run it on another device",
            op=spec.op, device=device.id)


def has_integer_pow(spec: OpSpec) -> bool:
    """Whether the kernel raises an integer to an integer power (alone or in a fused program)."""
    if spec.op == "pow":  # unsigned exponents are never negative
        return spec.dtype.kind == "i"
    programs = [spec.attrs.get(k) for k in ("program", "prologue", "epilogue")]
    return any(i.op == "pow" and np.dtype(i.dtype).kind == "i"
               for p in programs if p is not None for i in p.instrs)


def check_integer_powers(spec: OpSpec, inputs: tuple[Resident, ...]) -> None:
    """Raise NumPy's ``ValueError`` when an integer exponent is negative, on every device alike
    (device kernels cannot raise): the kernel is evaluated on the host with NumPy first."""
    from hermes_nb.ir.array_ops import ArrayOps

    hosts = [r.host() for r in inputs]
    try:
        if spec.op == "pow":
            bad = bool((hosts[1] < 0).any())
        else:
            ArrayOps(np, "scipy.ndimage").run(spec, hosts)
            bad = False
    except ValueError as exc:
        if "negative integer powers" not in str(exc):
            raise
        bad = True
    if bad:
        raise ValueError(
            f"pow: Integers to negative integer powers are not allowed (a negative exponent in "
            f"{spec.describe()}); convert the base to a float dtype first, e.g. "
            f"x.astype('float64') ** y")


def _moved(value: Resident, label: str, device: Any, run_id: int) -> Any:
    """``value``'s buffer on ``device``; a copy between devices is timed into the profile."""
    if value.device == device.id:
        return value.buffer
    start = time.perf_counter()
    buffer = value.on(device.id)
    end = time.perf_counter()
    nbytes = int(getattr(buffer, "nbytes", 0) or 0)
    profile.record(run_id, profile.TransferRun(label, value.device, device.id, start, end, nbytes))
    return buffer


def _as_device_error(spec: OpSpec, device: Any, exc: Exception) -> DeviceError:
    message = f"{spec.describe()} failed on {device.id} ({device.name}): {type(exc).__name__}: {exc}"
    return DeviceError(message, op=spec.op, device=device.id)


def _guarded(spec: OpSpec, device: Any, work: Any) -> Any:
    try:
        return work()
    except DeviceError:
        raise
    except Exception as exc:
        raise _as_device_error(spec, device, exc) from exc
