"""Placing a graph's kernels: list scheduling in execution order with the scheduler's policy.

Host sources (constants, random draws) live on ``cpu:0`` until a kernel pulls them;
resident buffers stay where they are; every other node gets a :class:`Decision`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from hermes_nb.backends import Device, devices, get_device
from hermes_nb.context import current_options
from hermes_nb.ir.node import Node, toposort
from hermes_nb.ir.ops import Kind, kind_of
from hermes_nb.runtime.cluster_place import ClusterView, cluster_view
from hermes_nb.runtime.coexec import MIN_ROWS_PER_TILE, Tile, split_axis
from hermes_nb.scheduler import (
    Decision,
    InputData,
    Scheduler,
    default_scheduler,
    kernel_info_of,
    plan_split,
)

log = logging.getLogger("hermes_nb.runtime")
HOST = "cpu:0"
COEXEC_MIN_BYTES = 16 << 20  # smaller kernels finish before a split pays for its copies


@dataclass(frozen=True)
class Placement:
    device: str  # where the value ends up
    decision: Decision | None  # None for sources and resident values
    tiles: tuple[Tile, ...] = ()  # row tiles per device when co-executed


def _tiles(node: Node, decision: Decision, candidates: list[str], scheduler: Scheduler,
           inputs: list[InputData], wait: dict[str, float]) -> tuple[Tile, ...]:
    """Row tiles across devices when co-execution is asked for or predicted to gain."""
    mode = current_options().coexec
    split = split_axis(node)
    if (mode == "never" or split is None or len(candidates) < 2 or node.device is not None
            or decision.policy not in ("auto", "fastest")):
        return ()
    rows = split[0]
    if mode == "always":
        bounds = np.linspace(0, rows, len(candidates) + 1).astype(int)
        return tuple(Tile(d, int(a), int(b)) for d, a, b in zip(candidates, bounds, bounds[1:])
                     if b > a)
    if decision.calibrating or node.nbytes < COEXEC_MIN_BYTES:
        return ()
    # devices on the host's cores share them: keep one of those, the chosen one if it is
    host = [d for d in candidates if get_device(d).shares_host_cores]
    keep_host = [decision.device] if decision.device in host else host[:1]
    candidates = [d for d in candidates if d not in host or d in keep_host]
    if len(candidates) < 2:
        return ()
    try:
        plan = plan_split(scheduler, decision.kernel, candidates, inputs=inputs, wait_s=wait,
                          align=MIN_ROWS_PER_TILE)
    except ValueError:  # not every device is calibrated yet
        return ()
    if len(plan.shares) < 2:
        return ()
    return tuple(Tile(d, a, b) for d, a, b in plan.ranges)


def capable(device: Device, node: Node) -> bool:
    """Whether ``device`` can run ``node``: usable here (not an OpenCL device in a forked
    child), its fused ops and its dtypes."""
    if getattr(device, "unusable_reason", None):
        return False
    if kind_of(node.op) is Kind.FUSED and node.op not in device.fused_ops:
        return False
    return all(device.supports(d) for d in (node.dtype, *(i.dtype for i in node.inputs)))


_measured: set[str] = set()


def _measure_links(scheduler: Scheduler, all_devices: list[Device]) -> None:
    """Tell the transfer model which devices compute in host memory (their copies are
    free), and time every other device's host link once per process (stored, so once per
    machine)."""
    for dev in all_devices:
        shared = bool(getattr(dev, "shares_host_memory", False))
        scheduler.transfers.set_shares_host_memory(dev.id, shared)
        if dev.id in _measured or scheduler.transfers.in_host_memory(dev.id):
            continue
        _measured.add(dev.id)

        def h2d(n: int, dev: Device = dev) -> None:
            dev.run(lambda: (dev.from_host(np.empty(n, np.uint8)), dev.synchronize()))

        def d2h(n: int, dev: Device = dev) -> None:
            buffer = dev.run(dev.from_host, np.empty(n, np.uint8))
            dev.run(dev.to_host, buffer)

        try:
            scheduler.measure_link(dev.id, h2d, d2h)
        except Exception as exc:  # an unmeasurable link keeps the default figures
            log.warning("hermes: could not measure the host link of %s: %s", dev.id, exc)


def source_placement(node: Node) -> Placement | None:
    """Where a source lives (a computed buffer on its device, a constant or random draw on
    the host unless pinned), or None for a kernel, which the scheduler places."""
    if node.op == "buffer":
        return Placement(node.attrs["handle"].device, None)
    if node.op in ("constant", "random"):
        return Placement(node.device or HOST, None)
    return None


def place(outputs: list[Node], *, commit: bool = True) -> dict[int, Placement]:
    """A device for every node reachable from ``outputs`` (keyed by ``id(node)``).

    ``commit=False`` is a dry run for ``explain()``: no calibration slot or
    round-robin turn is used up. With a ``dask.distributed`` Client active, the candidates
    are the cluster's devices (:func:`place_on_cluster`).
    """
    cluster = cluster_view(fresh=False)
    if cluster is not None:
        return place_on_cluster(outputs, cluster, commit=commit)
    scheduler = default_scheduler()
    all_devices = devices()
    _measure_links(scheduler, all_devices)
    # queue wait per device now, plus what this graph has already put there
    wait = {d.id: d.load().expected_free_s for d in all_devices}
    placed: dict[int, Placement] = {}
    for node in toposort(outputs):
        source = source_placement(node)
        if source is not None:
            placed[id(node)] = source
            continue
        candidates = [d.id for d in all_devices if capable(d, node)]
        inputs = [InputData(i.nbytes, on={placed[id(i)].device}) for i in node.inputs]
        decision = scheduler.decide(kernel_info_of(node), candidates, pinned=node.device,
                                    inputs=inputs, wait_s=wait, commit=commit)
        tiles = _tiles(node, decision, candidates, scheduler, inputs, wait) if commit else ()
        if tiles:
            placed[id(node)] = Placement(HOST, decision, tiles)
            continue
        wait[decision.device] = wait.get(decision.device, 0.0) + (decision.estimate_s or 0.0)
        placed[id(node)] = Placement(decision.device, decision)
    return placed


def place_on_cluster(outputs: list[Node], cluster: ClusterView, *,
                     commit: bool = True) -> dict[int, Placement]:
    """:func:`place` over a cluster's devices: each kernel's candidates are the cluster's
    capable hardware, estimated by the scheduler under the names its history gives them
    (the client's own device ids for the same hardware), with the time to move inputs
    between workers (or machines) counted before the kernel can start there. A kernel
    goes to its candidate's id, which becomes its task's resources."""
    scheduler = default_scheduler()
    here = devices()
    _measure_links(scheduler, here)  # the client's hardware: its workers' links are alike
    for c in cluster.candidates:
        # host memory wherever it is (a worker's PoCL too, as its inventory says): no copy
        # is charged; other worker-only devices keep the default link figures
        if c.kind == "cpu" or c.shares_host_memory:
            scheduler.transfers.set_shares_host_memory(c.model, True)
    local = {d.id for d in here}
    model_of = {c.id: c.model for c in cluster.candidates}
    wait: dict[str, float] = {}
    placed: dict[int, Placement] = {}
    for node in toposort(outputs):
        source = source_placement(node)
        if source is not None:
            placed[id(node)] = source
            continue
        candidates = [c for c in cluster.candidates if c.capable(node)]
        sources = [placed[id(i)].device for i in node.inputs]
        inputs = [InputData(i.nbytes, on={model_of.get(s, s)})
                  for i, s in zip(node.inputs, sources)]
        start = {c.model: wait.get(c.model, 0.0)
                 + sum(cluster.network_s(c, i.nbytes, s) for i, s in zip(node.inputs, sources))
                 for c in candidates}
        pin = cluster.pinned(node.device) if node.device is not None else None
        decision = scheduler.decide(kernel_info_of(node), [c.model for c in candidates],
                                    pinned=pin.model if pin else node.device, inputs=inputs,
                                    wait_s=start, commit=commit)
        here_ids = [c.id for c in candidates if c.model == c.id and c.id in local]
        tiles = _tiles(node, decision, here_ids, scheduler, inputs, start) if commit else ()
        if tiles:
            placed[id(node)] = Placement(HOST, decision, tiles)
            continue
        wait[decision.device] = wait.get(decision.device, 0.0) + (decision.estimate_s or 0.0)
        device = node.device or next(c.id for c in candidates if c.model == decision.device)
        placed[id(node)] = Placement(device, decision)
    return placed
