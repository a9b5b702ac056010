"""The devices of the cluster a client is connected to, from the client's side: installing
the device plugin, reading every worker's inventory, resolving a pin.

Imported by ``hermes_nb.context`` (pins are resolved when a graph is built), so it imports
nothing that imports the context back.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from typing import Any

from hermes_nb.runtime import cluster_reports
from hermes_nb.runtime.cluster import check_cluster
from hermes_nb.runtime.cluster_devices import PLUGIN_NAME, ClusterDevice, published, split_address

_lock = threading.Lock()
_registered: set[tuple[str, str]] = set()
_inventories: dict[tuple[str, frozenset[str]], list[ClusterDevice]] = {}
_last: dict[str, list[ClusterDevice]] = {}


def setup(client: Any, *, fresh: bool = True) -> list[ClusterDevice]:
    """Install the device plugin on every worker of ``client``'s cluster (and on workers
    that join later), subscribe to this client's kernel reports; the cluster's devices
    (``fresh=False``: as last asked, see :func:`cluster_devices`)."""
    _install(client)
    return cluster_devices(client, fresh=fresh)


def _install(client: Any) -> None:
    key = (client.id, str(client.scheduler.address))
    if key in _registered:
        return
    from hermes_nb.runtime.cluster_plugin import HermesDevices

    check_cluster(client)  # a worker without Hermes could not even load the plugin

    client.register_plugin(HermesDevices(), name=PLUGIN_NAME)
    cluster_reports.subscribe(client)
    with _lock:
        _registered.add(key)


def cluster_devices(client: Any, *, fresh: bool = True) -> list[ClusterDevice]:
    """Every worker's devices, worker by worker: asked again when the workers changed
    (``fresh``, one call to the scheduler), or the last answer (``fresh=False``, for the
    checks of each op built)."""
    address = str(client.scheduler.address)
    if not fresh and address in _last:
        return _last[address]
    workers = _worker_addresses(client)
    found = _inventories.get((address, workers))
    if found is None:
        answers = client.run(published)
        found = [ClusterDevice(**{**e, "dtypes": tuple(e["dtypes"])})
                 for w in sorted(answers) for e in answers[w]]
        with _lock:
            _inventories.clear()
            _inventories[(address, workers)] = found
    _last[address] = found
    return found


def _worker_addresses(client: Any) -> frozenset[str]:
    """Every worker's address (newer ``distributed`` lists only 5 unless asked for all)."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:  # a version without the argument lists them all
        info = client.scheduler_info()
    return frozenset(info["workers"])


def describe(found: Iterable[ClusterDevice]) -> str:
    """``"tcp://…:1/cpu:0 (name), tcp://…:1/opencl:0 (name)"``: what the cluster has."""
    return ", ".join(f"{d.address} ({d.name})" for d in found) or "no devices"


def resolve(client: Any, target: str, *, fresh: bool = True) -> ClusterDevice:
    """The cluster device ``target`` names (``"opencl:0"`` on any worker, or
    ``"tcp://host:port/opencl:0"``), or ``ValueError`` listing what the cluster has."""
    _install(client)
    found = cluster_devices(client, fresh=fresh)
    worker, local = split_address(target)
    for d in found:
        if d.id == local and worker in (None, d.worker):
            return d
    where = f"worker {worker} has no" if worker else "no worker has"
    raise ValueError(f"device: {target!r} is not on the cluster at {client.scheduler.address} "
                     f"({where} {local}); the cluster has: {describe(found)}")


def active_client() -> Any:
    """The default ``dask.distributed`` client, if one is running."""
    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None
