"""The array API's contractions, ``vecdot`` and ``tensordot``, built from ``multiply`` +
``sum`` (fused into one reduction kernel) and from ``permute``/``reshape`` + ``matmul``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hermes_nb.api.creation import full
from hermes_nb.api.elementwise import _as_tensor, astype
from hermes_nb.api.linalg import matmul
from hermes_nb.api.manipulation import permute_dims, reshape
from hermes_nb.api.reductions import sum as _sum
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer


def numeric_result_type(op: str, a: Tensor, b: Tensor) -> Any:
    """The dtype ``a`` and ``b`` promote to; a bool one is refused (a ``TypeError``)."""
    work = dtypes.result_type(a.dtype, b.dtype)
    if dtypes.is_bool(work):
        raise TypeError(f"{op}: bool operands are not supported; cast them with astype first")
    return work


def _numeric_pair(op: str, x1: Any, x2: Any) -> tuple[Tensor, Tensor, Any]:
    a, b = _as_tensor(x1, op), _as_tensor(x2, op)
    work = numeric_result_type(op, a, b)
    return astype(a, work), astype(b, work), work


def check_trailing_axis(op: str, axis: object, a: Tensor, b: Tensor) -> None:
    """``axis`` as ``vecdot`` and ``linalg.cross`` take it: a negative int counted from the
    end of the broadcast shapes of ``a`` and ``b``."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{op}: axis must be an int, got {axis!r}")
    ndim = max(a.ndim, b.ndim)
    if ndim == 0 or not -ndim <= axis < 0:
        raise ValueError(f"{op}: axis {axis} is out of range for shapes {infer.fmt(a.shape)} "
                         f"and {infer.fmt(b.shape)} (allowed: {-ndim} to -1)")


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The dot product of the vectors along ``axis`` of ``x1`` and ``x2``; the other axes
    broadcast. ``axis`` counts from the end of the broadcast shape (a negative int). Complex
    ``x1`` is conjugated: ``sum(conj(x1) * x2)``.

    >>> import hermes_nb as hm
    >>> float(hm.vecdot(hm.asarray([1.0, 2.0]), hm.asarray([3.0, 4.0])))
    11.0
    """
    a, b, work = _numeric_pair("vecdot", x1, x2)
    check_trailing_axis("vecdot", axis, a, b)
    for name, t in (("x1", a), ("x2", b)):
        if t.ndim < -axis:
            raise ValueError(f"vecdot: {name} of shape {infer.fmt(t.shape)} has no axis {axis}")
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot: axis {axis} has size {a.shape[axis]} in x1 (shape "
                         f"{infer.fmt(a.shape)}) but {b.shape[axis]} in x2 (shape "
                         f"{infer.fmt(b.shape)}); the vectors must have the same length")
    infer.broadcast_shapes("vecdot", a.shape, b.shape)
    if dtypes.is_complex(work):  # the standard's vecdot conjugates x1
        from hermes_nb.api.elementwise import conj

        a = conj(a)
    return astype(_sum(a * b, axis=axis), work)


def _tensordot_axes(axes: Any, a: Tensor, b: Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(axes, int) and not isinstance(axes, bool):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} must be between 0 and "
                             f"{min(a.ndim, b.ndim)} for shapes {infer.fmt(a.shape)} and "
                             f"{infer.fmt(b.shape)}")
        return tuple(range(a.ndim - axes, a.ndim)), tuple(range(axes))
    if not (isinstance(axes, (list, tuple)) and len(axes) == 2
            and all(isinstance(s, (list, tuple)) for s in axes)):
        raise TypeError(f"tensordot: axes must be an int or a pair of sequences of axes, "
                        f"got {axes!r}")
    if len(axes[0]) != len(axes[1]):
        raise ValueError(f"tensordot: axes {axes!r} name {len(axes[0])} axes of x1 but "
                         f"{len(axes[1])} of x2")
    first = tuple(infer.normalize_axis("tensordot", i, a.ndim) for i in axes[0])
    second = tuple(infer.normalize_axis("tensordot", i, b.ndim) for i in axes[1])
    if len(set(first)) != len(first) or len(set(second)) != len(second):
        raise ValueError(f"tensordot: axes {axes!r} repeat an axis")
    return first, second


def tensordot(x1: Any, x2: Any, /, *, axes: int | Sequence[Sequence[int]] = 2) -> Tensor:
    """The sum of products over the axes ``axes`` of ``x1`` and ``x2``: the last ``axes``
    of ``x1`` with the first ``axes`` of ``x2`` for an int, or the pair of axis lists
    ``(x1_axes, x2_axes)``. The free axes of ``x1`` come first in the result, then those
    of ``x2``. Runs as one ``matmul``.

    >>> import hermes_nb as hm
    >>> hm.tensordot(hm.ones((2, 3, 4)), hm.ones((3, 4, 5))).shape
    (2, 5)
    """
    a, b, work = _numeric_pair("tensordot", x1, x2)
    ca, cb = _tensordot_axes(axes, a, b)
    for i, j in zip(ca, cb):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: axis {i} of x1 (shape {infer.fmt(a.shape)}) has size "
                             f"{a.shape[i]} but axis {j} of x2 (shape {infer.fmt(b.shape)}) "
                             f"has size {b.shape[j]}; contracted axes must match")
    free_a = [i for i in range(a.ndim) if i not in ca]
    free_b = [j for j in range(b.ndim) if j not in cb]
    k = math.prod(a.shape[i] for i in ca)
    m = math.prod(a.shape[i] for i in free_a)
    n = math.prod(b.shape[j] for j in free_b)
    left = reshape(permute_dims(a, (*free_a, *ca)), (m, k))
    right = reshape(permute_dims(b, (*cb, *free_b)), (k, n))
    out = matmul(left, right) if k else full((m, n), 0, work)  # an empty sum is 0
    return reshape(astype(out, work), (*(a.shape[i] for i in free_a),
                                       *(b.shape[j] for j in free_b)))
