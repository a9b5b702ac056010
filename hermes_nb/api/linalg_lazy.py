"""The lazy half of the array API's ``linalg`` extension: compositions of Hermes ops
(slices, elementwise, reductions, ``matmul``) that stay lazy and fuse. The dense
factorizations (and ``svdvals``/``inv``, which ``matrix_norm``/``matrix_power`` use) are in
:mod:`hermes_nb.api.linalg_lapack`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.api.construct import eye
from hermes_nb.api.contractions import check_trailing_axis, numeric_result_type
from hermes_nb.api.elementwise import _as_tensor, astype, not_equal, sqrt
from hermes_nb.api.elementwise import abs as _abs
from hermes_nb.api.elementwise import pow as _pow
from hermes_nb.api.linalg import matmul
from hermes_nb.api.linalg_lapack import floating, inv, matrices, svdvals
from hermes_nb.api.manipulation import (
    broadcast_arrays,
    broadcast_to,
    expand_dims,
    getitem,
    moveaxis,
    reshape,
    stack,
)
from hermes_nb.api.reductions import max as _max
from hermes_nb.api.reductions import min as _min
from hermes_nb.api.reductions import sum as _sum
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer

Axis = int | Sequence[int] | None


def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of each matrix in ``x`` (``..., M, N``): a strided slice
    of the flattened matrices, lazy (no gather).

    >>> import hermes_nb as hm
    >>> hm.linalg.diagonal(hm.reshape(hm.arange(9), (3, 3))).numpy().tolist()
    [0, 4, 8]
    """
    t = _as_tensor(x, "diagonal")
    if t.ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dimensions (..., M, N), got shape "
                         f"{infer.fmt(t.shape)}")
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TypeError(f"diagonal: offset must be an int, got {offset!r}")
    m, n = t.shape[-2:]
    count = max(0, min(m + min(offset, 0), n - max(offset, 0)))
    flat = reshape(t, (*t.shape[:-2], m * n))
    if count == 0 or m * n == 0:
        return getitem(flat, (Ellipsis, slice(0, 0)))
    start = offset if offset >= 0 else -offset * n
    return getitem(flat, (Ellipsis, slice(start, start + (count - 1) * (n + 1) + 1, n + 1)))


def trace(x: Any, /, *, offset: int = 0, dtype: object = None) -> Tensor:
    """The sum along the ``offset``-th diagonal of each matrix in ``x``, in ``dtype`` if given
    (otherwise ``sum``'s dtype rule).

    >>> import hermes_nb as hm
    >>> float(hm.linalg.trace(hm.eye(3)))
    3.0
    """
    d = diagonal(x, offset=offset)
    if dtype is not None:
        d = astype(d, dtypes.as_dtype(dtype, op="trace"))
    return _sum(d, axis=-1)


def outer(x1: Any, x2: Any, /) -> Tensor:
    """The outer product of two 1-D tensors, shape ``(M, N)``: one fused multiply.

    >>> import hermes_nb as hm
    >>> hm.linalg.outer(hm.asarray([1, 2]), hm.asarray([3, 4, 5])).shape
    (2, 3)
    """
    a, b = _as_tensor(x1, "outer"), _as_tensor(x2, "outer")
    for name, t in (("x1", a), ("x2", b)):
        if t.ndim != 1:
            raise ValueError(f"outer: {name} must be 1-D, got shape {infer.fmt(t.shape)}")
    numeric_result_type("outer", a, b)
    return reshape(a, (a.shape[0], 1)) * reshape(b, (1, b.shape[0]))


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-element vectors along ``axis``; the other axes broadcast.

    >>> import hermes_nb as hm
    >>> hm.linalg.cross(hm.asarray([1.0, 0, 0]), hm.asarray([0.0, 1, 0])).numpy().tolist()
    [0.0, 0.0, 1.0]
    """
    a, b = _as_tensor(x1, "cross"), _as_tensor(x2, "cross")
    numeric_result_type("cross", a, b)
    check_trailing_axis("cross", axis, a, b)
    for name, t in (("x1", a), ("x2", b)):
        if t.ndim < -axis or t.shape[axis] != 3:
            raise ValueError(f"cross: {name} of shape {infer.fmt(t.shape)} must have size 3 "
                             f"along axis {axis}")
    infer.broadcast_shapes("cross", a.shape, b.shape)
    a, b = broadcast_arrays(a, b)
    a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    u = [getitem(a, (Ellipsis, i)) for i in range(3)]
    v = [getitem(b, (Ellipsis, i)) for i in range(3)]
    parts = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    return moveaxis(stack(parts, axis=-1), -1, axis)


def _norm_axes(op: str, x: Tensor, axis: Axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in items:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}")
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"{op}: axis {a} is out of range for shape {infer.fmt(x.shape)} "
                             f"(allowed: {-x.ndim} to {x.ndim - 1})")
        out.append(int(a) % x.ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axis {axis!r} names an axis twice")
    return tuple(out)


def _keep(t: Tensor, axes: tuple[int, ...], ndim: int, keepdims: bool) -> Tensor:
    if not keepdims:
        return t
    shape = list(t.shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return reshape(t, tuple(shape)) if len(shape) == ndim else t


def vector_norm(x: Any, /, *, axis: Axis = None, keepdims: bool = False,
                ord: int | float = 2) -> Tensor:
    """The vector ``ord``-norm over ``axis`` (all axes when ``None``): 2 (Euclidean), 1,
    ``inf`` (largest magnitude), ``-inf`` (smallest), 0 (count of non-zeros) or any other
    p (``sum(|x|**p)**(1/p)``). Lazy: one fused reduction.

    >>> import hermes_nb as hm
    >>> float(hm.linalg.vector_norm(hm.asarray([3.0, 4.0])))
    5.0
    """
    t = floating("vector_norm", x)
    if dtypes.is_complex(t.dtype):  # the norms of |x|, in the components' dtype
        t = _abs(t)
    if isinstance(ord, bool) or not isinstance(ord, (int, float)) or math.isnan(ord):
        raise ValueError(f"vector_norm: ord must be a number (2, 1, inf, -inf, 0 or another "
                         f"p), got {ord!r}")
    axes = _norm_axes("vector_norm", t, axis)
    if ord == math.inf:
        out = _max(_abs(t), axis=axes)
    elif ord == -math.inf:
        out = _min(_abs(t), axis=axes)
    elif ord == 0:
        out = _sum(astype(not_equal(t, 0), t.dtype), axis=axes)
    elif ord == 1:
        out = _sum(_abs(t), axis=axes)
    elif ord == 2:
        out = sqrt(_sum(t * t, axis=axes))
    else:
        out = _pow(_sum(_pow(_abs(t), float(ord)), axis=axes), 1.0 / ord)
    return _keep(astype(out, t.dtype), axes, t.ndim, keepdims)


def _matrix_axes_norm(t: Tensor, ord: Any) -> Tensor:
    """``ord`` 1, -1, inf, -inf of each matrix: the max/min absolute column/row sum."""
    along, pick = {1: (-2, _max), -1: (-2, _min), math.inf: (-1, _max),
                   -math.inf: (-1, _min)}[ord]
    return pick(_sum(_abs(t), axis=along), axis=-1)


MATRIX_ORDS = "'fro', 'nuc', 1, -1, 2, -2, inf, -inf"


def matrix_norm(x: Any, /, *, keepdims: bool = False,
                ord: int | float | str | None = "fro") -> Tensor:
    """The matrix ``ord``-norm of each matrix in ``x`` (``..., M, N``): ``'fro'`` (lazy,
    one fused reduction), 1/-1/inf/-inf (lazy: absolute column/row sums), or ``'nuc'``,
    2, -2 (from the singular values, computed eagerly with NumPy's LAPACK; the result is
    a tensor on the input's device).

    >>> import hermes_nb as hm
    >>> float(hm.linalg.matrix_norm(hm.ones((2, 2))))
    2.0
    """
    t = given = matrices("matrix_norm", x)
    if dtypes.is_complex(t.dtype):  # the entrywise norms of |x| (svd norms use x itself)
        t = _abs(t)
    ok = (isinstance(ord, str) and ord in ("fro", "nuc")) or (
        isinstance(ord, (int, float)) and not isinstance(ord, bool)
        and ord in (1, -1, 2, -2, math.inf, -math.inf))
    if ord is None:
        ord = "fro"
    elif not ok:
        raise ValueError(f"matrix_norm: ord {ord!r} is not a matrix norm; allowed: {MATRIX_ORDS}")
    if ord == "fro":
        out = sqrt(_sum(t * t, axis=(-2, -1)))
    elif ord in ("nuc", 2, -2):
        s = svdvals(given)
        out = _sum(s, axis=-1) if ord == "nuc" else (_max if ord == 2 else _min)(s, axis=-1)
    else:
        out = _matrix_axes_norm(t, ord)
    out = astype(out, t.dtype)
    return expand_dims(expand_dims(out, axis=-1), axis=-1) if keepdims else out


def matrix_power(x: Any, n: int, /) -> Tensor:
    """``x`` (a stack of square matrices) raised to the integer power ``n``: repeated
    squaring of lazy matmuls; ``n == 0`` is the identity, and a negative ``n`` inverts
    ``x`` first (computed eagerly with NumPy's LAPACK; the result is a tensor on the
    input's device).

    >>> import hermes_nb as hm
    >>> hm.linalg.matrix_power(2 * hm.eye(2), 3).numpy().tolist()
    [[8.0, 0.0], [0.0, 8.0]]
    """
    t = _as_tensor(x, "matrix_power")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: n must be an int, got {n!r}")
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError(f"matrix_power: x must be a (stack of) square matrices (..., M, M), "
                         f"got shape {infer.fmt(t.shape)}")
    if dtypes.is_bool(t.dtype):
        raise TypeError("matrix_power: bool matrices are not supported; cast them first")
    if n == 0:
        return broadcast_to(eye(t.shape[-1], dtype=t.dtype, device=t.device), t.shape)
    if n < 0:
        t, n = inv(t), -n
    result, base = None, t
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    assert result is not None
    return result
