"""Conv, the pools and BatchNormalization, composed from slices, matmul and elementwise ops
(see ``windows.py``)."""

from __future__ import annotations

import functools
import math

import numpy as np

from hermes_nb.api import elementwise as ew
from hermes_nb.api import nn
from hermes_nb.api.creation import asarray
from hermes_nb.api.linalg import matmul
from hermes_nb.api.manipulation import concat, permute_dims, reshape
from hermes_nb.api.onnx_import.table import Inputs, OnnxNode, OpSpec, check_choice, spec
from hermes_nb.api.onnx_import.windows import (
    Geometry,
    check_window,
    geometry,
    max_indices,
    pad,
    window_counts,
    windows,
)
from hermes_nb.api.reductions import mean, var
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir.windows import lowest

_WINDOW = "auto_pad dilations kernel_shape pads strides"
#: spatial axes the single conv/pool nodes take on every device (more: slices and matmul)
NATIVE_SPATIAL = 3


def _spatial(n: OnnxNode, x: Tensor) -> tuple[int, ...]:
    if x.ndim < 3:
        raise ValueError(f"onnx: {n.op_type} {n.where()}: expected an input of shape "
                         f"(N, C, *spatial), got {x.shape}")
    return x.shape[2:]


def _conv(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    """One ``conv`` node (up to ``NATIVE_SPATIAL`` spatial axes), then the bias."""
    x, w = ins.tensor(0), ins.tensor(1)
    spatial = _spatial(n, x)
    groups = int(n.attr("group", 1))
    m, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    if n.attr("kernel_shape") and tuple(n.attr("kernel_shape")) != kernel:
        raise ValueError(f"onnx: Conv {n.where()}: kernel_shape {n.attr('kernel_shape')} does "
                         f"not match the weights' shape {w.shape}")
    if x.shape[1] != cg * groups or m % groups:
        raise ValueError(f"onnx: Conv {n.where()}: input channels {x.shape[1]}, weights "
                         f"{w.shape} and group={groups} do not agree")
    g = geometry(n, spatial, kernel)
    if _native(x, "f"):
        out = nn.conv(x, ins.tensor(1), g.strides, g.pads, g.dilations, groups)
    else:
        out = _im2col(ins, x, g, groups)
    if ins.present(2):
        shape = (1, m) + (1,) * len(spatial)
        out = ew.add(out, ins.shaped(2, lambda b: b.reshape(shape), lambda t: reshape(t, shape)))
    return [out]


def _native(x: Tensor, kinds: str = "fiu") -> bool:
    """Whether the window ops' single nodes take ``x`` (else the composition of slices)."""
    return x.dtype.kind in kinds and x.ndim - 2 <= NATIVE_SPATIAL


def _im2col(ins: Inputs, x: Tensor, g: Geometry, groups: int) -> Tensor:
    """im2col (more than ``NATIVE_SPATIAL`` spatial axes): the kernel offsets' strided
    slices concatenated along the channels, one batched matmul per group against the
    weights reordered to match."""
    w = ins.tensor(1)
    m, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    k, cells, batch = math.prod(kernel), math.prod(g.out), x.shape[0]
    parts = windows(pad(x, g, 0), g)                          # K of (N, C, *out)
    cols = parts[0] if k == 1 else concat(parts, axis=1)      # (N, K*C, *out), offset-major
    if groups == 1:
        cols = reshape(cols, (batch, 1, k * cg, cells))
    else:
        cols = reshape(cols, (batch, k, groups, cg, cells))
        cols = reshape(permute_dims(cols, (0, 2, 1, 3, 4)), (batch, groups, k * cg, cells))
    return reshape(matmul(_conv_weights(ins, groups, k), cols), (batch, m, *g.out))


def _conv_weights(ins: Inputs, groups: int, k: int) -> Tensor:
    """Conv's (M, C/group, *kernel) weights as (group, M/group, K*C/group), offset-major like
    the columns: reordered in NumPy when they are known, as Hermes ops when computed."""
    w = ins.static(1)
    source = ins.tensor(1) if w is None else w
    m, cg = source.shape[0], source.shape[1]
    grouped = (groups, m // groups, cg, k)
    if w is not None:
        return asarray(np.ascontiguousarray(w.reshape(grouped).transpose(0, 1, 3, 2))
                       .reshape(groups, m // groups, k * cg))
    return reshape(permute_dims(reshape(source, grouped), (0, 1, 3, 2)),
                   (groups, m // groups, k * cg))


def _max_pool(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    g = geometry(n, _spatial(n, x), tuple(n.attr("kernel_shape")))
    if _native(x):
        y = nn.pool(x, "max", g.kernel, g.strides, g.pads, g.dilations)
    else:
        y = functools.reduce(ew.maximum, windows(pad(x, g, lowest(x.dtype)), g))
    if len(n.outputs) < 2 or not n.outputs[1]:
        return [y]
    return [y, max_indices(x, y, g, column_major=n.attr("storage_order", 0) == 1)]


def _average_pool(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    spatial = _spatial(n, x)
    g = geometry(n, spatial, tuple(n.attr("kernel_shape")))
    if _native(x):
        total = nn.pool(x, "sum", g.kernel, g.strides, g.pads, g.dilations)
    else:
        total = functools.reduce(ew.add, windows(pad(x, g, 0), g))
    counts = window_counts(spatial, g, bool(n.attr("count_include_pad", 0)))
    if np.all(counts == counts.flat[0]):
        return [ew.divide(total, float(counts.flat[0]))]
    return [ew.divide(total, asarray(counts.astype(x.dtype)))]


def _global_average_pool(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    _spatial(n, x)
    return [mean(x, axis=tuple(range(2, x.ndim)), keepdims=True)]


def _check_kernel(n: OnnxNode) -> None:
    check_window(n)
    if not n.attr("kernel_shape"):
        raise n.unsupported("a missing kernel_shape", "a kernel_shape attribute")


def _check_max_pool(n: OnnxNode) -> None:
    _check_kernel(n)
    check_choice(n, "storage_order", (0, 1), 0)  # only the Indices output reads it


def _batch_norm(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    eps = float(n.attr("epsilon", 1e-5))
    channel = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    known = [ins.static(i) for i in range(1, 5)]
    if not n.attr("training_mode", 0) and all(v is not None for v in known):
        scale, bias, mu, sigma2 = (np.asarray(v, np.float64) for v in known)
        a = scale / np.sqrt(sigma2 + eps)  # folded when the graph is built: y = x * a + b
        b = bias - mu * a
        return [ew.add(ew.multiply(x, asarray(a.astype(x.dtype).reshape(channel))),
                       asarray(b.astype(x.dtype).reshape(channel)))]
    scale, bias, mu, sigma2 = (reshape(ins.tensor(i), channel) for i in range(1, 5))
    if not n.attr("training_mode", 0):
        return [_normalise(x, scale, bias, mu, sigma2, eps)]
    axes = (0, *range(2, x.ndim))
    batch_mu, batch_var = mean(x, axis=axes, keepdims=True), var(x, axis=axes, keepdims=True)
    momentum = float(n.attr("momentum", 0.9))
    running = [ew.add(ew.multiply(r, momentum), ew.multiply(b, 1.0 - momentum))
               for r, b in ((mu, batch_mu), (sigma2, batch_var))]
    y = _normalise(x, scale, bias, batch_mu, batch_var, eps)
    return [y, *(reshape(r, (x.shape[1],)) for r in running)]


def _normalise(x: Tensor, scale: Tensor, bias: Tensor, mu: Tensor, sigma2: Tensor,
               eps: float) -> Tensor:
    centred = ew.subtract(x, mu)
    return ew.add(ew.multiply(ew.divide(centred, ew.sqrt(ew.add(sigma2, eps))), scale), bias)


def _check_batch_norm(n: OnnxNode) -> None:
    check_choice(n, "spatial", (1,), 1)
    check_choice(n, "training_mode", (0, 1), 0)
    if not n.attr("training_mode", 0) and len([o for o in n.outputs if o]) > 1:
        raise n.unsupported("the running mean and variance outputs in inference mode",
                            "one output unless training_mode=1")


OPS: dict[str, OpSpec] = {
    "Conv": spec(_conv, _WINDOW + " group", check=check_window),
    "MaxPool": spec(_max_pool, _WINDOW + " ceil_mode storage_order", check=_check_max_pool,
                    outputs=2),
    "AveragePool": spec(_average_pool, _WINDOW + " ceil_mode count_include_pad",
                        check=_check_kernel),
    "GlobalAveragePool": spec(_global_average_pool),
    "BatchNormalization": spec(_batch_norm, "epsilon momentum spatial training_mode",
                               check=_check_batch_norm, outputs=3),
}
