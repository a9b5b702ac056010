"""Convolution and pooling over the spatial axes of (N, C, *spatial) tensors, as single
``conv`` and ``pool`` nodes (``ir/windows.py`` says what they compute). Every device runs
them; ``cpu:0`` with a generated Numba kernel per window shape, ``opencl:N`` with one
work-item per output, ``cuda:N`` by im2col and cuBLAS. The geometry is checked here, when
the graph is built. ``softmax`` is the stable softmax, which the compiler fuses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.api import elementwise as ew
from hermes_nb.api.elementwise import _as_tensor
from hermes_nb.api.graph import make_node
from hermes_nb.api.reductions import max as reduce_max
from hermes_nb.api.reductions import sum as reduce_sum
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir.infer import normalize_axes
from hermes_nb.ir.windows import POOL_MODES, Window


def conv(x: Any, weight: Any, strides: Sequence[int] | None = None,
         pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
         groups: int = 1) -> Tensor:
    """Grouped convolution (cross-correlation, as in deep learning) of ``x`` (N, C, *spatial)
    by ``weight`` (M, C/groups, *kernel): (N, M, *out). ``pads`` holds the zero padding
    before each spatial axis, then after each (ONNX's order).

    >>> import hermes_nb as hm
    >>> from hermes_nb.api.nn import conv
    >>> conv(hm.ones((1, 2, 5, 5)), hm.ones((4, 2, 3, 3)), pads=(1, 1, 1, 1)).shape
    (1, 4, 5, 5)
    """
    x, w = _as_tensor(x, "conv"), _as_tensor(weight, "conv")
    if x.ndim < 3 or w.ndim != x.ndim:
        raise ValueError(f"conv: expected x of shape (N, C, *spatial) and weights of shape "
                         f"(M, C/groups, *kernel) with as many axes, got {x.shape} and "
                         f"{w.shape}")
    if x.dtype != w.dtype or x.dtype.kind != "f":
        raise TypeError(f"conv: x and the weights must share one float dtype, got "
                        f"{x.dtype.name} and {w.dtype.name}")
    groups = int(groups)
    if groups < 1 or x.shape[1] != w.shape[1] * groups or w.shape[0] % groups:
        raise ValueError(f"conv: input channels {x.shape[1]}, weights {w.shape} and "
                         f"groups={groups} do not agree (C = weights.shape[1] * groups, "
                         f"M divisible by groups)")
    g = _window("conv", x, w.shape[2:], strides, pads, dilations)
    attrs = {"strides": g.strides, "dilations": g.dilations, "pads": g.pads, "groups": groups}
    shape = (x.shape[0], w.shape[0], *_out_spatial("conv", x, g))
    return Tensor(make_node("conv", [x.node, w.node], shape, x.dtype, **attrs))


def pool(x: Any, mode: str, kernel: Sequence[int], strides: Sequence[int] | None = None,
         pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None) -> Tensor:
    """The maximum (``mode="max"``, NaN propagating) or sum (``"sum"``) of each window of
    ``x`` (N, C, *spatial); the padding never wins a max and adds nothing to a sum.

    >>> import hermes_nb as hm
    >>> from hermes_nb.api.nn import pool
    >>> pool(hm.arange(16.0).reshape((1, 1, 4, 4)), "max", (2, 2), (2, 2)).numpy()[0, 0]
    array([[ 5.,  7.],
           [13., 15.]])
    """
    x = _as_tensor(x, "pool")
    if mode not in POOL_MODES:
        raise ValueError(f"pool: mode={mode!r} is not one of {POOL_MODES}")
    if x.ndim < 3 or x.dtype.kind not in "fiu":
        raise ValueError(f"pool: expected a real (N, C, *spatial) tensor, got {x.dtype.name} "
                         f"of shape {x.shape}")
    g = _window("pool", x, tuple(kernel), strides, pads, dilations)
    attrs = {"mode": mode, "kernel": g.kernel, "strides": g.strides, "dilations": g.dilations,
             "pads": g.pads}
    shape = (*x.shape[:2], *_out_spatial("pool", x, g))
    return Tensor(make_node("pool", [x.node], shape, x.dtype, **attrs))


def softmax(x: Any, axis: int | Sequence[int] | None = -1) -> Tensor:
    """``exp(x - max(x)) / sum(exp(x - max(x)))`` over ``axis`` (the last by default; a
    tuple of axes, or None for all): the stable softmax, one ``fused_softmax`` kernel on the
    devices that run it (``cpu:0``, ``cuda:N``), else its four kernels. A slice of ``-inf``
    takes no share; a slice all ``-inf`` or holding a NaN is NaN, as NumPy's steps give.

    >>> import hermes_nb as hm
    >>> from hermes_nb.api.nn import softmax
    >>> softmax(hm.asarray([[0.0, 0.0], [0.0, float("-inf")]])).numpy()
    array([[0.5, 0.5],
           [1. , 0. ]])
    """
    x = _as_tensor(x, "softmax")
    if x.dtype.kind != "f":
        raise TypeError(f"softmax: x must be a real floating-point tensor, got {x.dtype.name}")
    axes = normalize_axes("softmax", axis, x.ndim)
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"softmax: axis={axis!r} of a tensor of shape {x.shape} is empty; "
                         f"a softmax needs at least one element along each axis")
    shifted = ew.exp(ew.subtract(x, reduce_max(x, axis=axes, keepdims=True)))
    return ew.divide(shifted, reduce_sum(shifted, axis=axes, keepdims=True))


def _window(op: str, x: Tensor, kernel: Sequence[int], strides: Sequence[int] | None,
            pads: Sequence[int] | None, dilations: Sequence[int] | None) -> Window:
    r = x.ndim - 2
    return Window(_ints(op, "kernel", kernel, r, 1),
                  _ints(op, "strides", strides or (1,) * r, r, 1),
                  _ints(op, "dilations", dilations or (1,) * r, r, 1),
                  _ints(op, "pads", pads or (0,) * (2 * r), 2 * r, 0))


def _ints(op: str, name: str, values: Sequence[int], count: int, low: int) -> tuple[int, ...]:
    given = tuple(values)
    if len(given) != count or not all(isinstance(v, (int, np.integer)) and
                                      not isinstance(v, bool) and v >= low for v in given):
        raise ValueError(f"{op}: {name}={given} must be {count} integers >= {low} "
                         f"(one per spatial axis{', before then after' if name == 'pads' else ''})")
    return tuple(int(v) for v in given)


def _out_spatial(op: str, x: Tensor, g: Window) -> tuple[int, ...]:
    out = g.out_spatial(x.shape[2:])
    if any(o < 1 for o in out):
        raise ValueError(f"{op}: the window (kernel {g.kernel}, dilations {g.dilations}) is "
                         f"larger than the padded input {x.shape[2:]} with pads {g.pads}")
    return out
