"""Where a fused reduction's elements are: the layout every device's kernel walks.

The prologue's inputs are broadcast (stride 0) to ``in_shape``; size-1 dimensions are
dropped and neighbouring dimensions of the same kind (kept or reduced) that every input
walks contiguously are merged, leaving kept dimensions ``oshape`` and reduced dimensions
``rshape`` (each at least one dimension) with per-input element strides.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["broadcast_strides", "layout"]


def broadcast_strides(shape: Sequence[int], target: Sequence[int]) -> list[int]:
    """Element strides reading a C-contiguous ``shape`` broadcast to ``target``."""
    padded = (1,) * (len(target) - len(shape)) + tuple(shape)
    strides, acc = [0] * len(target), 1
    for d in range(len(target) - 1, -1, -1):
        strides[d] = acc if padded[d] == target[d] and padded[d] != 1 else 0
        acc *= padded[d]
    return strides


def layout(in_shape: Sequence[int], axes: Sequence[int], in_shapes: Sequence[Sequence[int]]
           ) -> tuple[str, tuple[str, ...], list[np.ndarray]]:
    """``kind`` (``"rows"``: the innermost dimension is reduced, ``"cols"``: kept), one
    class per input (``"i"``: stride 1 along the innermost dimension, ``"o"``: stride 0)
    and ``[oshape, ostrides, rshape, rstrides]`` as uint64 arrays."""
    strides = [broadcast_strides(s, in_shape) for s in in_shapes]
    n = len(in_shapes)
    dims: list[tuple[bool, int, list[int]]] = []  # (reduced, size, per-input strides)
    for d, size in enumerate(in_shape):
        if size == 1:
            continue
        reduced = d in axes
        st = [s[d] for s in strides]
        if dims and dims[-1][0] == reduced and all(
                p == q * size for p, q in zip(dims[-1][2], st)):
            dims[-1] = (reduced, dims[-1][1] * size, st)
            continue
        dims.append((reduced, size, st))
    kept = [(s, st) for r, s, st in dims if not r] or [(1, [0] * n)]
    red = [(s, st) for r, s, st in dims if r] or [(1, [0] * n)]
    kind = "cols" if dims and not dims[-1][0] else "rows"
    inner = (kept if kind == "cols" else red)[-1][1]
    classes = tuple("i" if st == 1 else "o" for st in inner)

    def arrays(part: list[tuple[int, list[int]]]) -> tuple[np.ndarray, np.ndarray]:
        shape = np.array([s for s, _ in part], np.uint64)
        st = np.array([[p[1][m] for p in part] for m in range(n)], np.uint64).reshape(n, len(part))
        return shape, st

    return kind, classes, [*arrays(kept), *arrays(red)]
