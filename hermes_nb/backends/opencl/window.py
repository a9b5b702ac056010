"""``opencl:N``'s ``conv`` and ``pool``: ``kernels/opencl/window.cl``, one work-item per
output element, over one to three spatial axes (fewer run as three with unit ones)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.opencl.buffers import LaunchDevice, round_up
from hermes_nb.codegen import opencl_templates as src
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.windows import Window, lowest

__all__ = ["op_window"]

MAX_SPATIAL = 3


def op_window(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """A ``conv`` or ``pool`` spec on device buffers."""
    out = dev.empty(spec.shape, spec.dtype)
    if out.size == 0:
        return out
    x_shape = spec.in_shapes[0]
    rank = len(x_shape) - 2
    if rank > MAX_SPATIAL:
        raise NotImplementedError(f"{spec.op} over {rank} spatial axes on {dev.id}: at most "
                                  f"{MAX_SPATIAL}")
    conv = spec.op == "conv"
    kernel = spec.in_shapes[1][2:] if conv else spec.attrs["kernel"]
    g = Window.of(spec.attrs, kernel)
    lead = MAX_SPATIAL - rank
    sizes = (1,) * lead + tuple(x_shape[2:])
    out_sizes = (1,) * lead + tuple(spec.shape[2:])
    geometry = [np.int32(v) for v in (
        *((1,) * lead + g.kernel), *((1,) * lead + g.strides),
        *((1,) * lead + g.dilations), *((0,) * lead + g.pads[:rank]))]
    longs = [np.int64(v) for v in (*sizes, *out_sizes)]
    channels = spec.shape[1]
    work = (round_up(out_sizes[2], 16), round_up(out_sizes[1], 4),
            spec.shape[0] * channels * out_sizes[0])
    if conv:
        knl = dev.programs.kernel(_source(dev, spec.dtype, "conv"), "conv")
        c, cg = x_shape[1], spec.in_shapes[1][1]
        knl(dev.queue, work, (16, 4, 1), out.data, inputs[0].data, inputs[1].data,
            np.int64(c), np.int64(channels), np.int64(cg), np.int64(spec.attrs["groups"]),
            *longs, *geometry)
    else:
        knl = dev.programs.kernel(_source(dev, spec.dtype, spec.attrs["mode"]), "pool")
        knl(dev.queue, work, (16, 4, 1), out.data, inputs[0].data, np.int64(x_shape[1]),
            *longs, *geometry)
    return out


def _source(dev: LaunchDevice, dtype: np.dtype, mode: str) -> str:
    if mode == "max":
        low = lowest(dtype)
        ident = "-INFINITY" if np.dtype(dtype).kind == "f" else src.limit_literal(low, dtype)
    else:
        ident = "0"
    return src.typed_source("window", dtype, dev.fp64, is_max=int(mode == "max"), ident=ident)
