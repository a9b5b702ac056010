"""What an ``opencl:N`` device offers its kernel runners (``fused``, ``stencil``): its
capabilities as plain data, and the few device methods they call.

The runners take any :class:`KernelDevice`, so they never import the device module
(which imports them to dispatch ops).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol


@dataclass(frozen=True)
class Capabilities:
    """How fused kernels may be shaped on one device; replaced, never changed, when a
    crash switches a feature off."""

    #: CPUs want each work-item on a contiguous run; GPUs want neighbours on neighbours
    is_cpu: bool
    #: vector width of fused float kernels (4, 8 or 16; 0: scalar code)
    float32_width: int
    float64_width: int
    #: stencil tiles staged in local memory
    local_stencils: bool
    local_mem_bytes: int
    max_group_size: int

    def vector_width(self, dtype: str | None) -> int:
        """The vector width for ``dtype`` (a name such as ``"float32"``); 0 for others."""
        return {"float32": self.float32_width, "float64": self.float64_width}.get(dtype or "", 0)

    def safer(self) -> tuple[Capabilities, str] | None:
        """These capabilities with the next riskiest feature off, and what changed; None
        when nothing is left to switch off (narrower vectors first, then local tiles)."""
        if self.float32_width or self.float64_width:
            narrower = replace(self, float32_width=_halved(self.float32_width),
                               float64_width=_halved(self.float64_width))
            return narrower, (f"vector width float32 ×{narrower.float32_width or 'none'}, "
                              f"float64 ×{narrower.float64_width or 'none'}")
        if self.local_stencils:
            return replace(self, local_stencils=False), "no local-memory stencil tiles"
        return None


def _halved(width: int) -> int:
    return width // 2 if width > 4 else 0


class KernelDevice(Protocol):
    """The public surface of ``OpenCLDevice`` the kernel runners use."""

    name: str
    fp64: bool
    compute_units: int
    queue: Any
    programs: Any

    @property
    def id(self) -> str: ...

    @property
    def capabilities(self) -> Capabilities: ...

    def empty(self, shape: Sequence[int], dtype: Any) -> Any: ...

    def from_host(self, array: Any) -> Any: ...

    def to_host(self, buffer: Any) -> Any: ...

    def meta(self, values: Sequence[int]) -> Any: ...

    def group_size(self, knl: Any) -> int: ...

    def copy_strided(self, dst: Any, dst_off: int, dst_st: Sequence[int], src_buf: Any,
                     src_off: int, src_st: Sequence[int], shape: Sequence[int]) -> None: ...

    def stencil_config(self, stencil: Any) -> Any: ...

    def run_conv2d(self, spec: Any, inputs: Sequence[Any]) -> Any: ...

    def run_fused_elementwise(self, spec: Any, inputs: Sequence[Any]) -> Any: ...
