"""``hm.cluster``: reach and use ``dask.distributed`` clusters from Hermes.

``hm.cluster.connect("ssh://user@host")`` opens an SSH tunnel to a remote Dask scheduler
and connects a Client through it (see :mod:`hermes_nb.runtime.ssh_tunnel`).
``hm.cluster.setup(client)`` installs Hermes's device plugin on the client's workers (done
on the first graph anyway) and returns every worker's devices.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.runtime.cluster_devices import ClusterDevice
from hermes_nb.runtime.ssh_tunnel import SSHConnection, connect

__all__ = ["ClusterDevice", "SSHConnection", "connect", "setup"]


def setup(client: Any) -> list[ClusterDevice]:
    """Install the device plugin on every worker of ``client`` (and on workers that join
    later): each publishes its devices as worker resources (``hermes-cpu``,
    ``hermes-opencl``, ``hermes-opencl:0``, ...) and reports its kernel runs to this client.
    Returns the cluster's devices, as ``hm.devices(cluster=True)`` lists them."""
    from hermes_nb.runtime.cluster_inventory import setup as _setup

    return _setup(client)
