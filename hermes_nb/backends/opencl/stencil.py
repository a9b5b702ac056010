"""``opencl:N`` running a fused stencil pipeline (``fused_stencil``): one generated kernel
(``codegen.stencil_c``) whose work-groups stage their tile and aprons in local memory, or,
where the program cannot be one kernel there, its stages one by one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.opencl.capabilities import Capabilities, KernelDevice
from hermes_nb.codegen import stencil_c
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.stencil import ConvStage


def fused_stencil(dev: KernelDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """A blur/Sobel/pointwise pipeline as ONE generated kernel (``codegen.stencil_c``):
    each work-group stages its tile and aprons in local memory, reads the image once
    and writes the result once."""
    stencil = spec.attrs["stencil"]
    if not dev.fp64 and "float64" in stencil.value_dtypes:
        raise TypeError(f"fused_stencil: device {dev.id} ({dev.name}) has no float64")
    out = dev.empty(spec.shape, spec.dtype)
    if out.size == 0:
        return out
    cfg = dev.stencil_config(stencil)
    if cfg is None:  # not expressible, or too big for local memory: the stages one by one
        return _stages(dev, spec, stencil, inputs[0])
    knl = dev.programs.kernel(stencil_c.opencl_stencil_source(stencil, cfg), "fused_stencil")
    gx, gy, nb = stencil_c.grid(spec.shape, cfg)
    h, w = spec.shape[-2], spec.shape[-1]
    knl(
        dev.queue, (gx * cfg.wx, gy * cfg.wy, nb), (cfg.wx, cfg.wy, 1),
        out.data, inputs[0].data, np.int64(h), np.int64(w), np.int64(nb),
        *stencil_c.kernel_arguments(stencil),  # point stages' scalars: not in the source
    )  # fmt: skip
    return out


def choose_config(caps: Capabilities, stencil: Any) -> Any:
    """The launch geometry for ``stencil`` on a device with ``caps``, or None if it cannot
    run as one kernel there (the device caches the choice: it tries a few tile sizes)."""
    if not caps.local_stencils:  # switched off by the self-test or after a crash
        return None
    flt = stencil_c.vector_dtype(stencil)
    cfg: Any = stencil_c.opencl_config(flt, caps.vector_width(flt), caps.is_cpu,
                                       caps.max_group_size)
    try:
        # shrink the tile until it and its aprons fit in local memory (GPUs: 32-64 KiB)
        while cfg is not None and stencil_c.local_bytes(stencil, cfg) > caps.local_mem_bytes:
            cfg = stencil_c.smaller(cfg)
        if cfg is not None:
            stencil_c.opencl_stencil_source(stencil, cfg)  # raises if not expressible
    except stencil_c.UnsupportedStencil:
        return None
    return cfg


def _stages(dev: KernelDevice, spec: OpSpec, stencil: Any, image: Any) -> Any:
    """Fallback: each stage as its own conv2d / fused_elementwise kernel."""
    values = [image]
    for stage, name in zip(stencil.stages, stencil.value_dtypes[1:]):
        dtype = np.dtype(name)
        if isinstance(stage, ConvStage):
            sub = OpSpec("conv2d", spec.shape, dtype, (spec.shape,), (dtype,),
                         {"weights": stage.weights, "border": stage.border,
                          "separable": stage.separable}, spec.device)
            values.append(dev.run_conv2d(sub, [values[stage.source]]))
        else:
            srcs = [values[i] for i in stage.sources]
            sub = OpSpec("fused_elementwise", spec.shape, dtype,
                         tuple(spec.shape for _ in srcs), tuple(x.dtype for x in srcs),
                         {"program": stage.program}, spec.device)
            values.append(dev.run_fused_elementwise(sub, srcs))
    return values[-1]
