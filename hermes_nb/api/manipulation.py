"""Shape and layout: reshape, transpose, broadcast, indexing, concat and stack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.api.elementwise import _as_tensor, astype
from hermes_nb.api.graph import make_node
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer


def reshape(x: Any, shape: Sequence[int] | int, *, copy: bool | None = None) -> Tensor:
    """The same elements, in C order, in a new shape (one entry may be -1).

    ``copy`` is the standard's: tensors are immutable, so no copy is ever observable and
    every value (True, False, None) gives the same lazy tensor.
    """
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise TypeError(f"reshape: copy must be True, False or None, got {copy!r}")
    t = _as_tensor(x, "reshape")
    new = infer.reshape_shape(t.shape, _shape_arg(shape))
    if new == t.shape:
        return t
    return Tensor(make_node("reshape", [t.node], new, t.dtype))


def _shape_arg(shape: Any) -> tuple[int, ...]:
    """The target shape as ints; anything else (floats, strings, bools) is a ``TypeError``."""
    def is_int(v: Any) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

    if is_int(shape):
        return (int(shape),)
    if isinstance(shape, (Sequence, np.ndarray)) and not isinstance(shape, (str, bytes)) \
            and all(is_int(s) for s in shape):
        return tuple(int(s) for s in shape)
    raise TypeError(f"reshape: shape must be an int or a sequence of ints (one may be -1), "
                    f"got {shape!r}")


def permute_dims(x: Any, axes: Sequence[int]) -> Tensor:
    """Reorder the axes of ``x``: output axis i is input axis ``axes[i]``."""
    t = _as_tensor(x, "permute_dims")
    normalized = infer.permute_axes(t.shape, axes)
    if normalized == tuple(range(t.ndim)):
        return t
    shape = tuple(t.shape[a] for a in normalized)
    return Tensor(make_node("permute", [t.node], shape, t.dtype, axes=normalized))


def transpose(x: Any, axes: Sequence[int] | None = None) -> Tensor:
    """Reverse the axes (like NumPy), or permute them as ``axes`` says."""
    t = _as_tensor(x, "transpose")
    return permute_dims(t, tuple(reversed(range(t.ndim))) if axes is None else axes)


def broadcast_to(x: Any, shape: Sequence[int]) -> Tensor:
    t = _as_tensor(x, "broadcast_to")
    target = infer.broadcast_to_shape(t.shape, shape)
    if target == t.shape:
        return t
    return Tensor(make_node("broadcast_to", [t.node], target, t.dtype))


def concat(tensors: Sequence[Any], axis: int | None = 0) -> Tensor:
    """Join tensors along an existing axis (``None``: flatten them first)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError("concat: expected a non-empty list or tuple of tensors")
    ts = [_as_tensor(t, "concat") for t in tensors]
    if axis is None:
        ts = [reshape(t, (-1,)) for t in ts]
        axis = 0
    if any(t.ndim == 0 for t in ts):
        raise ValueError("concat: 0-d tensors cannot be concatenated; use stack")
    ndims = {t.ndim for t in ts}
    if len(ndims) > 1:
        shapes = ", ".join(infer.fmt(t.shape) for t in ts)
        raise ValueError(f"concat: tensors {shapes} have different numbers of dimensions")
    ax = infer.normalize_axis("concat", axis, ts[0].ndim)
    shape = infer.concat_shape([t.shape for t in ts], ax)
    work = dtypes.result_type(*(t.dtype for t in ts))
    if len(ts) == 1:
        return astype(ts[0], work)
    nodes = [astype(t, work).node for t in ts]
    return Tensor(make_node("concat", nodes, shape, work, axis=ax))


def stack(tensors: Sequence[Any], axis: int = 0) -> Tensor:
    """Join equal-shaped tensors along a new axis."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError("stack: expected a non-empty list or tuple of tensors")
    ts = [_as_tensor(t, "stack") for t in tensors]
    shapes = {t.shape for t in ts}
    if len(shapes) > 1:
        listed = ", ".join(infer.fmt(t.shape) for t in ts)
        raise ValueError(f"stack: tensors must all have the same shape, got {listed}")
    ax = infer.normalize_axis("stack", axis, ts[0].ndim + 1)
    expanded = [reshape(t, (*t.shape[:ax], 1, *t.shape[ax:])) for t in ts]
    return concat(expanded, axis=ax)


def getitem(x: Tensor, key: Any) -> Tensor:
    """Basic indexing: ints, slices (any step), ``None`` and ``...``."""
    items = key if isinstance(key, tuple) else (key,)
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, (int, np.integer, slice))):
            raise TypeError(
                f"getitem: only basic indexing is supported (ints, slices, None, ...), "
                f"got {type(item).__name__}"
            )
        if isinstance(item, bool):
            raise TypeError("getitem: bool indices are not supported")
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    indexing = sum(1 for i in items if i is not None and i is not Ellipsis)
    if indexing > x.ndim:
        raise IndexError(
            f"getitem: too many indices for a tensor of shape {infer.fmt(x.shape)}: "
            f"{indexing} were given"
        )
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (x.ndim - indexing) + items[at + 1 :]
    else:
        items = items + (slice(None),) * (x.ndim - indexing)

    starts, steps, sizes, keep, out_shape = [], [], [], [], []
    axis = 0
    for item in items:
        if item is None:
            out_shape.append(1)
            continue
        size = x.shape[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(size)
            count = len(range(start, stop, step))
            starts.append(start if count else 0)
            steps.append(step)
            sizes.append(count)
            keep.append(True)
            out_shape.append(count)
        else:
            index = int(item)
            if not -size <= index < size:
                raise IndexError(
                    f"getitem: index {index} is out of bounds for axis {axis} with size {size}"
                )
            starts.append(index % size)
            steps.append(1)
            sizes.append(1)
            keep.append(False)
        axis += 1

    sliced = x
    trivial = all(k and st == 0 and sp == 1 and n == s
                  for k, st, sp, n, s in zip(keep, starts, steps, sizes, x.shape))
    if not trivial:
        kept = tuple(n for n, k in zip(sizes, keep) if k)
        sliced = Tensor(make_node(
            "slice", [x.node], kept, x.dtype,
            starts=tuple(starts), steps=tuple(steps), sizes=tuple(sizes), keep=tuple(keep),
        ))
    return reshape(sliced, tuple(out_shape))


# ---- the array API's manipulation functions, as compositions of the ops above ----------
def _axis_list(op: str, axis: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    """``axis`` (an int or a sequence of ints) as non-negative axes, in the given order;
    a repeated axis is a ``ValueError``."""
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, (bool, np.bool_)):
        given: tuple[Any, ...] = (int(axis),)
    elif isinstance(axis, (list, tuple)):
        given = tuple(int(a) if isinstance(a, np.integer) else a for a in axis)
    else:
        raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}")
    out = tuple(infer.normalize_axis(op, a, ndim) for a in given)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axis {tuple(given)} repeats an axis")
    return out


def matrix_transpose(x: Any, /) -> Tensor:
    """Swap the last two axes (a stack of matrices transposed); ``x.mT`` is the same.

    >>> import hermes_nb as hm
    >>> hm.matrix_transpose(hm.zeros((4, 2, 3))).shape
    (4, 3, 2)
    """
    t = _as_tensor(x, "matrix_transpose")
    if t.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape "
                         f"{infer.fmt(t.shape)}")
    return permute_dims(t, (*range(t.ndim - 2), t.ndim - 1, t.ndim - 2))


class AxisError(ValueError, IndexError):
    """An axis out of range: the ``ValueError`` Hermes raises for one, and the
    ``IndexError`` the array API asks of ``expand_dims`` (NumPy's ``AxisError`` is both)."""


def expand_dims(x: Any, /, *, axis: int = 0) -> Tensor:
    """``x`` with a new axis of size 1 at position ``axis`` (``-x.ndim - 1`` to ``x.ndim``).

    >>> import hermes_nb as hm
    >>> hm.expand_dims(hm.zeros((2, 3)), axis=-1).shape
    (2, 3, 1)
    """
    t = _as_tensor(x, "expand_dims")
    try:
        ax = infer.normalize_axis("expand_dims", axis, t.ndim + 1)
    except ValueError as exc:  # the standard asks an IndexError of expand_dims
        raise AxisError(str(exc)) from None
    return reshape(t, (*t.shape[:ax], 1, *t.shape[ax:]))


def squeeze(x: Any, /, axis: int | Sequence[int] | None = None) -> Tensor:
    """``x`` without the size-1 axes ``axis`` (an int or a tuple). ``axis=None`` removes
    every size-1 axis: NumPy's default, outside the standard (where ``axis`` is required).

    >>> import hermes_nb as hm
    >>> hm.squeeze(hm.zeros((1, 3, 1)), axis=0).shape
    (3, 1)
    """
    t = _as_tensor(x, "squeeze")
    if axis is None:
        axes = tuple(i for i, s in enumerate(t.shape) if s == 1)
    else:
        axes = _axis_list("squeeze", axis, t.ndim)
    for a in axes:
        if t.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {t.shape[a]}, only axes of size 1 "
                             f"can be removed (shape {infer.fmt(t.shape)})")
    return reshape(t, tuple(s for i, s in enumerate(t.shape) if i not in axes))


def flip(x: Any, /, *, axis: int | Sequence[int] | None = None) -> Tensor:
    """``x`` with the order of elements reversed along ``axis`` (every axis by default).

    >>> import hermes_nb as hm
    >>> hm.flip(hm.arange(4)).numpy().tolist()
    [3, 2, 1, 0]
    """
    t = _as_tensor(x, "flip")
    axes = range(t.ndim) if axis is None else _axis_list("flip", axis, t.ndim)
    if not axes or t.size == 0:
        return t
    key = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(t.ndim))
    return getitem(t, key)


def roll(x: Any, /, shift: int | Sequence[int], *,
         axis: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted by ``shift`` places along ``axis``, those that fall off the end
    coming back at the start; ``axis=None`` rolls the flattened tensor.

    >>> import hermes_nb as hm
    >>> hm.roll(hm.arange(5), 2).numpy().tolist()
    [3, 4, 0, 1, 2]
    """
    t = _as_tensor(x, "roll")
    shifts = _int_tuple("roll", "shift", shift)
    if axis is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: shift {shift!r} must be one int when axis is None")
        return reshape(roll(reshape(t, (-1,)), shifts[0], axis=0), t.shape)
    axes = _int_tuple("roll", "axis", axis)
    if len(shifts) == 1 and not isinstance(shift, (list, tuple)):
        shifts = shifts * len(axes)  # one int shift moves every axis named (NumPy, the standard)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} must have the same length")
    out = t
    for s, a in zip(shifts, axes):
        out = _roll_axis(out, s, infer.normalize_axis("roll", a, t.ndim))
    return out


def _int_tuple(op: str, name: str, value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, (list, tuple)) else (value,)
    for v in items:
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{op}: {name} must be an int or a tuple of ints, got {value!r}")
    return tuple(int(v) for v in items)


def _roll_axis(t: Tensor, shift: int, axis: int) -> Tensor:
    size = t.shape[axis]
    if size == 0 or shift % size == 0:
        return t
    cut = size - shift % size
    before = (slice(None),) * axis
    return concat([getitem(t, (*before, slice(cut, None))),
                   getitem(t, (*before, slice(None, cut)))], axis=axis)


def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int], /
             ) -> Tensor:
    """``x`` with the axes ``source`` moved to the positions ``destination``, the other
    axes keeping their order.

    >>> import hermes_nb as hm
    >>> hm.moveaxis(hm.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    t = _as_tensor(x, "moveaxis")
    src = _axis_list("moveaxis", source, t.ndim)
    dst = _axis_list("moveaxis", destination, t.ndim)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} must "
                         "name the same number of axes")
    order = [a for a in range(t.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(t, order)


def broadcast_arrays(*arrays: Any) -> list[Tensor]:
    """The tensors broadcast against each other, each to the common shape.

    >>> import hermes_nb as hm
    >>> [t.shape for t in hm.broadcast_arrays(hm.zeros((3, 1)), hm.zeros(4))]
    [(3, 4), (3, 4)]
    """
    ts = [_as_tensor(a, "broadcast_arrays") for a in arrays]
    shape = infer.broadcast_shapes("broadcast_arrays", *(t.shape for t in ts))
    return [broadcast_to(t, shape) for t in ts]


def tile(x: Any, repetitions: Sequence[int], /) -> Tensor:
    """``x`` repeated ``repetitions[i]`` times along axis i (the shorter of ``x.shape`` and
    ``repetitions`` padded with leading 1s), like ``numpy.tile``.

    >>> import hermes_nb as hm
    >>> hm.tile(hm.arange(3), (2,)).numpy().tolist()
    [0, 1, 2, 0, 1, 2]
    """
    t = _as_tensor(x, "tile")
    if not isinstance(repetitions, (list, tuple)):
        raise TypeError(f"tile: repetitions must be a tuple of ints, got {repetitions!r}")
    reps = _int_tuple("tile", "repetitions", tuple(repetitions))
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions {tuple(reps)} must not be negative")
    ndim = max(t.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - t.ndim) + t.shape
    pairs = [d for s in shape for d in (1, s)]
    spread = [d for r, s in zip(reps, shape) for d in (r, s)]
    return reshape(broadcast_to(reshape(t, pairs), spread),
                   tuple(r * s for r, s in zip(reps, shape)))


def repeat(x: Any, repeats: int | Sequence[int] | Tensor, /, *, axis: int | None = None
           ) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (the flattened tensor when
    None). ``repeats`` is an int or one count per element along ``axis``: the output's
    shape depends on those counts, so a Tensor of counts is computed when the graph is
    built (the standard leaves this data-dependent form optional).

    >>> import hermes_nb as hm
    >>> hm.repeat(hm.asarray([1, 2]), 2).numpy().tolist()
    [1, 1, 2, 2]
    """
    t = _as_tensor(x, "repeat")
    if axis is None:
        t, axis = reshape(t, (-1,)), 0
    ax = infer.normalize_axis("repeat", axis, t.ndim)
    counts = _repeat_counts(repeats, t.shape[ax])
    if isinstance(counts, int):
        expanded = reshape(t, (*t.shape[:ax + 1], 1, *t.shape[ax + 1:]))
        spread = broadcast_to(expanded, (*t.shape[:ax + 1], counts, *t.shape[ax + 1:]))
        return reshape(spread, (*t.shape[:ax], t.shape[ax] * counts, *t.shape[ax + 1:]))
    before = (slice(None),) * ax
    # one slice per run of equal counts, each repeated as a whole: (1, 1, 2) is two pieces
    runs = [(start, start + len(members), n) for start, n, members in _runs(counts)]
    pieces = [repeat(getitem(t, (*before, slice(lo, hi))), n, axis=ax)
              for lo, hi, n in runs if n]
    if not pieces:
        return getitem(t, (*before, slice(0, 0)))
    return concat(pieces, axis=ax)


def _runs(counts: tuple[int, ...]) -> list[tuple[int, int, list[int]]]:
    """``(start, count, members)`` for each run of equal neighbouring counts."""
    out: list[tuple[int, int, list[int]]] = []
    for i, n in enumerate(counts):
        if out and out[-1][1] == n:
            out[-1][2].append(i)
        else:
            out.append((i, n, [i]))
    return out


def _repeat_counts(repeats: Any, size: int) -> int | tuple[int, ...]:
    if isinstance(repeats, Tensor):
        if not dtypes.is_integer(repeats.dtype):
            raise TypeError(f"repeat: repeats must hold integers, got dtype {repeats.dtype.name}")
        repeats = repeats.numpy().tolist()
    elif isinstance(repeats, np.ndarray):
        repeats = repeats.tolist()
    if isinstance(repeats, (list, tuple)) and len(repeats) == 1 and size != 1:
        repeats = repeats[0]  # one count for every element broadcasts (NumPy)
    counts = _int_tuple("repeat", "repeats", repeats)
    if any(c < 0 for c in counts):
        raise ValueError(f"repeat: repeats {repeats!r} must not be negative")
    if isinstance(repeats, (list, tuple)):
        if len(counts) != size:
            raise ValueError(f"repeat: repeats has {len(counts)} counts, but the axis has "
                             f"size {size}; give one count per element or a single int")
        return counts
    return counts[0]


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``, as a tuple of tensors.

    >>> import hermes_nb as hm
    >>> [t.shape for t in hm.unstack(hm.zeros((2, 3)), axis=1)]
    [(2,), (2,), (2,)]
    """
    t = _as_tensor(x, "unstack")
    if t.ndim == 0:
        raise ValueError("unstack: x must have at least 1 dimension, got a 0-d tensor")
    ax = infer.normalize_axis("unstack", axis, t.ndim)
    before = (slice(None),) * ax
    return tuple(getitem(t, (*before, i)) for i in range(t.shape[ax]))
