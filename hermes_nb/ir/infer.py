"""Shape rules of the ops, checked when the graph is built.

Each function returns the output shape or raises ``ValueError`` naming the op,
the shapes involved and what is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, ...]


def fmt(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shapes(op: str, *shapes: Shape) -> Shape:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-ndim, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis}
        sizes.discard(1)
        if len(sizes) > 1:
            listed = ", ".join(fmt(s) for s in shapes)
            raise ValueError(
                f"{op}: shapes {listed} cannot be broadcast together "
                f"(axis {axis} has sizes {sorted(sizes)}; sizes must match or be 1)"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"{op}: axis {axis} is out of range for a {ndim}-d tensor "
            f"(allowed: {-ndim} to {ndim - 1})"
        )
    return axis % ndim


def normalize_axes(op: str, axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Sorted, non-negative, unique axes; ``None`` means all of them."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = tuple(axis)
    elif isinstance(axis, int):
        axes = (axis,)
    else:
        raise TypeError(f"{op}: axis must be None, an int or a tuple of ints, got {axis!r}")
    normalized = [normalize_axis(op, a, ndim) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{op}: repeated axis in {tuple(axes)}")
    return tuple(sorted(normalized))


def reduce_shape(shape: Shape, axes: tuple[int, ...], keepdims: bool) -> Shape:
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def matmul_shape(a: Shape, b: Shape) -> Shape:
    """Shape of ``a @ b`` for operands that are at least 2-D."""
    if a[-1] != b[-2]:
        raise ValueError(
            f"matmul: inner dimensions differ: {fmt(a)} @ {fmt(b)} "
            f"({a[-1]} != {b[-2]}; the last axis of the first operand must equal "
            f"the second-to-last of the second)"
        )
    try:
        batch = broadcast_shapes("matmul", a[:-2], b[:-2])
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions of {fmt(a)} @ {fmt(b)} cannot be broadcast together "
            f"({fmt(a[:-2])} vs {fmt(b[:-2])}; sizes must match or be 1)"
        ) from None
    return (*batch, a[-2], b[-1])


def reshape_shape(shape: Shape, new: Sequence[int]) -> Shape:
    size = 1
    for s in shape:
        size *= s
    new = tuple(int(s) for s in new)
    unknown = [i for i, s in enumerate(new) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in new):
        raise ValueError(
            f"reshape: invalid target shape {fmt(new)}; sizes must be >= 0, with at most one -1"
        )
    known = 1
    for s in new:
        if s != -1:
            known *= s
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape {fmt(shape)} ({size} elements) to {fmt(new)}")
        new = tuple(size // known if s == -1 else s for s in new)
    elif known != size:
        raise ValueError(f"reshape: cannot reshape {fmt(shape)} ({size} elements) to {fmt(new)}")
    return new


def permute_axes(shape: Shape, axes: Sequence[int]) -> tuple[int, ...]:
    ndim = len(shape)
    normalized = tuple(normalize_axis("permute_dims", a, ndim) for a in axes)
    if sorted(normalized) != list(range(ndim)):
        raise ValueError(
            f"permute_dims: axes {tuple(axes)} are not a permutation of the {ndim} axes "
            f"of a tensor of shape {fmt(shape)}"
        )
    return normalized


def broadcast_to_shape(shape: Shape, target: Sequence[int]) -> Shape:
    target = tuple(int(s) for s in target)
    ok = len(target) >= len(shape) and all(
        s == t or s == 1 for s, t in zip(shape[::-1], target[::-1])
    )
    if not ok or any(t < 0 for t in target):
        raise ValueError(
            f"broadcast_to: cannot broadcast shape {fmt(shape)} to {fmt(target)} "
            "(each axis must match or be 1, aligned from the right)"
        )
    return target


def concat_shape(shapes: Sequence[Shape], axis: int) -> Shape:
    first = shapes[0]
    for s in shapes[1:]:
        if len(s) != len(first) or any(
            a != b for i, (a, b) in enumerate(zip(s, first)) if i != axis
        ):
            listed = ", ".join(fmt(x) for x in shapes)
            raise ValueError(
                f"concat: shapes {listed} differ outside axis {axis}; "
                "all other axes must match"
            )
    return tuple(sum(s[axis] for s in shapes) if i == axis else d for i, d in enumerate(first))
