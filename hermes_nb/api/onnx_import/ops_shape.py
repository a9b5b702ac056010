"""Operators that move data: Reshape, Transpose, Flatten, Concat."""

from __future__ import annotations

import math

from hermes_nb.api.manipulation import concat, permute_dims, reshape
from hermes_nb.api.onnx_import.table import Inputs, OnnxNode, OpSpec, norm_axis, spec
from hermes_nb.api.tensor import Tensor


def target_shape(n: OnnxNode, shape: tuple[int, ...], wanted: list[int]) -> tuple[int, ...]:
    """Reshape's ``shape`` input resolved: 0 copies the input's dimension (unless
    ``allowzero``), one -1 is inferred."""
    allowzero = bool(n.attr("allowzero", 0))
    dims = [shape[i] if d == 0 and not allowzero and i < len(shape) else d
            for i, d in enumerate(wanted)]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"onnx: Reshape {n.where()}: invalid shape {wanted}")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        total = math.prod(shape)
        if known == 0 or total % known:
            raise ValueError(f"onnx: Reshape {n.where()}: cannot reshape {shape} to {wanted}")
        dims[dims.index(-1)] = total // known
    return tuple(dims)


def _reshape(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    wanted = ins.ints(1) if n.opset >= 5 else list(n.attr("shape", []))
    return [reshape(x, target_shape(n, x.shape, wanted or []))]


def _transpose(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    perm = n.attr("perm") or list(range(x.ndim))[::-1]
    return [permute_dims(x, tuple(perm))]


def _flatten(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    axis = n.attr("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis <= x.ndim:
        raise ValueError(f"onnx: Flatten {n.where()}: axis {n.attr('axis')} is out of range "
                         f"for rank {x.ndim}")
    return [reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))]


def _concat(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    parts = [ins.tensor(i) for i in range(len(ins)) if ins.present(i)]
    return [concat(parts, axis=norm_axis(n, n.attr("axis", 0), parts[0].ndim))]


OPS: dict[str, OpSpec] = {
    "Reshape": spec(_reshape, "allowzero shape", static=(1,)),
    "Transpose": spec(_transpose, "perm"),
    "Flatten": spec(_flatten, "axis"),
    "Concat": spec(_concat, "axis"),
}
