"""``opencl:N`` kernels of single ops from the templates of ``codegen.opencl_templates``:
fill and arange, reductions, the tiled matmul and the 2-D convolution."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.opencl.buffers import LaunchDevice, permuted, round_up
from hermes_nb.codegen import opencl_templates as src
from hermes_nb.ir.node import OpSpec

__all__ = ["op_arange", "op_full", "op_matmul", "op_reduce", "run_conv2d"]

_SERIAL_ROWS = 64  # rows up to this long are reduced by one work-item each
_BORDERS = {"reflect101": 0, "reflect": 1, "replicate": 2, "constant": 3}
_I64 = np.dtype(np.int64)


# ---- sources ----------------------------------------------------------------------------

def op_full(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    out = dev.empty(spec.shape, spec.dtype)
    if out.size:
        value = np.asarray(spec.attrs["fill_value"]).astype(spec.dtype)
        if spec.dtype.kind == "b":
            value = value.astype(np.uint8)
        source = src.fill_source(spec.dtype, spec.dtype, dev.fp64)
        dev.launch(source, "fill", out.size, out.data, value[()], np.int64(out.size))
    return out


def op_arange(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    out = dev.empty(spec.shape, spec.dtype)
    if out.size:
        start, step = spec.attrs["start"], spec.attrs["step"]
        integral = all(isinstance(v, (int, np.integer)) for v in (start, step))
        if spec.dtype.kind in "ibu" and integral:
            calc = _I64
        else:  # like NumPy: compute in double, then convert
            calc = np.dtype(np.float64 if dev.fp64 else np.float32)
        source = src.fill_source(spec.dtype, calc, dev.fp64)
        dev.launch(
            source, "arange", out.size, out.data,
            calc.type(start), calc.type(step), np.int64(out.size),
        )  # fmt: skip
    return out


def _full(dev: LaunchDevice, shape: Sequence[int], dtype: np.dtype, value: Any) -> Any:
    spec = OpSpec("full", tuple(shape), np.dtype(dtype), (), (), {"fill_value": value}, "")
    return op_full(dev, spec, ())


# ---- reductions -------------------------------------------------------------------------

def op_reduce(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    op, shape, dtype = spec.op, spec.in_shapes[0], spec.in_dtypes[0]
    x = inputs[0]
    axes = tuple(spec.attrs["axes"])
    kept = [d for d in range(len(shape)) if d not in axes]
    m = math.prod(shape[d] for d in kept)
    k = math.prod(shape[d] for d in axes)
    if m == 0:
        return dev.empty(spec.shape, spec.dtype)
    if k == 0:  # only sum/prod get here; NumPy gives the identity
        return _full(dev, spec.shape, spec.dtype, 1 if op == "prod" else 0)
    arg = op.startswith("arg")
    source = src.reduce_source(op, dtype, dev.fp64)
    # View the input as (a, k, b); reduce in place when the reduced axes are adjacent and
    # there are enough (a, b) columns to keep the device busy, else move them last.
    adjacent = axes == tuple(range(axes[0], axes[-1] + 1))
    a, b = math.prod(shape[: axes[0]]), math.prod(shape[axes[-1] + 1 :])
    if not adjacent or (b > 1 and a * b < max(256, 64 * dev.compute_units)):
        x = permuted(dev, x, shape, kept + list(axes))
        a, b = m, 1
    if b > 1:
        vals, idx = _reduce_cols(dev, source, x, None, a, k, b, dtype, arg)
    else:
        vals, idx = _reduce_rows(dev, source, x, None, m, k, dtype, arg)
    return (idx if arg else vals).reshape(spec.shape)


def _reduce_cols(dev: LaunchDevice, source: str, x: Any, x_idx: Any, a: int, k: int, b: int,
                 dtype: np.dtype, arg: bool) -> tuple[Any, Any]:
    """Reduce a contiguous (a, k, b) array over k, one work-item per (a, b)."""
    vals = dev.empty((a * b,), dtype)
    idx = dev.empty((a * b,), _I64) if arg else dev.unused
    in_idx = x_idx.data if x_idx is not None else dev.unused.data
    dev.launch(
        source, "reduce_cols", a * b, vals.data, idx.data, x.data, in_idx,
        np.int32(x_idx is not None), np.int64(a), np.int64(k), np.int64(b),
        np.int32(dev.capabilities.is_cpu and b > 1),
    )  # fmt: skip
    return vals, idx


def _reduce_rows(dev: LaunchDevice, source: str, x: Any, x_idx: Any, m: int, k: int,
                 dtype: np.dtype, arg: bool) -> tuple[Any, Any]:
    """Reduce a contiguous (m, k) array (with per-element indices for a second arg pass)."""
    import pyopencl as cl

    if k <= _SERIAL_ROWS:
        return _reduce_cols(dev, source, x, x_idx, m, k, 1, dtype, arg)
    knl = dev.programs.kernel(source, "reduce_group")
    wg = min(dev.group_size(knl), 1 << (k - 1).bit_length())
    # Enough groups to fill the device: long rows are split into `parts` chunks.
    target = 16 * dev.compute_units
    parts = 1
    if m < target:
        parts = max(1, min(-(-target // m), k // (wg * 16)))
    chunk = -(-k // parts)
    parts = -(-k // chunk)
    vals = dev.empty((m * parts,), dtype)
    idx = dev.empty((m * parts,), _I64) if arg else dev.unused
    in_idx = x_idx.data if x_idx is not None else dev.unused.data
    knl(
        dev.queue, (m * parts * wg,), (wg,),
        vals.data, idx.data, x.data, in_idx, np.int32(x_idx is not None),
        np.int64(k), np.int64(parts), np.int64(chunk), np.int32(dev.capabilities.is_cpu),
        cl.LocalMemory(wg * dtype.itemsize), cl.LocalMemory(wg * 8),
    )  # fmt: skip
    if parts == 1:
        return vals, idx
    return _reduce_rows(dev, source, vals, idx if arg else None, m, parts, dtype, arg)


# ---- matmul and conv2d ------------------------------------------------------------------

def op_matmul(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    (a_shape, b_shape), dtype = spec.in_shapes, spec.dtype
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    batch = spec.shape[:-2]
    nb = math.prod(batch)
    if nb * m * n == 0:
        return dev.empty(spec.shape, dtype)
    if k == 0:
        return _full(dev, spec.shape, dtype, 0)

    # Offset of each batch's matrix; broadcast batch dims repeat offsets, not data.
    def offsets(shape: Sequence[int], size: int) -> Any:
        base = np.arange(math.prod(shape[:-2]), dtype=_I64).reshape(shape[:-2]) * size
        return dev.from_host(np.broadcast_to(base, batch).ravel())

    aoff, boff = offsets(a_shape, m * k), offsets(b_shape, k * n)
    out = dev.empty(spec.shape, dtype)
    knl = dev.programs.kernel(src.typed_source("matmul", dtype, dev.fp64), "matmul")
    knl(
        dev.queue, (round_up(n, 16), round_up(m, 16), nb), (16, 16, 1),
        out.data, inputs[0].data, inputs[1].data, aoff.data, boff.data,
        np.int64(m), np.int64(n), np.int64(k),
    )  # fmt: skip
    return out


def run_conv2d(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """A 2-D convolution over the last two axes (two 1-D passes when separable)."""
    dtype, shape = spec.dtype, spec.shape
    out = dev.empty(shape, dtype)
    if out.size == 0:
        return out
    h, w = shape[-2], shape[-1]
    nb = math.prod(shape[:-2])
    mode = np.int32(_BORDERS[spec.attrs["border"]])
    knl = dev.programs.kernel(src.typed_source("conv2d", dtype, dev.fp64), "conv2d")

    def run(dst: Any, x: Any, weights: np.ndarray) -> None:
        wbuf = dev.from_host(np.asarray(weights, dtype=dtype))
        kh, kw = weights.shape
        knl(
            dev.queue, (round_up(w, 16), round_up(h, 4), nb), (16, 4, 1),
            dst.data, x.data, wbuf.data, np.int64(h), np.int64(w),
            np.int32(kh), np.int32(kw), mode,
        )  # fmt: skip

    sep = spec.attrs.get("separable")
    if sep is not None:  # two 1-D passes: rows, then columns
        col, row = (np.asarray(v, dtype=np.float64) for v in sep)
        tmp = dev.empty(shape, dtype)
        run(tmp, inputs[0], row.reshape(1, -1))
        run(out, tmp, col.reshape(-1, 1))
    else:
        run(out, inputs[0], np.asarray(spec.attrs["weights"], dtype=np.float64))
    return out
