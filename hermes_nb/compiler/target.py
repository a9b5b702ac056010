"""What the compiler may fuse for, as plain data: which fused kernels each device runs.

The runtime builds a :class:`Target` from the devices it has (``runtime.compile_target``);
the passes read it and never look at a live device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

FUSED_KINDS = frozenset({
    "fused_elementwise", "fused_reduce", "fused_matmul", "fused_stencil", "fused_conv",
    "fused_softmax"})
DEFAULT_DEVICE = "cpu:0"  # where an unplaced node runs until the scheduler places it


@dataclass(frozen=True)
class Target:
    """Fused kernel kinds per device id; devices not listed get ``default_kinds``."""

    fused_ops: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    default_kinds: frozenset[str] = FUSED_KINDS
    default_device: str = DEFAULT_DEVICE

    def fuses(self, device: str | None, fused_op: str) -> bool:
        """Whether the device a node runs on (unplaced: the default one) runs ``fused_op``."""
        kinds = self.fused_ops.get(device or self.default_device, self.default_kinds)
        return fused_op in kinds


#: every fused kind on every device (what all of Hermes's own devices run)
ANY_DEVICE = Target()
