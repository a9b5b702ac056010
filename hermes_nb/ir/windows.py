"""What the window ops (``conv`` and ``pool``) compute, written once against a NumPy-like
array module: the reference every device is tested against, and what ``cuda:N`` runs with
CuPy (and ``cpu:0`` below its JIT size).

Both slide a window over the spatial axes of an (N, C, *spatial) array. Its geometry is
plain data in the node's attrs: ``strides`` and ``dilations`` per spatial axis, ``pads``
(the padding before each axis, then after each), and for ``pool`` the ``kernel`` shape.
The output's spatial size along an axis is ``(size + before + after - span) // stride + 1``
with ``span = (kernel - 1) * dilation + 1``. A convolution's padding reads as 0; a pool's as
its reduction's identity (``-inf`` or the dtype's lowest for ``max``, 0 for ``sum``), so a
window never takes a padded value unless it holds nothing else.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

POOL_MODES = ("max", "sum")


@dataclass(frozen=True)
class Window:
    """The geometry of one window op over ``len(kernel)`` spatial axes."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]  # before each spatial axis, then after each

    @classmethod
    def of(cls, attrs: dict[str, Any], kernel: Sequence[int]) -> Window:
        return cls(tuple(kernel), tuple(attrs["strides"]), tuple(attrs["dilations"]),
                   tuple(attrs["pads"]))

    @property
    def rank(self) -> int:
        return len(self.kernel)

    def span(self, axis: int) -> int:
        return (self.kernel[axis] - 1) * self.dilations[axis] + 1

    def out_size(self, axis: int, size: int) -> int:
        """The output's size along spatial ``axis`` of an input ``size`` long (< 1: none)."""
        padded = size + self.pads[axis] + self.pads[axis + self.rank]
        return (padded - self.span(axis)) // self.strides[axis] + 1

    def out_spatial(self, spatial: Sequence[int]) -> tuple[int, ...]:
        return tuple(self.out_size(i, s) for i, s in enumerate(spatial))


def lowest(dtype: np.dtype) -> float | int:
    """The identity of ``max`` over ``dtype``: what a max pool's padding reads as."""
    dtype = np.dtype(dtype)
    return -math.inf if dtype.kind == "f" else int(np.iinfo(dtype).min)


def pad_value(mode: str, dtype: np.dtype) -> float | int:
    return lowest(dtype) if mode == "max" else 0


def _padded(xp: Any, x: Any, g: Window, value: float | int) -> Any:
    widths = [(0, 0), (0, 0), *((g.pads[i], g.pads[i + g.rank]) for i in range(g.rank))]
    if not any(b or e for b, e in widths):
        return x
    return xp.pad(x, widths, constant_values=value)


def windows(x: Any, g: Window, out_spatial: Sequence[int]) -> list[Any]:
    """One strided slice of the padded ``x`` per kernel offset, each (N, C, *out)."""
    out = []
    for offset in itertools.product(*(range(k) for k in g.kernel)):
        index = [slice(None), slice(None)]
        for i, o in enumerate(offset):
            start = o * g.dilations[i]
            index.append(slice(start, start + (out_spatial[i] - 1) * g.strides[i] + 1,
                               g.strides[i]))
        out.append(x[tuple(index)])
    return out


def conv(xp: Any, x: Any, w: Any, attrs: dict[str, Any], out_shape: Sequence[int]) -> Any:
    """``conv`` by im2col: the kernel offsets' slices as columns, one batched matmul per
    group (BLAS/cuBLAS accumulate in the input's dtype)."""
    g = Window.of(attrs, w.shape[2:])
    n, groups = x.shape[0], int(attrs["groups"])
    m, cg, k = w.shape[0], w.shape[1], math.prod(w.shape[2:])
    out_spatial = tuple(out_shape[2:])
    cells = math.prod(out_spatial)
    parts = windows(_padded(xp, x, g, 0), g, out_spatial)  # K of (N, C, *out)
    cols = xp.stack(parts, axis=2).reshape(n, groups, cg * k, cells)  # channel-major
    weights = w.reshape(groups, m // groups, cg * k)
    return xp.matmul(weights, cols).reshape(tuple(out_shape))


def pool(xp: Any, x: Any, attrs: dict[str, Any], out_shape: Sequence[int]) -> Any:
    """``pool``: the windows' maximum (NaN propagating) or sum."""
    g = Window.of(attrs, attrs["kernel"])
    mode = attrs["mode"]
    parts = windows(_padded(xp, x, g, pad_value(mode, x.dtype)), g, tuple(out_shape[2:]))
    combine = xp.maximum if mode == "max" else xp.add
    return functools.reduce(combine, parts)


def conv_flops(x_shape: Sequence[int], w_shape: Sequence[int], out_shape: Sequence[int]) -> int:
    """Multiply-adds times two: each output reads C/groups x prod(kernel) inputs."""
    return 2 * math.prod(out_shape) * math.prod(w_shape[1:])
