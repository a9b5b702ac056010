"""The array API's ``all``, ``any``, ``count_nonzero``, ``diff``, ``cumulative_sum``,
``cumulative_prod`` and ``searchsorted``, built from the reductions, slicing, ``concat``
and elementwise ops (no kernels of their own): ``all``, ``any``, ``count_nonzero`` and
``searchsorted`` are one fused reduction each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.api.creation import full
from hermes_nb.api.elementwise import _as_tensor, astype, equal, greater, isnan
from hermes_nb.api.manipulation import broadcast_to, concat, getitem, reshape
from hermes_nb.api.reductions import sum as _sum
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer
from hermes_nb.ir.reduce import REDUCES

Axis = int | Sequence[int] | None


def _count_true(op: str, x: Any, axis: Axis, keepdims: bool, *, negate: bool = False
                ) -> Tensor:
    t = _as_tensor(x, op)
    infer.normalize_axes(op, axis, t.ndim)  # checks axis, naming op
    truth = astype(t, dtypes.bool_)
    if negate:
        truth = equal(truth, False)
    return _sum(truth, axis=axis, keepdims=keepdims)


def count_nonzero(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """How many elements of ``x`` are nonzero (True for bool), over ``axis``; int64.

    >>> import hermes_nb as hm
    >>> int(hm.count_nonzero(hm.asarray([0, 3, 0, 1])))
    2
    """
    return _count_true("count_nonzero", x, axis, keepdims)


def any(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Whether any element over ``axis`` is nonzero (False over no elements).

    >>> import hermes_nb as hm
    >>> bool(hm.any(hm.asarray([0, 0, 2])))
    True
    """
    return greater(_count_true("any", x, axis, keepdims), 0)


def all(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Whether every element over ``axis`` is nonzero (True over no elements).

    >>> import hermes_nb as hm
    >>> bool(hm.all(hm.asarray([1, 0, 2])))
    False
    """
    return equal(_count_true("all", x, axis, keepdims, negate=True), 0)


def _along(axis: int, key: slice) -> tuple[slice, ...]:
    return (*(slice(None),) * axis, key)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None,
         append: Any = None) -> Tensor:
    """The ``n``-th forward difference ``x[i + 1] - x[i]`` along ``axis``, after joining
    ``prepend`` and ``append`` to ``x`` along it. For bool tensors the difference is
    ``x[i + 1] != x[i]``, as in NumPy (the standard asks for numeric tensors).

    >>> import hermes_nb as hm
    >>> hm.diff(hm.asarray([1, 4, 9, 16])).numpy().tolist()
    [3, 5, 7]
    """
    t = _as_tensor(x, "diff")
    if t.ndim == 0:
        raise ValueError("diff: x must have at least 1 dimension, got a 0-d tensor")
    ax = infer.normalize_axis("diff", axis, t.ndim)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"diff: n must be a non-negative int, got {n!r}")
    if n == 0:  # NumPy returns x itself, without prepend or append
        return t
    parts = [_edge("prepend", prepend, t, ax), t, _edge("append", append, t, ax)]
    joined = [p for p in parts if p is not None]
    out = concat(joined, axis=ax) if len(joined) > 1 else t
    for _ in range(int(n)):
        if out.shape[ax] == 0:
            break
        high = getitem(out, _along(ax, slice(1, None)))
        low = getitem(out, _along(ax, slice(None, -1)))
        out = high != low if dtypes.is_bool(out.dtype) else high - low
    return out


def _edge(name: str, value: Any, t: Tensor, axis: int) -> Tensor | None:
    if value is None:
        return None
    edge = _as_tensor(value, "diff")
    if edge.ndim == 0:  # a scalar is broadcast to one slice along axis (NumPy)
        return broadcast_to(reshape(edge, (1,) * t.ndim), (*t.shape[:axis], 1, *t.shape[axis + 1:]))
    if edge.ndim != t.ndim:
        raise ValueError(f"diff: {name} of shape {infer.fmt(edge.shape)} must be a scalar or "
                         f"have {t.ndim} dimensions like x (shape {infer.fmt(t.shape)})")
    return edge


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: object = None,
                   include_initial: bool = False) -> Tensor:
    """Running sums along ``axis`` (which may be None only for a 1-D ``x``), in ``dtype``
    (by default as ``sum``: int64 for bool and signed integers, uint64 for unsigned ones,
    else ``x``'s dtype). With
    ``include_initial`` the result starts with a 0. Computed in log2(n) shifted adds
    (Hillis-Steele), each one fused elementwise kernel, so float sums may round
    differently from a sequential loop.

    >>> import hermes_nb as hm
    >>> hm.cumulative_sum(hm.asarray([1, 2, 3, 4])).numpy().tolist()
    [1, 3, 6, 10]
    """
    return _scan("cumulative_sum", x, axis, dtype, include_initial, 0)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: object = None,
                    include_initial: bool = False) -> Tensor:
    """Running products along ``axis``, as :func:`cumulative_sum` (the initial value is 1).

    >>> import hermes_nb as hm
    >>> hm.cumulative_prod(hm.asarray([1, 2, 3, 4]), include_initial=True).numpy().tolist()
    [1, 1, 2, 6, 24]
    """
    return _scan("cumulative_prod", x, axis, dtype, include_initial, 1)


def axis_or_only(op: str, t: Tensor, axis: int | None) -> int:
    """``axis``, or 0 where it is None and ``t`` is 1-D (the standard's rule for scans and
    ``take``); refused for a 0-d tensor."""
    if axis is None:
        if t.ndim != 1:
            raise ValueError(f"{op}: axis must be given for a tensor of shape "
                             f"{infer.fmt(t.shape)}; it may be None only for a 1-D tensor")
        axis = 0
    if t.ndim == 0:
        raise ValueError(f"{op}: x must have at least 1 dimension, got a 0-d tensor")
    return axis


def _scan(op: str, x: Any, axis: int | None, dtype: object, include_initial: bool,
          identity: int) -> Tensor:
    t = _as_tensor(x, op)
    axis = axis_or_only(op, t, axis)
    if not isinstance(include_initial, (bool, np.bool_)):
        raise TypeError(f"{op}: include_initial must be True or False, got {include_initial!r}")
    ax = infer.normalize_axis(op, axis, t.ndim)
    work = dtypes.as_dtype(dtype, op=op) if dtype is not None else (
        REDUCES["sum"].result_dtype(t.dtype))
    out = astype(t, work)
    size, shift = t.shape[ax], 1
    while shift < size:
        pad = full((*t.shape[:ax], shift, *t.shape[ax + 1:]), identity, work)
        shifted = concat([pad, getitem(out, _along(ax, slice(None, size - shift)))], axis=ax)
        out = out + shifted if identity == 0 else out * shifted
        shift *= 2
    if include_initial:
        first = full((*t.shape[:ax], 1, *t.shape[ax + 1:]), identity, work)
        out = concat([first, out], axis=ax)
    return out


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Tensor:
    """Where each value of ``x2`` would go in the sorted 1-D ``x1`` to keep it sorted: the
    count of ``x1``'s elements below it (``side="left"``) or not above it (``"right"``);
    int64. One fused comparison-and-count over ``x1.size * x2.size`` pairs, so it suits a
    short ``x1``. Counting needs no order, so ``x1`` need not be sorted and ``sorter`` (the
    indices that sort ``x1``, which give the same answer) is only checked. NaN sorts last,
    as in NumPy.

    >>> import hermes_nb as hm
    >>> hm.searchsorted(hm.asarray([1, 3, 5]), hm.asarray([0, 3, 6])).numpy().tolist()
    [0, 1, 3]
    """
    a, v = _as_tensor(x1, "searchsorted"), _as_tensor(x2, "searchsorted")
    for t in (a, v):
        dtypes.refuse_complex("searchsorted", t.dtype)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {infer.fmt(a.shape)}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if sorter is not None:  # the counts below need no order, so sorter is only checked
        order = _as_tensor(sorter, "searchsorted")
        if order.dtype.kind not in "iu" or order.shape != a.shape:
            raise TypeError(f"searchsorted: sorter must be an integer array of x1's shape "
                            f"{infer.fmt(a.shape)}, got dtype {order.dtype.name} and shape "
                            f"{infer.fmt(order.shape)}")
    column = reshape(v, (*v.shape, 1))
    # NaN sorts after every number: it is below no value, and not above a NaN value
    if side == "left":
        return _sum((a < column) | (isnan(column) & ~isnan(a)), axis=-1)
    return _sum((a <= column) | isnan(column), axis=-1)
