"""Reductions over any axes, with ``keepdims``; NumPy's result dtypes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.api.elementwise import _as_tensor, astype, sqrt
from hermes_nb.api.graph import make_node
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes
from hermes_nb.ir.infer import fmt, normalize_axes, normalize_axis, reduce_shape
from hermes_nb.ir.reduce import REDUCES

Axis = int | Sequence[int] | None


def _reduce(op: str, x: Tensor, axes: tuple[int, ...], keepdims: bool, out: np.dtype) -> Tensor:
    if not axes:  # nothing to fold: a reduction over no axes is the identity
        return astype(x, out)
    shape = reduce_shape(x.shape, axes, keepdims)
    return Tensor(make_node(op, [x.node], shape, out, axes=axes, keepdims=bool(keepdims)))


def _axes(op: str, x: Tensor, axis: Axis) -> tuple[int, ...]:
    return normalize_axes(op, axis, x.ndim)


def _check_nonempty(op: str, x: Tensor, axes: tuple[int, ...]) -> None:
    empty = [a for a in axes if x.shape[a] == 0]
    if empty or (not axes and x.size == 0):
        raise ValueError(
            f"{op}: zero-size reduction over axis {empty[0] if empty else ()} of a tensor of "
            f"shape {fmt(x.shape)} has no identity; reduce over non-empty axes"
        )


def _accumulate(op: str, t: Tensor, dtype: object) -> np.dtype:
    """The dtype ``op`` sums or multiplies in: ``dtype`` if given, else the standard's
    default (bool and signed integers in int64, unsigned ones in uint64: the default
    integers of each sign; floats in their own)."""
    if dtype is None:
        return REDUCES[op].result_dtype(t.dtype)
    return dtypes.as_dtype(dtype, op=f"{op}: dtype")


def sum(x: Any, axis: Axis = None, keepdims: bool = False, *, dtype: object = None
        ) -> Tensor:
    """Sum over ``axis`` (all axes by default), in ``dtype``: by default bool and signed
    integers sum in int64 (the default integer dtype), unsigned integers in uint64, floats
    in their own dtype. ``x`` is cast to ``dtype`` before it is summed, as the array API
    standard says.

    >>> import hermes_nb as hm
    >>> hm.sum(hm.asarray([True, True, False])).dtype.name
    'int64'
    >>> hm.sum(hm.ones(2, dtype=hm.uint8)).dtype.name
    'uint64'
    >>> hm.sum(hm.asarray([1, 2, 3], dtype=hm.int32), dtype=hm.float32).numpy().item()
    6.0
    """
    t = _as_tensor(x, "sum")
    acc = _accumulate("sum", t, dtype)
    return _reduce("sum", astype(t, acc), _axes("sum", t, axis), keepdims, acc)


def prod(x: Any, axis: Axis = None, keepdims: bool = False, *, dtype: object = None
         ) -> Tensor:
    """Product over ``axis`` (all axes by default), in ``dtype`` as :func:`sum`.

    >>> import hermes_nb as hm
    >>> hm.prod(hm.asarray([1.5, 2.0, 4.0]), dtype=hm.float64).numpy().item()
    12.0
    """
    t = _as_tensor(x, "prod")
    acc = _accumulate("prod", t, dtype)
    return _reduce("prod", astype(t, acc), _axes("prod", t, axis), keepdims, acc)


def max(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Largest value over ``axis``; NaN propagates."""
    t = _as_tensor(x, "max")
    dtypes.refuse_complex("max", t.dtype)
    axes = _axes("max", t, axis)
    _check_nonempty("max", t, axes)
    return _reduce("max", t, axes, keepdims, t.dtype)


def min(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Smallest value over ``axis``; NaN propagates."""
    t = _as_tensor(x, "min")
    dtypes.refuse_complex("min", t.dtype)
    axes = _axes("min", t, axis)
    _check_nonempty("min", t, axes)
    return _reduce("min", t, axes, keepdims, t.dtype)


def _arg(op: str, x: Any, axis: int | None, keepdims: bool) -> Tensor:
    t = _as_tensor(x, op)
    dtypes.refuse_complex(op, t.dtype)
    if axis is None:
        _check_nonempty(op, t, tuple(range(t.ndim)))
        from hermes_nb.api.manipulation import reshape

        flat = _reduce(op, reshape(t, (-1,)), (0,), False, REDUCES[op].result_dtype(t.dtype))
        return reshape(flat, (1,) * t.ndim) if keepdims else flat
    if t.ndim == 0:
        raise ValueError(f"{op}: axis {axis} is out of range for a 0-d tensor")
    a = normalize_axis(op, axis, t.ndim)
    _check_nonempty(op, t, (a,))
    return _reduce(op, t, (a,), keepdims, REDUCES[op].result_dtype(t.dtype))


def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first maximum (of the flattened tensor when ``axis`` is None)."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first minimum (of the flattened tensor when ``axis`` is None)."""
    return _arg("argmin", x, axis, keepdims)


def _count(x: Tensor, axes: tuple[int, ...]) -> int:
    return math.prod(x.shape[a] for a in axes)


def mean(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean; integer and bool inputs give float64. Empty gives NaN."""
    t = _as_tensor(x, "mean")
    work = dtypes.float_result(t.dtype)
    axes = _axes("mean", t, axis)
    total = _reduce("sum", astype(t, work), axes, keepdims, work)
    count = _count(t, axes)
    return total / count if count else total * float("nan")


def var(x: Any, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """Variance, dividing by ``N - correction`` (NumPy's ``ddof``)."""
    return _variance("var", x, axis, correction, keepdims)


def _variance(op: str, x: Any, axis: Axis, correction: float, keepdims: bool) -> Tensor:
    t = _as_tensor(x, op)
    dtypes.refuse_complex(op, t.dtype, ordered=False)  # the standard: real floating only
    if not isinstance(correction, (int, float, np.integer, np.floating)) \
            or isinstance(correction, (bool, np.bool_)):
        raise TypeError(f"{op}: correction must be a non-negative number, got {correction!r}")
    if correction < 0:
        raise ValueError(f"{op}: correction must be a non-negative number, got {correction!r}")
    work = dtypes.float_result(t.dtype)
    axes = _axes(op, t, axis)
    xf = astype(t, work)
    centred = xf - mean(xf, axis=axes, keepdims=True)
    total = _reduce("sum", centred * centred, axes, keepdims, work)
    divisor = _count(t, axes) - correction
    if math.isnan(divisor):  # NumPy: a NaN ddof gives NaN
        return total * float("nan")
    if divisor > 0:
        return total / float(divisor)
    return total * float("nan") if _count(t, axes) == 0 else total / 0.0


def std(x: Any, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
    """Standard deviation, ``sqrt(var(...))``."""
    return sqrt(_variance("std", x, axis, correction, keepdims))
