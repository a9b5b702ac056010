"""What the scheduler knows about one kernel: a size-free signature and its size figures.

The signature names *what* runs (op, dtypes, fused program, attributes that are not
sizes) so every size of the same kernel shares one performance model; ``size_key``
names the sizes exactly, and ``nbytes``/``flops`` are the predictors of the size fit.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: attributes that carry sizes or positions, not behaviour: left out of the signature
_SIZE_ATTRS = frozenset({"in_shape", "out_shape", "shape", "starts", "stops", "steps", "keep"})


@dataclass(frozen=True)
class KernelInfo:
    """One kernel as the scheduler sees it.

    Parameters
    ----------
    signature
        Size-free name of the kernel (``"matmul:f64/2,2#1a2b3c4d"``); one performance model each.
    size_key
        Exact sizes (``"512x512,512x512"``); runs of the same signature and size key are pooled.
    nbytes
        Bytes the kernel reads and writes (inputs plus output).
    flops
        Arithmetic operations, approximately (0 when unknown).
    in_bytes
        Bytes of each input, in order (transfer costs are computed from these).
    out_bytes
        Bytes of the output.
    rows
        Leading dimension of the output: what co-execution may split.
    """

    signature: str
    size_key: str
    nbytes: int
    flops: float = 0.0
    in_bytes: tuple[int, ...] = ()
    out_bytes: int = 0
    rows: int = 1


@functools.lru_cache(maxsize=64)
def _dtype(d: Any) -> tuple[np.dtype, str, str]:
    dtype = np.dtype(d)
    return dtype, dtype.name, dtype.str


def _attr_text(value: Any) -> str:
    signature = getattr(value, "signature", None)
    if isinstance(signature, str):  # a compiler Program: its own stable text
        return signature
    if isinstance(value, np.ndarray):
        return f"arr{value.dtype.str}{value.shape}:{hashlib.sha1(value.tobytes()).hexdigest()[:8]}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={_attr_text(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(_attr_text(v) for v in value) + ")"
    return repr(value)


def _flops(
    op: str, shape: tuple[int, ...], in_shapes: Sequence[tuple[int, ...]], attrs: dict[str, Any]
) -> float:
    out = float(math.prod(shape))
    if op in ("matmul", "fused_matmul") and in_shapes and len(in_shapes[0]) >= 2:
        return 2.0 * out * in_shapes[0][-1]
    if op in ("conv", "fused_conv") and len(in_shapes) >= 2:
        conv_out = float(math.prod(attrs.get("conv_shape", shape)))  # before a joined pool
        return 2.0 * conv_out * math.prod(in_shapes[1][1:])
    if op in ("conv2d", "fused_stencil"):
        weights = attrs.get("weights")
        taps = float(np.size(weights)) if weights is not None else 9.0
        return 2.0 * out * taps
    if in_shapes:
        biggest = float(max(math.prod(s) for s in in_shapes))
        program = attrs.get("program")
        n_ops = len(getattr(program, "instrs", ())) or 1
        return max(out, biggest) * n_ops
    return out


def kernel_info(
    op: str,
    shape: tuple[int, ...],
    dtype: Any,
    in_shapes: Sequence[tuple[int, ...]] = (),
    in_dtypes: Sequence[Any] = (),
    attrs: dict[str, Any] | None = None,
) -> KernelInfo:
    """Describe a kernel from its op, output and input shapes/dtypes and attributes.

    Examples
    --------
    >>> k = kernel_info("matmul", (64, 32), "float32", [(64, 16), (16, 32)], ["float32"] * 2)
    >>> k.size_key, k.flops
    ('64x16,16x32->64x32', 65536.0)
    """
    attrs = attrs or {}
    dtype, name, code = _dtype(dtype)
    ins = [_dtype(d) for d in in_dtypes] or [(dtype, name, code)] * len(in_shapes)
    behaviour = ";".join(
        f"{k}={_attr_text(v)}" for k, v in sorted(attrs.items()) if k not in _SIZE_ATTRS and k != "handle"
    )
    ranks = ",".join(str(len(s)) for s in in_shapes)
    digest = hashlib.sha1(
        f"{op}|{code}|{','.join(d[2] for d in ins)}|{ranks}|{behaviour}".encode()
    ).hexdigest()[:10]
    signature = f"{op}:{name}/{ranks}#{digest}"
    size_key = ",".join("x".join(map(str, s)) for s in in_shapes) + "->" + "x".join(map(str, shape))
    in_bytes = tuple(math.prod(s) * d[0].itemsize for s, d in zip(in_shapes, ins))
    out_bytes = math.prod(shape) * dtype.itemsize
    return KernelInfo(
        signature=signature,
        size_key=size_key,
        nbytes=out_bytes + sum(in_bytes),
        flops=_flops(op, tuple(shape), list(in_shapes), attrs),
        in_bytes=in_bytes,
        out_bytes=out_bytes,
        rows=int(shape[0]) if shape else 1,
    )


def kernel_info_of(spec: Any) -> KernelInfo:
    """Describe an ``OpSpec`` or a graph ``Node`` (anything with op/shape/dtype and inputs)."""
    if hasattr(spec, "in_shapes"):  # OpSpec
        return kernel_info(spec.op, spec.shape, spec.dtype, spec.in_shapes, spec.in_dtypes, spec.attrs)
    inputs = spec.inputs
    return kernel_info(
        spec.op, spec.shape, spec.dtype, [i.shape for i in inputs], [i.dtype for i in inputs], spec.attrs
    )
