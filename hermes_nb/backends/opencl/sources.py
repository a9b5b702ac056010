"""The OpenCL source each fused op builds on a device, chosen as its runners choose it
(vector width, tiles, passes): ``OpenCLDevice.kernel_source`` asks here, and so does
``explain()`` for an ``opencl:N`` id not on this machine, through :data:`OFFLINE`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_nb.backends.opencl import elementwise
from hermes_nb.backends.opencl import fused as opencl_fused
from hermes_nb.backends.opencl import stencil as opencl_stencil
from hermes_nb.backends.opencl.capabilities import Capabilities
from hermes_nb.codegen import stencil_c
from hermes_nb.ir.node import OpSpec

__all__ = ["OFFLINE", "OfflineDevice", "kernel_source"]


class SourceDevice(Protocol):
    """What choosing a source reads of a device (an ``OpenCLDevice`` or :class:`OfflineDevice`)."""

    fp64: bool
    compute_units: int

    @property
    def capabilities(self) -> Capabilities: ...

    def stencil_config(self, stencil: Any) -> Any: ...


def _elementwise(dev: SourceDevice, spec: OpSpec) -> str:
    return elementwise.variant(dev.capabilities, dev.fp64, spec)[0]


def _stencil(dev: SourceDevice, spec: OpSpec) -> str | None:
    cfg = dev.stencil_config(spec.attrs["stencil"])
    return None if cfg is None else stencil_c.opencl_stencil_source(spec.attrs["stencil"], cfg)


# fused op -> the source(s) its runner builds, passes joined by PASS_SEPARATOR
_SOURCES: Mapping[str, Callable[[Any, OpSpec], str | None]] = {
    "fused_elementwise": _elementwise,
    "fused_reduce": opencl_fused.reduce_source,
    "fused_matmul": opencl_fused.matmul_source,
    "fused_stencil": _stencil,
}


def kernel_source(dev: SourceDevice, spec: OpSpec) -> str | None:
    """The source ``spec`` builds on ``dev``; None for other ops and for empty outputs."""
    render = _SOURCES.get(spec.op)
    if render is None or math.prod(spec.shape) == 0:
        return None
    return render(dev, spec)


@dataclass
class OfflineDevice:
    """A model of an OpenCL CPU device (PoCL on AVX-512: 16 floats, 8 doubles per vector),
    for an ``opencl:N`` id not present in this process: its source is what such a device
    would build."""

    capabilities: Capabilities = field(default_factory=lambda: Capabilities(
        is_cpu=True, float32_width=16, float64_width=8, local_stencils=True,
        local_mem_bytes=4 << 20, max_group_size=4096))
    fp64: bool = True
    compute_units: int = 16

    def stencil_config(self, stencil: Any) -> Any:
        return opencl_stencil.choose_config(self.capabilities, stencil)


OFFLINE = OfflineDevice()
