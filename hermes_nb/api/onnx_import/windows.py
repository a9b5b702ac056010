"""Where the windows of Conv and the pools lie (ONNX's pads, auto_pad, ceil_mode), and
their composition from strided slices of a padded input for more spatial axes than the
``conv`` and ``pool`` nodes take.

Composed, a window operator over ``r`` spatial axes becomes one strided slice of the padded
input per kernel offset (``prod(kernel_shape)`` slices, each the size of the output):
pooling combines them elementwise (``maximum``, ``add``: one fused kernel), Conv stacks them
into im2col columns for one ``matmul``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.api import elementwise as ew
from hermes_nb.api.creation import asarray, full
from hermes_nb.api.manipulation import concat
from hermes_nb.api.onnx_import.table import AUTO_PADS, OnnxNode, check_choice
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import windows as ir_windows


@dataclass(frozen=True)
class Geometry:
    """Where the windows of one operator lie along each spatial axis."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]   # padding before, as ONNX gives or auto_pad chooses
    end: tuple[int, ...]     # padding after, as ONNX gives or auto_pad chooses
    extra: tuple[int, ...]   # more padding after, which only ceil_mode's last window reads
    out: tuple[int, ...]

    def span(self, axis: int) -> int:
        return (self.kernel[axis] - 1) * self.dilations[axis] + 1

    @property
    def pads(self) -> tuple[int, ...]:
        """The padding before each axis, then after (ceil_mode's extra included): the
        ``conv``/``pool`` nodes' ``pads``."""
        return (*self.begin, *(e + x for e, x in zip(self.end, self.extra)))


def check_window(n: OnnxNode) -> None:
    """Load-time checks shared by Conv and the pools."""
    check_choice(n, "auto_pad", AUTO_PADS, "NOTSET")
    check_choice(n, "ceil_mode", (0, 1), 0)
    for key in ("strides", "dilations", "kernel_shape"):
        if any(v < 1 for v in n.attr(key, [])):
            raise n.unsupported(f"{key}={n.attr(key)}", "positive values")
    if any(v < 0 for v in n.attr("pads", [])):
        raise n.unsupported(f"pads={n.attr('pads')}", "non-negative pads")


def geometry(n: OnnxNode, spatial: Sequence[int], kernel: Sequence[int]) -> Geometry:
    r = len(spatial)
    strides = tuple(n.attr("strides") or (1,) * r)
    dilations = tuple(n.attr("dilations") or (1,) * r)
    pads = list(n.attr("pads") or (0,) * 2 * r)
    auto = n.attr("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    ceil = bool(n.attr("ceil_mode", 0))
    if len(strides) != r or len(dilations) != r or len(pads) != 2 * r or len(kernel) != r:
        raise ValueError(f"onnx: {n.op_type} {n.where()}: strides, dilations, pads and "
                         f"kernel_shape must match the input's {r} spatial axes")
    out, begin, end, extra = [], [], [], []
    for i in range(r):
        span = (kernel[i] - 1) * dilations[i] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-spatial[i] // strides[i])
            total = max(0, (o - 1) * strides[i] + span - spatial[i])
            small, big = total // 2, total - total // 2
            b, e = (small, big) if auto == "SAME_UPPER" else (big, small)
        else:
            b, e = (0, 0) if auto == "VALID" else (pads[i], pads[i + r])
            length = spatial[i] + b + e - span
            if length < 0:
                raise ValueError(f"onnx: {n.op_type} {n.where()}: the window ({span}) is "
                                 f"larger than the padded input ({spatial[i] + b + e})")
            o = (-(-length // strides[i]) if ceil else length // strides[i]) + 1
            if ceil and (o - 1) * strides[i] >= spatial[i] + b:
                o -= 1  # the last window would start in the padding after the input
        out.append(o)
        begin.append(b)
        end.append(e)
        extra.append(max(0, (o - 1) * strides[i] + span - spatial[i] - b - e))
    return Geometry(tuple(kernel), strides, dilations, tuple(begin), tuple(end), tuple(extra),
                    tuple(out))


def pad(x: Tensor, g: Geometry, value: float | int) -> Tensor:
    """``x`` (N, C, *spatial) with ``value`` around its spatial axes as ``g`` says."""
    for i, (b, e) in enumerate(zip(g.begin, (e + x for e, x in zip(g.end, g.extra)))):
        if not b and not e:
            continue
        axis = 2 + i
        parts = []
        for width in (b, e):
            shape = (*x.shape[:axis], width, *x.shape[axis + 1:])
            parts.append(full(shape, value, dtype=x.dtype) if width else None)
        x = concat([p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)
    return x


def windows(x: Any, g: Geometry) -> list[Any]:
    """One strided slice of the padded ``x`` per kernel offset, each (N, C, *out); works on
    a Tensor and on a NumPy array alike."""
    return ir_windows.windows(x, ir_windows.Window(g.kernel, g.strides, g.dilations, g.pads),
                              g.out)


def inside(spatial: Sequence[int], g: Geometry) -> list[np.ndarray]:
    """Per kernel offset, (1, 1, *out): whether each output's tap at that offset reads the
    input (True) or the padding."""
    mask = np.pad(np.ones((1, 1, *spatial), bool), [(0, 0), (0, 0), *zip(g.begin, (
        e + x for e, x in zip(g.end, g.extra)))], constant_values=False)
    return windows(mask, g)


def max_indices(x: Tensor, y: Tensor, g: Geometry, column_major: bool) -> Tensor:
    """MaxPool's Indices: where in ``x`` (flattened, the padding not counted) each window's
    maximum ``y`` lies, int64 of ``y``'s shape. The first tap in the window's row-major
    order that holds it, as ONNX's reference and onnxruntime pick, and never a padded tap
    (the padding's lowest value can tie the input's); where the maximum is NaN, the first
    NaN. ``column_major`` (``storage_order=1``) numbers the spatial axes first-fastest."""
    spatial, r = x.shape[2:], x.ndim - 2
    taps = list(zip(windows(pad(x, g, ir_windows.lowest(x.dtype)), g), inside(spatial, g)))
    k: Any = 0  # the offset of the first hit (some tap holds the maximum): one fused kernel
    for offset in reversed(range(len(taps))):
        tap, real = taps[offset]
        hit = ew.equal(tap, y)
        if x.dtype.kind == "f":
            hit = ew.logical_or(hit, ew.isnan(tap))
        k = ew.where(ew.logical_and(hit, asarray(real)), np.int64(offset), k)
    flat = asarray(np.arange(x.shape[0] * x.shape[1], dtype=np.int64)
                   .reshape(x.shape[0], x.shape[1], *(1,) * r))
    flat = ew.multiply(flat, math.prod(spatial)) if column_major else flat
    stride = 1  # column-major: the size of the spatial axes before this one
    for i in range(r):
        starts = np.arange(g.out[i], dtype=np.int64) * g.strides[i] - g.begin[i]
        offset = ew.remainder(ew.floor_divide(k, math.prod(g.kernel[i + 1:])), g.kernel[i])
        coord = ew.add(ew.multiply(offset, g.dilations[i]),
                       asarray(starts.reshape(*(1,) * (2 + i), -1, *(1,) * (r - i - 1))))
        if column_major:
            flat, stride = ew.add(flat, ew.multiply(coord, stride)), stride * spatial[i]
        else:
            flat = ew.add(ew.multiply(flat, spatial[i]), coord)
    return flat


def window_counts(spatial: Sequence[int], g: Geometry, include_pad: bool) -> np.ndarray:
    """How many elements each output's window averages: AveragePool's divisor, (*out).
    With ``count_include_pad`` the given padding counts, ceil_mode's extra never does."""
    inside = np.ones((1, 1, *spatial), np.float64)
    given = [(0, 0), (0, 0), *list(zip(g.begin, g.end))]
    mask = np.pad(inside, given, constant_values=1.0 if include_pad else 0.0)
    mask = np.pad(mask, [(0, 0), (0, 0)] + [(0, x) for x in g.extra], constant_values=0.0)
    return np.sum(windows(mask, g), axis=0)[0, 0]


def elements(g: Geometry) -> int:
    return math.prod(g.kernel)
