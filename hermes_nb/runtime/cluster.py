"""Checks a ``dask.distributed`` cluster passes before it runs a Hermes graph.

The task graph holds Hermes objects (nodes, device values), so the scheduler and every
worker must import ``hermes_nb``; without it Dask reports only "Error during
deserialization of the task graph". Checked once per client and scheduler address.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from hermes_nb.errors import ClusterError

_checked: set[tuple[str, str]] = set()


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def check_cluster(client: Any, module: str = "hermes_nb") -> None:
    """Raise ``ClusterError`` naming the scheduler or workers where ``module`` is missing."""
    address = str(client.scheduler.address)
    if (client.id, address) in _checked:
        return
    missing = []
    if not client.run_on_scheduler(_has_module, module):
        missing.append(f"the scheduler at {address}")
    workers = client.run(_has_module, module)
    missing += [f"worker {w}" for w, ok in sorted(workers.items()) if not ok]
    if missing:
        raise ClusterError(
            f"{module} is not installed on {', '.join(missing)}: a Hermes graph holds Hermes "
            f"objects, so the scheduler and every worker need it (pip install {module} in "
            "their environments, the same version as here)")
    _checked.add((client.id, address))


def direct(client: Any) -> bool:
    """Whether data moves straight between this client and the workers (scatter, gather) or
    through the scheduler. Straight is one hop instead of two and keeps the bytes out of
    the scheduler's memory; a client that cannot reach its workers (through an SSH tunnel
    to the scheduler alone) says so with ``direct_to_workers=False``, as Dask's own option."""
    return client.direct_to_workers is not False


def killed_worker_error(exc: BaseException, graph: dict[Any, Any],
                        nodes: dict[str, Any]) -> ClusterError | None:
    """``distributed.KilledWorker`` as a ``ClusterError`` naming the user's op, its shapes
    and the worker, or None for any other exception. ``nodes``: node key -> node."""
    if type(exc).__name__ != "KilledWorker" or not hasattr(exc, "task"):
        return None
    node = nodes.get(exc.task)
    what = _describe(node, graph.get(exc.task)) if node is not None else str(exc.task)
    worker = getattr(exc.last_worker, "address", exc.last_worker)
    return ClusterError(
        f"{what} killed its worker {exc.allowed_failures + 1} time(s), last {worker} "
        "(dask's distributed.scheduler.allowed-failures is "
        f"{exc.allowed_failures}): the worker process died while running it, e.g. out of "
        "memory or a crashing driver; check the worker's log")


def _describe(node: Any, task: Any) -> str:
    from hermes_nb.ir.node import OpSpec

    device = task[1].device if isinstance(task, tuple) and len(task) > 1 and isinstance(
        task[1], OpSpec) else node.device
    return f"{OpSpec.of(node, device).describe()} on {device or 'a worker device'}"
