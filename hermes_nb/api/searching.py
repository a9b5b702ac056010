"""The array API's indexing, searching, sorting and set functions: ``take``,
``take_along_axis``, ``nonzero``, ``sort``, ``argsort`` and ``unique_*``, boolean-mask
indexing (``x[mask]``) and the functional update ``x.at[key].set(value)``.

``take`` and ``take_along_axis`` stay lazy in ``x``: the indices are read now (a Tensor of
indices is computed), and the result is built from static slices of ``x`` joined with
``concat``, one slice per run of evenly spaced indices, so they suit short or orderly index
lists; over ``MAX_PIECES`` (1024) runs, ``x`` is computed now and indexed on the host (CuPy
on ``cuda:N``), as ``x[mask]`` and ``x.at[key].set(value)`` do with theirs. The other
functions have data-dependent results (``nonzero``, ``unique_*``, ``x[mask]``) or need a
sort, which Hermes has no kernel for: they compute their input now, with NumPy on the host
(CuPy for a tensor on ``cuda:N``), and return tensors on the input's device.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from hermes_nb.api.creation import asarray
from hermes_nb.api.elementwise import _as_tensor, astype, where
from hermes_nb.api.manipulation import broadcast_to, concat, getitem, reshape
from hermes_nb.api.tensor import Tensor
from hermes_nb.api.utility import axis_or_only
from hermes_nb.ir import dtypes, infer


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


# ---- host round trips ----------------------------------------------------------------
def _xp(t: Tensor) -> Any:
    """The array module that holds ``t``'s value: CuPy on ``cuda:N``, else NumPy."""
    if t.device is not None and t.device.startswith("cuda"):
        import cupy  # a cuda device exists only where CuPy does

        return cupy
    return np


def _value(t: Tensor) -> Any:
    """``t`` computed, as an array of the module :func:`_xp` names."""
    xp = _xp(t)
    return t.numpy() if xp is np else xp.from_dlpack(t.compute())


def _back(array: Any, like: Tensor) -> Tensor:
    """``array`` as a tensor on ``like``'s device (unplaced when ``like`` is)."""
    # np.asarray(order="C"), not ascontiguousarray: that turns a 0-d array into shape (1,)
    host = np.asarray(array, order="C") if isinstance(array, np.ndarray) else array
    return asarray(host, device=like.device)


def _int_indices(op: str, indices: Any) -> np.ndarray:
    """``indices`` as an int64 NumPy array (a Tensor is computed now)."""
    raw = indices.numpy() if isinstance(indices, Tensor) else np.asarray(indices)
    if raw.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be an integer array, got dtype {raw.dtype.name}")
    return raw.astype(np.int64, copy=False)


def _in_range(op: str, idx: np.ndarray, size: int, axis: int) -> np.ndarray:
    """``idx`` with negative indices counted from the end; out of range is an IndexError."""
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        allowed = f"{-size} to {size - 1}" if size else "none (the axis is empty)"
        raise IndexError(f"{op}: index {int(idx[bad].flat[0])} is out of range for axis "
                         f"{axis} of size {size}; allowed: {allowed}")
    return np.where(idx < 0, idx + size, idx)


# ---- take ----------------------------------------------------------------------------
#: the most runs of evenly spaced indices built as slices; beyond, the input is computed now
MAX_PIECES = 1024


def _pieces(idx: np.ndarray) -> list[tuple[int, int, int]]:
    """``(start, step, count)`` for each run of evenly spaced indices (step 0: repeats)."""
    out: list[tuple[int, int, int]] = []
    i, n = 0, len(idx)
    while i < n:
        if i + 1 == n:
            out.append((int(idx[i]), 1, 1))
            break
        step, j = int(idx[i + 1] - idx[i]), i + 1
        while j + 1 < n and idx[j + 1] - idx[j] == step:
            j += 1
        out.append((int(idx[i]), step, j - i + 1))
        i = j + 1
    return out


def _gather(t: Tensor, idx: np.ndarray, ax: int) -> Tensor:
    """``t``'s slices at the in-range, non-negative 1-D ``idx`` along ``ax``, lazily."""
    def along(key: slice) -> tuple[slice, ...]:
        return (*(slice(None),) * ax, key)

    if idx.size == 0:
        return getitem(t, along(slice(0, 0)))
    pieces = _pieces(idx)
    if len(pieces) > MAX_PIECES:  # a graph of that many slices costs more than computing t
        xp = _xp(t)
        return _back(xp.take(_value(t), xp.asarray(idx), axis=ax), t)
    parts = []
    for start, step, count in pieces:
        if step == 0:
            one = getitem(t, along(slice(start, start + 1)))
            parts.append(broadcast_to(one, (*t.shape[:ax], count, *t.shape[ax + 1:])))
        else:
            stop = start + step * count
            parts.append(getitem(t, along(slice(start, stop if stop >= 0 else None, step))))
    return concat(parts, axis=ax) if len(parts) > 1 else parts[0]


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Tensor:
    """The elements of ``x`` at ``indices`` (1-D integers) along ``axis``, which may be None
    only for a 1-D ``x``. Negative indices count from the end, as in NumPy; one out of range
    is an ``IndexError`` naming it. Lazy in ``x``; ``indices`` are read now (a Tensor of
    indices is computed): the result is static slices of ``x`` joined by ``concat``, one per
    run of evenly spaced indices. Over ``MAX_PIECES`` runs, ``x`` is computed now instead.

    >>> import hermes_nb as hm
    >>> hm.take(hm.asarray([10, 20, 30, 40]), hm.asarray([3, 0, 0, -1])).numpy().tolist()
    [40, 10, 10, 40]
    """
    t = _as_tensor(x, "take")
    axis = axis_or_only("take", t, axis)
    ax = infer.normalize_axis("take", axis, t.ndim)
    idx = _int_indices("take", indices)
    if idx.ndim != 1:
        raise ValueError(f"take: indices must be 1-D, got shape {infer.fmt(idx.shape)}")
    return _gather(t, _in_range("take", idx, t.shape[ax], ax), ax)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Tensor:
    """The elements of ``x`` at ``indices`` along ``axis``, where ``indices`` has ``x``'s
    number of dimensions and broadcasts with it on every other axis (NumPy's
    ``take_along_axis``). Negative indices count from the end; one out of range is an
    ``IndexError``. Lazy in ``x``, with the indices read now, as :func:`take`.

    >>> import hermes_nb as hm
    >>> x = hm.asarray([[10, 30, 20], [60, 40, 50]])
    >>> hm.take_along_axis(x, hm.asarray([[0], [1]]), axis=1).numpy().tolist()
    [[10], [40]]
    """
    t = _as_tensor(x, "take_along_axis")
    idx = _int_indices("take_along_axis", indices)
    if t.ndim == 0 or idx.ndim != t.ndim:
        raise ValueError(f"take_along_axis: indices of shape {infer.fmt(idx.shape)} must have "
                         f"as many dimensions as x (shape {infer.fmt(t.shape)}), at least 1")
    ax = infer.normalize_axis("take_along_axis", axis, t.ndim)
    others = [s for i, s in enumerate(t.shape) if i != ax]
    try:
        rest = np.broadcast_shapes(tuple(others),
                                   tuple(s for i, s in enumerate(idx.shape) if i != ax))
    except ValueError:
        raise ValueError(f"take_along_axis: indices of shape {infer.fmt(idx.shape)} do not "
                         f"broadcast with x of shape {infer.fmt(t.shape)} outside axis "
                         f"{ax}") from None
    x_shape = (*rest[:ax], t.shape[ax], *rest[ax:])
    out_shape = (*rest[:ax], idx.shape[ax], *rest[ax:])
    idx = _in_range("take_along_axis", np.broadcast_to(idx, out_shape), t.shape[ax], ax)
    coords = list(np.indices(out_shape, sparse=True))
    coords[ax] = idx
    flat = np.ravel_multi_index(np.broadcast_arrays(*coords), x_shape).reshape(-1) \
        if idx.size else np.zeros(0, np.int64)
    whole = reshape(broadcast_to(t, x_shape), (-1,))
    return reshape(_gather(whole, flat, 0), out_shape)


# ---- data-dependent: nonzero, masks --------------------------------------------------
def nonzero(x: Any, /) -> tuple[Tensor, ...]:
    """The indices of ``x``'s nonzero (True) elements, one int64 tensor per dimension, in
    row-major order. The result's length depends on the data, so ``x`` is computed now.

    >>> import hermes_nb as hm
    >>> [i.numpy().tolist() for i in hm.nonzero(hm.asarray([[0, 3], [4, 0]]))]
    [[0, 1], [1, 0]]
    """
    t = _as_tensor(x, "nonzero")
    if t.ndim == 0:
        raise ValueError("nonzero: x must have at least 1 dimension, got a 0-d tensor")
    xp = _xp(t)
    return tuple(_back(i.astype(xp.int64), t) for i in xp.nonzero(_value(t)))


def boolean_mask(x: Any, mask: Any) -> Tensor:
    """``x[mask]`` for a bool ``mask`` of the shape of ``x``'s leading dimensions: the
    elements (or sub-arrays) where ``mask`` is True, flattened along those dimensions. The
    result's length depends on the mask, so the mask is computed now; ``x`` stays lazy
    unless the mask's True elements form over ``MAX_PIECES`` runs (then it is computed too).

    >>> import hermes_nb as hm
    >>> x = hm.asarray([1.0, -2.0, 3.0])
    >>> x[x > 0].numpy().tolist()
    [1.0, 3.0]
    """
    t = _as_tensor(x, "getitem")
    m = mask.numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(f"getitem: a mask must be bool, got dtype {m.dtype.name}")
    if m.ndim == 0:  # x[True] is x with a new leading axis of 1, x[False] an empty one
        t, m = reshape(t, (1, *t.shape)), m.reshape(1)
    if m.shape != t.shape[:m.ndim]:
        raise IndexError(f"getitem: a mask of shape {infer.fmt(m.shape)} must match the "
                         f"leading dimensions of x (shape {infer.fmt(t.shape)})")
    # the row count spelt out: -1 cannot be inferred when a trailing dimension is 0
    rows = reshape(t, (m.size, *t.shape[m.ndim:]))
    return _gather(rows, np.flatnonzero(m), 0)


# ---- functional update: x.at[key].set(value) ------------------------------------------
def _host_key(key: Any) -> Any:
    """``key`` with its tensors read now, for NumPy to index a host array with."""
    items = key if isinstance(key, tuple) else (key,)
    read = tuple(k.numpy() if isinstance(k, Tensor) else k for k in items)
    return read if isinstance(key, tuple) else read[0]


class IndexUpdate:
    """``x.at[key]``: the place ``key`` names in ``x``, for a functional update."""

    __slots__ = ("_key", "_x")

    def __init__(self, x: Tensor, key: Any) -> None:
        self._x, self._key = x, key

    def set(self, value: Any) -> Tensor:
        """A new lazy tensor: ``x`` with ``value`` at ``key`` (``x`` itself is unchanged).

        ``key`` is any NumPy index: ints, slices, ``None``, ``...``, integer or bool arrays
        (a Tensor in ``key`` is read now). ``value`` broadcasts to ``x[key]``'s shape and is
        cast to ``x``'s dtype; it may be a lazy tensor. The result is
        ``where(mask, spread, x)``, with the mask and the placement of ``value`` worked out
        from ``x``'s shape now, so nothing of ``x`` is computed, nor of ``value`` unless
        ``key`` spreads it over more than ``MAX_PIECES`` runs. Where an
        integer array repeats a position, the last value given for it is set, as in NumPy.

        >>> import hermes_nb as hm
        >>> x = hm.zeros((2, 3), dtype=hm.int32)
        >>> x.at[:, 1:].set(hm.asarray([7, 8])).numpy().tolist()
        [[0, 7, 8], [0, 7, 8]]
        >>> x.numpy().tolist()
        [[0, 0, 0], [0, 0, 0]]
        """
        x, key = self._x, _host_key(self._key)
        where_at = np.full(x.shape, -1, dtype=np.int64)
        try:
            target = where_at[key].shape
            where_at[key] = np.arange(int(np.prod(target)), dtype=np.int64).reshape(target)
        except (IndexError, TypeError, ValueError) as exc:
            raise IndexError(f"at[...].set: index {self._key!r} does not index a tensor of "
                             f"shape {infer.fmt(x.shape)}: {exc}") from None
        v = astype(_as_tensor(value, "at[...].set"), x.dtype)
        try:
            np.broadcast_shapes(v.shape, target)
        except ValueError:
            raise ValueError(f"at[...].set: a value of shape {infer.fmt(v.shape)} does not "
                             f"broadcast to the indexed shape {infer.fmt(target)}") from None
        mask = where_at >= 0
        if not mask.any():
            return x
        flat = reshape(broadcast_to(v, target), (-1,))
        spread = reshape(_gather(flat, np.maximum(where_at, 0).reshape(-1), 0), x.shape)
        return where(asarray(mask, device=x.device), spread, x)


class IndexUpdates:
    """``x.at``: ``x.at[key].set(value)`` gives ``x`` with ``value`` at ``key``, a new
    lazy tensor (tensors are immutable; JAX's spelling of ``x[key] = value``)."""

    __slots__ = ("_x",)

    def __init__(self, x: Tensor) -> None:
        self._x = x

    def __getitem__(self, key: Any) -> IndexUpdate:
        return IndexUpdate(self._x, key)


# ---- sorting -------------------------------------------------------------------------
def _sort_args(op: str, x: Any, axis: int, descending: object, stable: object
               ) -> tuple[Tensor, int]:
    t = _as_tensor(x, op)
    dtypes.refuse_complex(op, t.dtype)
    if t.ndim == 0:
        raise ValueError(f"{op}: x must have at least 1 dimension, got a 0-d tensor")
    for name, flag in (("descending", descending), ("stable", stable)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{op}: {name} must be True or False, got {flag!r}")
    return t, infer.normalize_axis(op, axis, t.ndim)


def _argsort(xp: Any, a: Any, ax: int, descending: bool) -> Any:
    if not descending:
        return xp.argsort(a, axis=ax, kind="stable")
    # stable descending: reverse, sort stably, reverse back (ties keep their order)
    last = a.shape[ax] - 1
    return last - xp.flip(xp.argsort(xp.flip(a, axis=ax), axis=ax, kind="stable"), axis=ax)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True
         ) -> Tensor:
    """``x`` sorted along ``axis``, computed now (Hermes has no sort kernel) with NumPy on
    the host (CuPy on ``cuda:N``); the result is on ``x``'s device. The sort is always
    stable. NaN sorts last, and first when ``descending`` (NumPy's order, reversed), which
    the standard leaves to the implementation; bool sorts False first, as in NumPy (the
    standard sorts numbers only).

    >>> import hermes_nb as hm
    >>> hm.sort(hm.asarray([3, 1, 2]), descending=True).numpy().tolist()
    [3, 2, 1]
    """
    t, ax = _sort_args("sort", x, axis, descending, stable)
    xp, a = _xp(t), _value(t)
    order = _argsort(xp, a, ax, bool(descending))
    return _back(xp.take_along_axis(a, order, axis=ax), t)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True
            ) -> Tensor:
    """The int64 indices that sort ``x`` along ``axis``, as :func:`sort` (computed now,
    always stable: equal elements keep their order, also when ``descending``).

    >>> import hermes_nb as hm
    >>> hm.argsort(hm.asarray([2, 1, 2, 0]), descending=True).numpy().tolist()
    [0, 2, 1, 3]
    """
    t, ax = _sort_args("argsort", x, axis, descending, stable)
    xp = _xp(t)
    return _back(_argsort(xp, _value(t), ax, bool(descending)).astype(xp.int64), t)


# ---- sets ----------------------------------------------------------------------------
def _unique(op: str, x: Any) -> tuple[Tensor, Any, tuple[Any, ...]]:
    t = _as_tensor(x, op)
    xp = _xp(t)
    a = _value(t)
    try:
        found = xp.unique(a.reshape(-1), return_index=True, return_inverse=True,
                          return_counts=True, equal_nan=False)
    except TypeError:  # a CuPy before equal_nan: NumPy on the host, NaNs still distinct
        xp = np
        found = np.unique(t.numpy().reshape(-1), return_index=True, return_inverse=True,
                          return_counts=True, equal_nan=False)
    return t, xp, tuple(found)


def unique_values(x: Any, /) -> Tensor:
    """The distinct values of ``x``, 1-D and sorted (NumPy's order; the standard leaves it
    open). Each NaN is distinct, as the standard says. Computed now, on the host (CuPy on
    ``cuda:N``); the result is on ``x``'s device.

    >>> import hermes_nb as hm
    >>> hm.unique_values(hm.asarray([3, 1, 3, 2])).numpy().tolist()
    [1, 2, 3]
    """
    t, _, (values, *_) = _unique("unique_values", x)
    return _back(values, t)


def unique_counts(x: Any, /) -> UniqueCountsResult:
    """``(values, counts)``: the distinct values of ``x``, as :func:`unique_values`, and how
    often each occurs (int64; each NaN once).

    >>> import hermes_nb as hm
    >>> r = hm.unique_counts(hm.asarray([3, 1, 3]))
    >>> r.values.numpy().tolist(), r.counts.numpy().tolist()
    ([1, 3], [1, 2])
    """
    t, xp, (values, _, _, counts) = _unique("unique_counts", x)
    return UniqueCountsResult(_back(values, t), _back(counts.astype(xp.int64), t))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``: the distinct values, as :func:`unique_values`, and for
    each element of ``x`` the index of its value among them (int64, ``x``'s shape).

    >>> import hermes_nb as hm
    >>> hm.unique_inverse(hm.asarray([3, 1, 3])).inverse_indices.numpy().tolist()
    [1, 0, 1]
    """
    t, xp, (values, _, inverse, _) = _unique("unique_inverse", x)
    return UniqueInverseResult(_back(values, t),
                               _back(inverse.reshape(t.shape).astype(xp.int64), t))


def unique_all(x: Any, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``: the distinct values as
    :func:`unique_values`, the flat index of each one's first occurrence in ``x``, the
    inverse as :func:`unique_inverse` and the counts as :func:`unique_counts` (int64).

    >>> import hermes_nb as hm
    >>> hm.unique_all(hm.asarray([3, 1, 3])).indices.numpy().tolist()
    [1, 0]
    """
    t, xp, (values, first, inverse, counts) = _unique("unique_all", x)
    return UniqueAllResult(_back(values, t), _back(first.astype(xp.int64), t),
                           _back(inverse.reshape(t.shape).astype(xp.int64), t),
                           _back(counts.astype(xp.int64), t))


__all__ = ["IndexUpdate", "IndexUpdates", "UniqueAllResult", "UniqueCountsResult",
           "UniqueInverseResult", "argsort", "boolean_mask", "nonzero", "sort", "take",
           "take_along_axis", "unique_all", "unique_counts", "unique_inverse", "unique_values"]
