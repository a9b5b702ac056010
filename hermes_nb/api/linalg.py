"""Matrix products."""

from __future__ import annotations

from typing import Any

from hermes_nb.api.elementwise import _as_tensor, astype
from hermes_nb.api.graph import make_node
from hermes_nb.api.manipulation import reshape
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer


def matmul(x1: Any, x2: Any) -> Tensor:
    """Matrix product with NumPy's rules: 1-D operands are promoted and the
    added axis removed; leading (batch) axes broadcast.

    >>> import hermes_nb as hm
    >>> (hm.ones((2, 3)) @ hm.ones((3, 4))).shape
    (2, 4)
    """
    a, b = _as_tensor(x1, "matmul"), _as_tensor(x2, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"matmul: operands must be at least 1-D, got shapes {infer.fmt(a.shape)} and "
            f"{infer.fmt(b.shape)}; use * for scalars"
        )
    work = dtypes.result_type(a.dtype, b.dtype)
    if dtypes.is_bool(work):
        raise TypeError("matmul: bool operands are not supported; cast them with astype first")
    if a.shape[-1] != b.shape[0 if b.ndim == 1 else -2]:
        infer.matmul_shape(  # raises with both original shapes in the message
            a.shape if a.ndim > 1 else (1, *a.shape), b.shape if b.ndim > 1 else (*b.shape, 1)
        )
    a2 = reshape(a, (1, a.shape[0])) if a.ndim == 1 else a
    b2 = reshape(b, (b.shape[0], 1)) if b.ndim == 1 else b
    shape = infer.matmul_shape(a2.shape, b2.shape)
    out = Tensor(make_node("matmul", [astype(a2, work).node, astype(b2, work).node], shape, work))
    if a.ndim == 1 or b.ndim == 1:
        squeezed = shape[:-2] + (() if a.ndim == 1 else shape[-2:-1]) + (
            () if b.ndim == 1 else shape[-1:])
        out = reshape(out, squeezed)
    return out
