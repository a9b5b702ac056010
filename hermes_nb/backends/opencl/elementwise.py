"""``opencl:N`` elementwise kernels: one generated kernel per fused program (single ops are
one-instruction programs), in the variant this device's inputs and vector width call for."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from hermes_nb.backends.opencl.buffers import LaunchDevice, broadcast_strides, collapse, round_up
from hermes_nb.backends.opencl.capabilities import Capabilities
from hermes_nb.codegen import c_kernels, c_source
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.program import single_op

__all__ = ["op_single", "run_fused", "variant"]


def _broadcast_layout(spec: OpSpec, n: int) -> tuple[str, list[int]]:
    """Per input ``s`` (one element), ``f`` (full size) or ``g`` (strided), and the meta
    (collapsed output shape, then each strided input's strides) the ``g`` ones need."""
    sizes = [math.prod(s) for s in spec.in_shapes]
    modes = "".join("s" if size == 1 else "f" if size == n else "g" for size in sizes)
    strided = [k for k, m in enumerate(modes) if m == "g"]
    meta: list[int] = [0]
    if strided:
        bst = [broadcast_strides(spec.in_shapes[k], spec.shape) for k in strided]
        shape, sts = collapse(spec.shape, *bst)
        meta = [len(shape), *shape, *(s for st in sts for s in st)]
    return modes, meta


def variant(caps: Capabilities, fp64: bool, spec: OpSpec) -> tuple[str, str, list[int], int]:
    """Source, input modes, strides meta and vector width of a fused elementwise kernel on
    a device with ``caps`` (what ``run_fused`` launches and ``explain()`` shows)."""
    program = spec.attrs["program"]
    n = math.prod(spec.shape)
    modes, meta = _broadcast_layout(spec, n)
    # PoCL vectorises exp & co. only on vector types: contiguous float programs run
    # `width` elements per work-item.
    flt = c_source.vector_dtype(program)
    width = caps.vector_width(flt) if "g" not in modes else 0
    if n < width:
        width = 0
    return c_kernels.opencl_source(program, modes, width, fp64), modes, meta, width


def run_fused(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """One generated kernel for a ``fused_elementwise`` spec (the vector form where it
    applies)."""
    program = spec.attrs["program"]
    if not dev.fp64 and any(i.dtype in ("float64", "complex128") for i in program.instrs):
        raise TypeError(f"fused_elementwise: device {dev.id} ({dev.name}) has no float64 "
                        "(needed by float64 and complex128)")
    out = dev.empty(spec.shape, spec.dtype)
    n = out.size
    if n == 0:
        return out
    source, modes, meta, width = variant(dev.capabilities, dev.fp64, spec)
    args = [out.data, *(x.data for x in inputs),
            (dev.meta(meta) if "g" in modes else dev.unused).data]
    params = c_kernels.opencl_arguments(program)  # scalars: arguments, not in the source
    done = 0
    if width > 0:
        n_vec = n // width
        dev.launch(source, "fused_vec", n_vec, *args, np.int64(n_vec), *params)
        done = n_vec * width
    if done < n:  # everything, or the tail after fused_vec
        knl = dev.programs.kernel(source, "fused")
        wg = dev.group_size(knl)
        knl(dev.queue, (round_up(n - done, wg),), (wg,), *args, np.int64(n), *params,
            global_offset=(done,))
    return out


def op_single(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """A lone elementwise op, as a one-instruction program: one code generator for every
    elementwise kernel, with the vector form for contiguous float inputs."""
    program = single_op(spec.op, tuple(np.dtype(d).name for d in spec.in_dtypes),
                        np.dtype(spec.dtype).name)
    fused = replace(spec, op="fused_elementwise", attrs={"program": program})
    return dev.run_fused_elementwise(fused, inputs)
