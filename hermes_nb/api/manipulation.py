"""Shape and layout: reshape, transpose, broadcast, indexing, concat and stack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.api.elementwise import _as_tensor, astype
from hermes_nb.api.graph import make_node
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer


def reshape(x: Any, shape: Sequence[int] | int) -> Tensor:
    """The same elements, in C order, in a new shape (one entry may be -1)."""
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
