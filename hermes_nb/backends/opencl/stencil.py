"""``opencl:N`` running a fused stencil pipeline (``fused_stencil``): one generated kernel
(``codegen.stencil_c``) whose work-groups stage their tile and aprons in local memory, or,
where the program cannot be one kernel there, its stages one by one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hermes_nb.codegen import stencil_c
from hermes_nb.compiler.stencil_program import ConvStage
from hermes_nb.ir.node import OpSpec

if TYPE_CHECKING:
    from hermes_nb.backends.opencl.device import OpenCLDevice


def fused_stencil(dev: OpenCLDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """A blur/Sobel/pointwise pipeline as ONE generated kernel (``codegen.stencil_c``):
    each work-group stages its tile and aprons in local memory, reads the image once
    and writes the result once."""
    stencil = spec.attrs["stencil"]
    if not dev.fp64 and "float64" in stencil.value_dtypes:
        raise TypeError(f"fused_stencil: device {dev.id} ({dev.name}) has no float64")
    out = dev.empty(spec.shape, spec.dtype)
    if out.size == 0:
        return out
    cfg = stencil_config(dev, stencil)
    if cfg is None:  # not expressible, or too big for local memory: the stages one by one
        return _stages(dev, spec, stencil, inputs[0])
    knl = dev.programs.kernel(stencil_c.opencl_stencil_source(stencil, cfg), "fused_stencil")
    gx, gy, nb = stencil_c.grid(spec.shape, cfg)
    h, w = spec.shape[-2], spec.shape[-1]
    knl(
        dev.queue, (gx * cfg.wx, gy * cfg.wy, nb), (cfg.wx, cfg.wy, 1),
        out.data, inputs[0].data, np.int64(h), np.int64(w), np.int64(nb),
    )  # fmt: skip
    return out


def stencil_config(dev: OpenCLDevice, stencil: Any) -> Any:
    """The launch geometry for ``stencil`` on ``dev``, or None if it cannot run as one
    kernel here. Cached per program: the choice tries a few tile sizes."""
    cache = dev._stencil_configs
    if stencil in cache:
        return cache[stencil]
    if not dev.local_stencils:  # switched off by the self-test or after a crash
        cache[stencil] = None
        return None
    flt = stencil_c.vector_dtype(stencil)
    base = stencil_c.opencl_config(flt, dev._vector_width.get(flt or "", 0), dev._cpu,
                                   int(dev.cl_device.max_work_group_size))
    limit = int(dev.cl_device.local_mem_size)
    chosen = None
    try:
        # shrink the tile until it and its aprons fit in local memory (GPUs: 32-64 KiB)
        cfg: Any = base
        while cfg is not None and stencil_c.local_bytes(stencil, cfg) > limit:
            cfg = stencil_c.smaller(cfg)
        if cfg is not None:
            stencil_c.opencl_stencil_source(stencil, cfg)  # raises if not expressible
        chosen = cfg
    except stencil_c.UnsupportedStencil:
        chosen = None
    cache[stencil] = chosen
    return chosen


def _stages(dev: OpenCLDevice, spec: OpSpec, stencil: Any, image: Any) -> Any:
    """Fallback: each stage as its own conv2d / fused_elementwise kernel."""
    values = [image]
    for stage, name in zip(stencil.stages, stencil.value_dtypes[1:]):
        dtype = np.dtype(name)
        if isinstance(stage, ConvStage):
            sub = OpSpec("conv2d", spec.shape, dtype, (spec.shape,), (dtype,),
                         {"weights": stage.weights, "border": stage.border,
                          "separable": stage.separable}, spec.device)
            values.append(dev._op_conv2d(sub, [values[stage.source]]))
        else:
            srcs = [values[i] for i in stage.sources]
            sub = OpSpec("fused_elementwise", spec.shape, dtype,
                         tuple(spec.shape for _ in srcs), tuple(x.dtype for x in srcs),
                         {"program": stage.program}, spec.device)
            values.append(dev._op_fused_elementwise(sub, srcs))
    return values[-1]
