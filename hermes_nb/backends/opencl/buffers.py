"""``opencl:N`` buffers and transfers: C-contiguous strides, strided copies between buffers,
and the movement ops (reshape, permute, broadcast_to, slice, concat) built on them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from hermes_nb.backends.opencl import hostmem
from hermes_nb.backends.opencl.capabilities import KernelDevice
from hermes_nb.codegen import opencl_templates as src
from hermes_nb.ir.node import OpSpec

__all__ = ["LaunchDevice", "broadcast_strides", "c_strides", "collapse", "copy_strided",
           "owned", "permuted", "round_up"]


class LaunchDevice(KernelDevice, Protocol):
    """The device surface the single-op kernels use, beyond the fused kernels' one."""

    @property
    def unused(self) -> Any: ...

    def launch(self, source: str, name: str, n: int, *args: Any) -> None: ...


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def c_strides(shape: Sequence[int]) -> list[int]:
    """C-contiguous strides in elements."""
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return out[::-1]


def collapse(shape: Sequence[int], *strides: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge dims that are contiguous in every operand (fewer div/mods)."""
    dims = [(s, [st[d] for st in strides]) for d, s in enumerate(shape) if s != 1]
    out_shape: list[int] = []
    out_st: list[list[int]] = []
    for size, sts in dims:
        if out_shape and all(o == i * size for o, i in zip(out_st[-1], sts)):
            out_shape[-1] *= size
            out_st[-1] = sts
        else:
            out_shape.append(size)
            out_st.append(sts)
    per_operand = [[st[k] for st in out_st] for k in range(len(strides))]
    return out_shape, per_operand


def broadcast_strides(in_shape: Sequence[int], out_shape: Sequence[int]) -> list[int]:
    """Strides (elements) reading a contiguous ``in_shape`` array broadcast to ``out_shape``."""
    pad = len(out_shape) - len(in_shape)
    st = c_strides(in_shape)
    return [0] * pad + [0 if s == 1 else t for s, t in zip(in_shape, st)]


def copy_strided(dev: LaunchDevice, dst: Any, dst_off: int, dst_st: Sequence[int], src_buf: Any,
                 src_off: int, src_st: Sequence[int], shape: Sequence[int]) -> None:
    """dst[dst_off + c·dst_st] = src[src_off + c·src_st] for every coordinate c of shape."""
    n = math.prod(shape)
    if n == 0:
        return
    cshape, (dst_st, src_st) = collapse(shape, dst_st, src_st)
    item = dst.dtype.itemsize
    if len(cshape) <= 1 and all(s == [1] or s == [] for s in (dst_st, src_st)):
        import pyopencl as cl

        cl.enqueue_copy(
            dev.queue, dst.data, src_buf.data, byte_count=n * item,
            dst_offset=dst_off * item, src_offset=src_off * item,
        )  # fmt: skip
        return
    meta = [len(cshape), dst_off, src_off, *cshape, *dst_st, *src_st]
    dev.launch(
        src.copy_source(item), "strided_copy", n,
        dst.data, src_buf.data, dev.meta(meta).data, np.int64(n),
    )  # fmt: skip


def permuted(dev: LaunchDevice, x: Any, in_shape: Sequence[int], axes: Sequence[int]) -> Any:
    """``x`` (of ``in_shape``) with its axes in the order ``axes``, as a new buffer."""
    shape = [in_shape[a] for a in axes]
    out = dev.empty(shape, x.dtype)
    st = c_strides(in_shape)
    dev.copy_strided(out, 0, c_strides(shape), x, 0, [st[a] for a in axes], shape)
    return out


def owned(dev: LaunchDevice, x: Any) -> Any:
    """``x``, or a copy in the device's own memory when ``x`` reads a caller's array in
    place: a result is a snapshot that a later write to that array must not change."""
    if not hostmem.borrowed(x):
        return x
    out = dev.empty(x.shape, x.dtype)
    st = c_strides(x.shape)
    dev.copy_strided(out, 0, st, x, 0, st, x.shape)
    return out


def op_to_device(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    return owned(dev, inputs[0])  # already uploaded to this device


def op_reshape(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    # Buffers are never written after they are made, so a reshaped view is safe.
    return owned(dev, inputs[0]).reshape(spec.shape)


def op_permute(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    return permuted(dev, inputs[0], spec.in_shapes[0], spec.attrs["axes"])


def op_broadcast_to(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    out = dev.empty(spec.shape, spec.dtype)
    bst = broadcast_strides(spec.in_shapes[0], spec.shape)
    dev.copy_strided(out, 0, c_strides(spec.shape), inputs[0], 0, bst, spec.shape)
    return out


def op_slice(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    out = dev.empty(spec.shape, spec.dtype)
    a = spec.attrs
    st = c_strides(spec.in_shapes[0])
    sizes = [int(s) for s in a["sizes"]]
    offset = sum(int(b) * s for b, s in zip(a["starts"], st))
    src_st = [int(k) * s for k, s in zip(a["steps"], st)]
    dev.copy_strided(out, 0, c_strides(sizes), inputs[0], offset, src_st, sizes)
    return out


def op_concat(dev: LaunchDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    out = dev.empty(spec.shape, spec.dtype)
    axis = spec.attrs["axis"]
    ost = c_strides(spec.shape)
    pos = 0
    for x, shape in zip(inputs, spec.in_shapes):
        dev.copy_strided(out, pos * ost[axis], ost, x, 0, c_strides(shape), shape)
        pos += shape[axis]
    return out
