"""What the compiler may fuse for, from the devices this process has."""

from __future__ import annotations

from types import MappingProxyType

from hermes_nb.backends import devices
from hermes_nb.compiler.target import Target


def compile_target() -> Target:
    """Each device's fused kernel kinds (plain data: the compiler never asks a device)."""
    return Target(MappingProxyType({d.id: d.fused_ops for d in devices()}),
                  default_kinds=frozenset())
