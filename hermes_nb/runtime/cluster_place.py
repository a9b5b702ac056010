"""The devices a client places kernels on while a ``dask.distributed`` Client is active: the
cluster's, not only its own.

The workers' inventories (``cluster_inventory``, asked again when the workers change) are
grouped by hardware into :class:`Candidate` devices. Each is named to the scheduler as its
history names it (``cluster_reports.model_device``): a worker's device that is the client's
own hardware (same host, same stable id) shares the client's model (``"opencl:0"``); any
other is ``host/stable id`` on another machine, its stable id on this one. A kernel placed
on a candidate carries its run id (``"opencl:0"``, or ``"tcp://host:port/opencl:0"`` when
that id names other hardware on other workers), which ``cluster_run.restrictions`` turns
into task resources. What each device kind fuses is read from its backend class, so a
device only the workers have is fused for as the client's own are.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from hermes_nb.backends import Device, devices
from hermes_nb.ir.node import Node
from hermes_nb.ir.ops import Kind, kind_of
from hermes_nb.runtime.cluster_devices import ClusterDevice, split_address
from hermes_nb.runtime.cluster_inventory import active_client, setup
from hermes_nb.runtime.cluster_reports import model_device
from hermes_nb.scheduler.history import model_device as model_name

#: moving a value between two workers: (latency s, bytes/s) on one machine (loopback) and
#: between machines (a gigabit network, what a cluster can at least count on)
SAME_HOST_LINK = (200e-6, 2e9)
OTHER_HOST_LINK = (1e-3, 1.25e8)


@functools.cache
def fused_ops_of_kind(kind: str) -> frozenset[str]:
    """The fused kernels a device of ``kind`` runs: its backend class's ``fused_ops`` (no
    device is made); a plug-in kind's from a device of that kind here, else none."""
    if kind.isidentifier():
        try:
            module = importlib.import_module(f"hermes_nb.backends.{kind}.device")
        except ImportError:
            module = None
        for value in vars(module).values() if module is not None else ():
            if isinstance(value, type) and issubclass(value, Device) \
                    and getattr(value, "kind", None) == kind:
                return frozenset(value.fused_ops)
    return next((frozenset(d.fused_ops) for d in devices() if d.kind == kind), frozenset())


@dataclass(frozen=True)
class Candidate:
    """One kind of hardware on the cluster, as placement sees it."""

    id: str  # what a kernel placed here names: "opencl:0" or "tcp://host:port/opencl:0"
    model: str  # the scheduler's name for it: "opencl:0" (the client's own), or a stable id
    kind: str
    workers: frozenset[str]
    hosts: frozenset[str]
    fused_ops: frozenset[str]
    dtypes: frozenset[str]
    shares_host_memory: bool = False  # on every worker that has it

    def capable(self, node: Node) -> bool:
        """Whether it runs ``node``: its fused kind and its dtypes."""
        if kind_of(node.op) is Kind.FUSED and node.op not in self.fused_ops:
            return False
        return all(np.dtype(d).name in self.dtypes
                   for d in (node.dtype, *(i.dtype for i in node.inputs)))


@dataclass(frozen=True)
class ClusterView:
    """The cluster's candidates, and which workers hold a value placed on a device id."""

    candidates: tuple[Candidate, ...]
    holders: Mapping[str, frozenset[str]] = field(default_factory=dict)  # id -> workers
    hosts: Mapping[str, str] = field(default_factory=dict)  # worker -> host

    def pinned(self, device: str) -> Candidate | None:
        """The candidate a pin (``"opencl:0"``, ``"tcp://…/opencl:0"``) names."""
        worker, local = split_address(device)
        for c in self.candidates:
            if c.id == device or (local == c.id.rsplit("/", 1)[-1]
                                  and (worker is None or worker in c.workers)):
                return c
        return None

    def network_s(self, candidate: Candidate, nbytes: int, device: str) -> float:
        """Seconds to bring ``nbytes`` placed on ``device`` to a worker of ``candidate``:
        none when a worker has both, else the cheapest link from a worker holding it."""
        held = self.holders.get(device)
        if held is None or held & candidate.workers:  # on every worker, or shared
            return 0.0
        same = any(self.hosts.get(w) in candidate.hosts for w in held)
        latency, rate = SAME_HOST_LINK if same else OTHER_HOST_LINK
        return latency + nbytes / rate

    def fused_ops(self) -> dict[str, frozenset[str]]:
        """The compile target's entries: every id and worker address a kernel may name."""
        table: dict[str, frozenset[str]] = {}
        for c in self.candidates:
            table[c.id] = c.fused_ops
            for worker in c.workers:
                table[f"{worker}/{c.id.rsplit('/', 1)[-1]}"] = c.fused_ops
        return table


def _group(found: list[ClusterDevice]) -> ClusterView:
    groups: dict[str, list[ClusterDevice]] = {}
    for d in found:
        groups.setdefault(model_name(*model_device({"host": d.host, "stable_id": d.stable_id})),
                          []).append(d)
    with_id: dict[str, set[str]] = {}
    for d in found:
        with_id.setdefault(d.id, set()).add(d.worker)
    candidates = []
    for model, members in groups.items():
        first = members[0]
        workers = frozenset(d.worker for d in members)
        # an id that names this hardware on every worker that has it runs anywhere it is
        same_id = all(d.id == first.id for d in members) and with_id[first.id] == workers
        dtypes = frozenset.intersection(*(frozenset(d.dtypes) for d in members))
        candidates.append(Candidate(first.id if same_id else first.address, model, first.kind,
                                    workers, frozenset(d.host for d in members),
                                    fused_ops_of_kind(first.kind), dtypes,
                                    all(d.shares_host_memory for d in members)))
    holders = {c.id: c.workers for c in candidates}
    for d in found:
        holders.setdefault(d.address, frozenset({d.worker}))
    return ClusterView(tuple(candidates), holders, {d.worker: d.host for d in found})


@functools.lru_cache(maxsize=8)
def _view_of(found: tuple[ClusterDevice, ...]) -> ClusterView:
    return _group(list(found))


def cluster_view(*, fresh: bool = True) -> ClusterView | None:
    """The active Client's cluster as placement sees it (None without a Client): its
    devices asked again when its workers changed (``fresh=False``: as last asked, for
    placement right after the compile target asked)."""
    client = active_client()
    if client is None:
        return None
    return _view_of(tuple(setup(client, fresh=fresh)))  # the device plugin installed first
