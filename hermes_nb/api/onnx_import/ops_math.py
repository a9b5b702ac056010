"""Elementwise operators, matrix products, Softmax, Clip and the reductions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hermes_nb.api import elementwise as ew
from hermes_nb.api.linalg import matmul
from hermes_nb.api.manipulation import matrix_transpose
from hermes_nb.api.nn import softmax
from hermes_nb.api.onnx_import.table import DTYPE_NAMES, DTYPES, Inputs, OnnxNode, OpSpec, norm_axis, spec
from hermes_nb.api.reductions import max as reduce_max
from hermes_nb.api.reductions import mean, sum
from hermes_nb.api.tensor import Tensor


def _binary(fn: Callable[[Any, Any], Tensor]) -> OpSpec:
    def build(n: OnnxNode, ins: Inputs) -> list[Any]:
        a, b = ins.operand(0), ins.operand(1)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            a = ins.tensor(0)
        return [fn(a, b)]
    return spec(build)


def _unary(fn: Callable[[Tensor], Tensor]) -> OpSpec:
    return spec(lambda n, ins: [fn(ins.tensor(0))])


def _divide(a: Any, b: Any) -> Tensor:
    """ONNX's Div: true division for floats, truncation towards zero for integers."""
    kinds = {np.dtype(type(v)).kind if not isinstance(v, Tensor) else v.dtype.kind for v in (a, b)}
    if "f" in kinds or (not isinstance(a, Tensor) and not isinstance(b, Tensor)):
        return ew.divide(a, b)
    q = ew.floor_divide(a, b)
    inexact = ew.not_equal(ew.subtract(a, ew.multiply(q, b)), 0)
    signs_differ = ew.not_equal(ew.less(a, 0), ew.less(b, 0))
    return ew.where(ew.logical_and(inexact, signs_differ), ew.add(q, 1), q)


def _gemm(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    a, b = (ins.shaped(i, np.transpose, matrix_transpose) if n.attr(flag, 0) else ins.tensor(i)
            for i, flag in ((0, "transA"), (1, "transB")))
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    out = matmul(a, b)
    if alpha != 1.0:
        out = ew.multiply(out, alpha)
    if ins.present(2) and beta != 0.0:
        c = ins.operand(2)
        out = ew.add(out, c if beta == 1.0 else ew.multiply(c, beta))
    return [out]


def _softmax(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    if n.opset >= 13:
        axes: tuple[int, ...] = (norm_axis(n, n.attr("axis", -1), x.ndim),)
    else:  # opsets 1 and 11: over the input coerced to 2-D at axis
        axes = tuple(range(norm_axis(n, n.attr("axis", 1), x.ndim), x.ndim))
    return [softmax(x, axis=axes)]


def _clip(n: OnnxNode, ins: Inputs) -> list[Tensor]:
    x = ins.tensor(0)
    if n.opset < 11:
        lo, hi = n.attr("min"), n.attr("max")
    else:
        lo = ins.operand(1) if ins.present(1) else None
        hi = ins.operand(2) if ins.present(2) else None
    return [ew.clip(x, lo, hi)]


def _reduce(fn: Callable[..., Tensor], axes_input_since: int) -> Callable[[OnnxNode, Inputs], list]:
    def build(n: OnnxNode, ins: Inputs) -> list[Tensor]:
        x = ins.tensor(0)
        keep = bool(n.attr("keepdims", 1))
        given = ins.ints(1) if n.opset >= axes_input_since else n.attr("axes")
        if not given:
            if n.attr("noop_with_empty_axes", 0):
                return [x]
            given = list(range(x.ndim))
        axes = tuple(sorted({norm_axis(n, a, x.ndim) for a in given}))
        if fn is not sum and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"onnx: {n.op_type} {n.where()}: a reduction over an empty axis "
                             f"has no value here (input shape {x.shape})")
        return [fn(x, axis=axes, keepdims=keep)]
    return build


def _constant(n: OnnxNode, ins: Inputs) -> list[np.ndarray]:
    return [n.attrs["__value__"]]


def _check_constant(n: OnnxNode) -> None:
    forms = [k for k in ("value", "value_float", "value_floats", "value_int", "value_ints")
             if k in n.attrs]
    if len(forms) != 1:
        raise n.unsupported(f"the attributes {sorted(n.attrs)}",
                            "one of value, value_float, value_floats, value_int, value_ints")
    value = n.attrs[forms[0]]
    if forms[0] == "value":
        from onnx import numpy_helper

        elem = value.data_type
        if elem not in DTYPES:
            raise n.unsupported(f"a value of ONNX element type {elem}", DTYPE_NAMES)
        array = numpy_helper.to_array(value)
    else:
        array = np.asarray(value, np.float32 if "float" in forms[0] else np.int64)
    array = np.array(array, copy=True)
    array.flags.writeable = False
    n.attrs["__value__"] = array


OPS: dict[str, OpSpec] = {
    "Add": _binary(ew.add),
    "Sub": _binary(ew.subtract),
    "Mul": _binary(ew.multiply),
    "Div": _binary(_divide),
    "Relu": _unary(ew.relu),
    "Sigmoid": _unary(ew.sigmoid),
    "Tanh": _unary(ew.tanh),
    "Exp": _unary(ew.exp),
    "Log": _unary(ew.log),
    "Sqrt": _unary(ew.sqrt),
    "Identity": _unary(lambda x: x),
    "MatMul": spec(lambda n, ins: [matmul(ins.tensor(0), ins.tensor(1))]),
    "Gemm": spec(_gemm, "alpha beta transA transB"),
    "Softmax": spec(_softmax, "axis"),
    "Clip": spec(_clip, "min max"),
    "ReduceSum": spec(_reduce(sum, 13), "axes keepdims noop_with_empty_axes", static=(1,)),
    "ReduceMax": spec(_reduce(reduce_max, 18), "axes keepdims noop_with_empty_axes", static=(1,)),
    "ReduceMean": spec(_reduce(mean, 18), "axes keepdims noop_with_empty_axes", static=(1,)),
    "Constant": spec(_constant, "value value_float value_floats value_int value_ints",
                     check=_check_constant),
}
