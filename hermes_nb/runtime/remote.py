"""A value held on a ``dask.distributed`` worker: the handle of a persisted tensor, or of a
tensor made from a ``distributed.Future`` or a ``dask.array``.

The worker keeps the :class:`~hermes_nb.runtime.resident.Resident` (a device buffer stays on
its worker's device); this process holds only the Future. Graphs run on the cluster read it
in place; reading it here (``numpy()``, or a graph run without that client) gathers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.errors import ClusterError
from hermes_nb.runtime.cluster import direct
from hermes_nb.runtime.resident import Resident


@dataclass(frozen=True, eq=False)
class Remote:
    """A ``distributed.Future`` of a :class:`Resident` on a worker, the id of the worker
    device that holds it (as the client placed it), and its size in bytes."""

    future: Any
    device: str
    nbytes: int

    def usable_by(self, client: Any) -> Any:
        """The Future, for a graph sent by ``client``; ``ClusterError`` when its cluster is
        gone (the client that holds it was closed) or is another one."""
        mine = self.future.client
        if mine.status not in ("running", "connecting", "newly-created"):
            raise ClusterError(
                f"a tensor persisted on the cluster at {_address(mine)} is gone: its client was "
                "closed, which releases its data on the workers; persist it again on the open "
                "client")
        if _address(mine) != _address(client):
            raise ClusterError(
                f"a tensor persisted on the cluster at {_address(mine)} cannot be used on the "
                f"cluster at {_address(client)}; compute it with .numpy() and make a new tensor")
        return self.future

    def resident(self) -> Resident:
        """The value gathered into this process (host memory)."""
        client = self.future.client
        self.usable_by(client)
        value = client.gather(self.future, direct=direct(client))
        return value if isinstance(value, Resident) else Resident("cpu:0", np.asarray(value))

    def host(self) -> np.ndarray:
        return self.resident().host()

    @property
    def buffer(self) -> np.ndarray:
        """The value gathered to this process's host memory (it has no buffer here)."""
        return self.host()

    def on(self, device_id: str) -> Any:
        return self.resident().on(device_id)


def _address(client: Any) -> str:
    try:
        return str(client.scheduler.address)
    except AttributeError:
        return "an unknown address"


def fetched(remote: Remote) -> Resident:
    """A graph task run without the remote's client: its value, gathered to this process."""
    return remote.resident()


def is_remote(value: Any) -> bool:
    return isinstance(value, Remote)
