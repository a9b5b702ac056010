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
