"""Running a lowered graph on a ``dask.distributed`` cluster, from the client's side.

Placement has two levels: the client decides each kernel's device kind (or the very worker
device a pin names) and says so to Dask as task resources and worker restrictions; the
worker binds a concrete device when the task runs (``cluster_devices.bind``). Each kernel
run comes back as an event on a topic of this client's own (``cluster_reports``), so the
profile, the progress bar and the scheduler's model learn from runs on the workers.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.ir.node import OpSpec
from hermes_nb.runtime import cluster_reports
from hermes_nb.runtime.cluster import direct
from hermes_nb.runtime.cluster_devices import RESOURCE_PREFIX, ClusterDevice, split_address
from hermes_nb.runtime.cluster_inventory import describe, setup
from hermes_nb.runtime.coexec import tile_key, tile_task
from hermes_nb.runtime.lower import run_op


def restrictions(graph: dict[str, Any], found: list[ClusterDevice]
                 ) -> tuple[dict[str, dict[str, float]], dict[str, list[str]], dict[str, Any]]:
    """Per task key: its resources, its workers (a pin to one worker's device), and the
    decisions of its kernels. A kernel placed on a device no worker has, but not pinned,
    is left free: the worker that takes it runs it on a device it has. A pin that no worker
    can honour is a ``ValueError`` naming what the cluster has."""
    ids = {d.id for d in found}
    kinds = {d.kind for d in found}
    resources: dict[str, dict[str, float]] = {}
    workers: dict[str, list[str]] = {}
    decisions: dict[str, Any] = {}
    for key, task in graph.items():
        if not (isinstance(task, tuple) and len(task) > 2 and isinstance(task[1], OpSpec)):
            continue
        spec, decision = task[1], task[2] if task[0] is run_op else None
        if task[0] is run_op:
            decisions[key] = decision
        # a co-executed kernel's tile runs on the tile's device
        device = task[3].device if task[0] is tile_task else spec.device
        worker, local = split_address(device)
        kind = local.split(":", 1)[0]
        pinned = decision is not None and decision.policy == "pinned"
        if worker is not None:
            if not any(d.worker == worker and d.id == local for d in found):
                raise ValueError(f"{spec.describe()} is pinned to {device}, which the cluster "
                                 f"does not have; it has: {describe(found)}")
            workers[key] = [worker]
            resources[key] = {RESOURCE_PREFIX + local: 1}
        elif local in ids:
            resources[key] = {RESOURCE_PREFIX + local: 1}
        elif kind in kinds and not pinned:
            resources[key] = {RESOURCE_PREFIX + kind: 1}
        elif pinned:
            raise ValueError(f"{spec.describe()} is pinned to {local}, which no worker of the "
                             f"cluster has; it has: {describe(found)}")
    return resources, workers, decisions


def _reports_due(graph: dict[str, Any], decisions: dict[str, Any]
                 ) -> dict[int, dict[str, Any]]:
    """Per run id, the kernel runs its workers will report: each kernel task's key with its
    decision, and each co-execution tile under its tile's key (no decision: a tile's time
    is not an estimate of the whole kernel)."""
    due: dict[int, dict[str, Any]] = {}
    for key, task in graph.items():
        if not isinstance(task, tuple) or not task:
            continue
        if task[0] is run_op:
            due.setdefault(task[3], {})[key] = decisions[key]
        elif task[0] is tile_task:
            due.setdefault(task[5], {})[tile_key(task[1], task[3])] = None
    return due


class _PerKey:
    """A task annotation whose value depends on the task (the scheduler calls it with the
    key; picklable, as the scheduler imports Hermes)."""

    def __init__(self, table: dict[str, Any], default: Any) -> None:
        self.table, self.default = table, default

    def __call__(self, key: Any) -> Any:
        return self.table.get(key, self.default)


def cluster_get(client: Any, graph: dict[str, Any], keys: list[str], sync: bool = True) -> Any:
    """``client.get(graph, keys, sync=sync)`` with each kernel restricted to workers that
    have its device, and its run reported back into its profile and the scheduler. Returns
    once the tasks are done (with ``sync=False``: their Futures, finished or failed), so
    the reports are in before the run's profile closes."""
    import dask
    from distributed import wait

    found = setup(client)
    resources, workers, decisions = restrictions(graph, found)
    annotations: dict[str, Any] = {cluster_reports.ANNOTATION: cluster_reports.topic(client)}
    if resources:
        annotations["resources"] = _PerKey(resources, {})
    if workers:
        annotations["workers"] = _PerKey(workers, [])
    due = _reports_due(graph, decisions)
    waiting = [cluster_reports.expect(r, kernels) for r, kernels in due.items()]
    run_ids = set(due)
    try:
        with dask.annotate(**annotations):
            futures = client.get(graph, keys, sync=False)
        wait(futures)
        for w in waiting:
            w.wait()
        return client.gather(futures, direct=direct(client)) if sync else futures
    finally:
        for r in run_ids:
            cluster_reports.done(r)
