"""``hm.devices()``: this process's devices, or with ``cluster=True`` every worker's."""

from __future__ import annotations

from typing import Any

from hermes_nb import backends


def devices(cluster: bool = False) -> list[Any]:
    """Every device Hermes can run on here (:class:`Device`, ``cpu:0`` first); with
    ``cluster=True``, every device of the active ``dask.distributed`` cluster's workers as
    ``ClusterDevice`` records (worker address, host, id, name, kind, stable id), worker by
    worker, installing the device plugin on the workers first if needed.

    >>> import hermes_nb as hm
    >>> hm.devices()[0].id
    'cpu:0'
    """
    if not cluster:
        return backends.devices()
    from hermes_nb.runtime.cluster_inventory import active_client, setup

    client = active_client()
    if client is None:
        raise ValueError("devices(cluster=True): no dask.distributed Client is active; "
                         "create one (distributed.Client(...)) or call hm.devices()")
    return setup(client)
