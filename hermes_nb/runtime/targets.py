"""What the compiler may fuse for, from the devices this process has and, with a
``dask.distributed`` Client active, those of the cluster's workers."""

from __future__ import annotations

from types import MappingProxyType

from hermes_nb.backends import devices
from hermes_nb.compiler.target import Target
from hermes_nb.runtime.cluster_place import cluster_view


def compile_target() -> Target:
    """Each device's fused kernel kinds (plain data: the compiler never asks a device); on
    a cluster also every worker's devices, by id and by worker address, known by kind."""
    table = {d.id: d.fused_ops for d in devices()}
    cluster = cluster_view()
    if cluster is not None:
        table = {**cluster.fused_ops(), **table}
    return Target(MappingProxyType(table), default_kinds=frozenset())
