"""``hm.cluster``: reach and use ``dask.distributed`` clusters from Hermes.

``hm.cluster.connect("ssh://user@host")`` opens an SSH tunnel to a remote Dask scheduler
and connects a Client through it (see :mod:`hermes_nb.runtime.ssh_tunnel`).
"""

from __future__ import annotations

from hermes_nb.runtime.ssh_tunnel import SSHConnection, connect

__all__ = ["SSHConnection", "connect"]
