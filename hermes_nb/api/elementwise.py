"""Elementwise maths: NumPy broadcasting, NumPy 2 / array-API type promotion.

Each function checks its operands when called and inserts the casts the
devices rely on: every elementwise node sees inputs of one dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hermes_nb.api.graph import make_node
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes
from hermes_nb.ir.infer import broadcast_shapes

Operand = Tensor | np.ndarray | bool | int | float

_SCALARS = (bool, int, float)
_ARITHMETIC = ("add", "multiply", "maximum", "minimum")  # defined on bool too (NumPy)


def _operand(value: Any, op: str) -> Tensor | bool | int | float:
    if isinstance(value, (Tensor, *_SCALARS)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (np.ndarray, list, tuple)):
        from hermes_nb.api.creation import asarray

        return asarray(value)
    what = "complex values are not supported (Hermes has no complex dtype)" \
        if isinstance(value, complex) else "expected a Tensor, NumPy array, list or real number"
    raise TypeError(f"{op}: unsupported operand type {type(value).__name__} ({value!r:.60}); "
                    f"{what}")


def _dtype_of(value: Tensor | bool | int | float) -> np.dtype | bool | int | float:
    return value.dtype if isinstance(value, Tensor) else value


def cast(value: Tensor | bool | int | float, dtype: np.dtype, op: str) -> Tensor:
    """``value`` as a tensor of ``dtype``; scalars become 0-d constants."""
    if isinstance(value, Tensor):
        return astype(value, dtype)
    from hermes_nb.api.creation import from_numpy

    try:
        array = np.asarray(value, dtype=dtype)
    except OverflowError as exc:
        raise OverflowError(f"{op}: Python scalar {value!r} does not fit in {dtype.name}") from exc
    return from_numpy(array)


def astype(x: Tensor, dtype: object) -> Tensor:
    """``x`` converted to ``dtype`` (to bool: nonzero; floats to ints truncate)."""
    target = dtypes.as_dtype(dtype, op="astype")
    if not isinstance(x, Tensor):
        x = _as_tensor(x, "astype")
    if x.dtype == target:
        return x
    return Tensor(make_node("astype", (x.node,), x.shape, target))


def _as_tensor(value: Any, op: str) -> Tensor:
    from hermes_nb.api.creation import asarray

    v = _operand(value, op)
    return v if isinstance(v, Tensor) else asarray(v)


def _reject_bool(op: str, dtype: np.dtype, what: str = "numeric") -> None:
    if dtypes.is_bool(dtype):
        raise TypeError(f"{op}: expected a {what} tensor, got dtype bool")


def _elementwise(op: str, operands: list[Tensor], out_dtype: np.dtype, **attrs: Any) -> Tensor:
    shape = broadcast_shapes(op, *(t.shape for t in operands))
    return Tensor(make_node(op, [t.node for t in operands], shape, out_dtype, **attrs))


def _binary(op: str, x1: Any, x2: Any, *, compute: str = "same") -> Tensor:
    a, b = _operand(x1, op), _operand(x2, op)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _as_tensor(a, op)
    work = dtypes.result_type(_dtype_of(a), _dtype_of(b))
    if work not in dtypes.SUPPORTED:
        raise TypeError(f"{op}: result dtype {work.name} is not supported")
    out = work
    if compute == "bitwise":
        _require_integer(op, (("x1", a), ("x2", b)))
    elif compute == "float":
        if op != "divide":  # bool / bool is float64 (NumPy); the other float functions need numbers
            _reject_bool(op, work)
        work = out = dtypes.float_result(work)
    elif compute == "compare":
        out = dtypes.bool_
    elif compute == "numeric":
        _reject_bool(op, work)
    return _elementwise(op, [cast(a, work, op), cast(b, work, op)], out)


def _require_integer(op: str, operands: tuple[tuple[str, Any], ...]) -> None:
    """Bitwise ops take integer and bool operands only."""
    for name, value in operands:
        if isinstance(value, Tensor) and dtypes.is_float(value.dtype):
            what = f"dtype {value.dtype.name}"
        elif isinstance(value, float):
            what = f"a Python float ({value!r})"
        else:
            continue
        raise TypeError(f"{op}: argument {name} has {what}; {op} is defined for integer and "
                        f"bool dtypes only (int32, int64, bool)")


def _unary(op: str, x: Any, *, compute: str = "same") -> Tensor:
    t = _as_tensor(x, op)
    work = t.dtype
    if compute == "predicate":
        return _elementwise(op, [t], dtypes.bool_)
    if compute == "bitwise":
        _require_integer(op, (("x", t),))
    if compute == "float":
        _reject_bool(op, work)
        work = dtypes.float_result(work)
    elif compute == "numeric" or (compute == "round" and op == "round"):
        _reject_bool(op, work)  # floor/ceil of bool is bool in NumPy 2; round is not defined
    return _elementwise(op, [astype(t, work)], work)


# ---- binary arithmetic --------------------------------------------------------------
def add(x1: Operand, x2: Operand) -> Tensor:
    return _binary("add", x1, x2)


def subtract(x1: Operand, x2: Operand) -> Tensor:
    return _binary("subtract", x1, x2, compute="numeric")


def multiply(x1: Operand, x2: Operand) -> Tensor:
    return _binary("multiply", x1, x2)


def divide(x1: Operand, x2: Operand) -> Tensor:
    """True division; integer operands give float64, as in NumPy."""
    return _binary("divide", x1, x2, compute="float")


def floor_divide(x1: Operand, x2: Operand) -> Tensor:
    return _binary("floor_divide", x1, x2, compute="numeric")


def remainder(x1: Operand, x2: Operand) -> Tensor:
    return _binary("remainder", x1, x2, compute="numeric")


def pow(x1: Operand, x2: Operand) -> Tensor:
    """``x1 ** x2``. Integers to negative integer powers raise ``ValueError`` as in NumPy:
    at build time for a scalar or constant exponent, else when the graph runs."""
    out = _binary("pow", x1, x2, compute="numeric")
    if dtypes.is_integer(out.dtype):
        _reject_negative_exponent(out.node.inputs[1], out.dtype)
    return out


def _reject_negative_exponent(exponent: Any, dtype: np.dtype) -> None:
    if exponent.op != "constant" or not (exponent.attrs["value"] < 0).any():
        return
    value = exponent.attrs["value"]
    shown = value.item() if value.ndim == 0 else f"an array with negative values (min {value.min()})"
    raise ValueError(
        f"pow: Integers to negative integer powers are not allowed: exponent {shown} with an "
        f"{dtype.name} base; convert the base to a float dtype first, e.g. "
        f"x.astype('float64') ** {shown if value.ndim == 0 else 'y'}")


def maximum(x1: Operand, x2: Operand) -> Tensor:
    return _binary("maximum", x1, x2)


def minimum(x1: Operand, x2: Operand) -> Tensor:
    return _binary("minimum", x1, x2)


def hypot(x1: Operand, x2: Operand) -> Tensor:
    return _binary("hypot", x1, x2, compute="float")


def atan2(x1: Operand, x2: Operand) -> Tensor:
    """Arctangent of ``x1 / x2`` in the quadrant of the point ``(x2, x1)``."""
    return _binary("atan2", x1, x2, compute="float")


def logaddexp(x1: Operand, x2: Operand) -> Tensor:
    """``log(exp(x1) + exp(x2))`` without overflow."""
    return _binary("logaddexp", x1, x2, compute="float")


def copysign(x1: Operand, x2: Operand) -> Tensor:
    """``|x1|`` with the sign of ``x2``."""
    return _binary("copysign", x1, x2, compute="float")


# ---- bitwise (integers and bool) ----------------------------------------------------
def bitwise_and(x1: Operand, x2: Operand) -> Tensor:
    return _binary("bitwise_and", x1, x2, compute="bitwise")


def bitwise_or(x1: Operand, x2: Operand) -> Tensor:
    return _binary("bitwise_or", x1, x2, compute="bitwise")


def bitwise_xor(x1: Operand, x2: Operand) -> Tensor:
    return _binary("bitwise_xor", x1, x2, compute="bitwise")


def bitwise_invert(x: Operand) -> Tensor:
    """``~x``: bits flipped for integers, ``not x`` for bool."""
    return _unary("bitwise_invert", x, compute="bitwise")


# ---- comparisons and logic ----------------------------------------------------------
def equal(x1: Operand, x2: Operand) -> Tensor:
    return _binary("equal", x1, x2, compute="compare")


def not_equal(x1: Operand, x2: Operand) -> Tensor:
    return _binary("not_equal", x1, x2, compute="compare")


def less(x1: Operand, x2: Operand) -> Tensor:
    return _binary("less", x1, x2, compute="compare")


def less_equal(x1: Operand, x2: Operand) -> Tensor:
    return _binary("less_equal", x1, x2, compute="compare")


def greater(x1: Operand, x2: Operand) -> Tensor:
    return _binary("greater", x1, x2, compute="compare")


def greater_equal(x1: Operand, x2: Operand) -> Tensor:
    return _binary("greater_equal", x1, x2, compute="compare")


def _logical_operand(value: Any, op: str, operator: str | None) -> Tensor:
    t = _as_tensor(value, op)
    if operator is not None and not dtypes.is_bool(t.dtype):
        raise TypeError(
            f"{op}: operator {operator} needs bool tensors, got {t.dtype.name}; "
            f"use hm.{op}(...) to treat nonzero values as True"
        )
    return astype(t, dtypes.bool_)


def logical_and(x1: Operand, x2: Operand, *, operator: str | None = None) -> Tensor:
    a, b = _logical_operand(x1, "logical_and", operator), _logical_operand(x2, "logical_and", operator)
    return _elementwise("logical_and", [a, b], dtypes.bool_)


def logical_or(x1: Operand, x2: Operand, *, operator: str | None = None) -> Tensor:
    a, b = _logical_operand(x1, "logical_or", operator), _logical_operand(x2, "logical_or", operator)
    return _elementwise("logical_or", [a, b], dtypes.bool_)


def logical_not(x: Operand, *, operator: str | None = None) -> Tensor:
    return _elementwise("logical_not", [_logical_operand(x, "logical_not", operator)], dtypes.bool_)


# ---- unary --------------------------------------------------------------------------
def negative(x: Operand) -> Tensor:
    return _unary("negative", x, compute="numeric")


def abs(x: Operand) -> Tensor:
    return _unary("abs", x)


def exp(x: Operand) -> Tensor:
    return _unary("exp", x, compute="float")


def log(x: Operand) -> Tensor:
    return _unary("log", x, compute="float")


def sqrt(x: Operand) -> Tensor:
    return _unary("sqrt", x, compute="float")


def sin(x: Operand) -> Tensor:
    return _unary("sin", x, compute="float")


def cos(x: Operand) -> Tensor:
    return _unary("cos", x, compute="float")


def tanh(x: Operand) -> Tensor:
    return _unary("tanh", x, compute="float")


def sigmoid(x: Operand) -> Tensor:
    """``1 / (1 + exp(-x))``."""
    return _unary("sigmoid", x, compute="float")


def relu(x: Operand) -> Tensor:
    """``maximum(x, 0)``; NaN stays NaN."""
    return _unary("relu", x, compute="numeric")


def floor(x: Operand) -> Tensor:
    return _unary("floor", x, compute="round")


def ceil(x: Operand) -> Tensor:
    return _unary("ceil", x, compute="round")


def round(x: Operand) -> Tensor:
    """Round half to even, like NumPy."""
    return _unary("round", x, compute="round")


def expm1(x: Operand) -> Tensor:
    return _unary("expm1", x, compute="float")


def log1p(x: Operand) -> Tensor:
    return _unary("log1p", x, compute="float")


def log2(x: Operand) -> Tensor:
    return _unary("log2", x, compute="float")


def log10(x: Operand) -> Tensor:
    return _unary("log10", x, compute="float")


def sinh(x: Operand) -> Tensor:
    return _unary("sinh", x, compute="float")


def cosh(x: Operand) -> Tensor:
    return _unary("cosh", x, compute="float")


def tan(x: Operand) -> Tensor:
    return _unary("tan", x, compute="float")


def asin(x: Operand) -> Tensor:
    return _unary("asin", x, compute="float")


def acos(x: Operand) -> Tensor:
    return _unary("acos", x, compute="float")


def atan(x: Operand) -> Tensor:
    return _unary("atan", x, compute="float")


def asinh(x: Operand) -> Tensor:
    return _unary("asinh", x, compute="float")


def acosh(x: Operand) -> Tensor:
    return _unary("acosh", x, compute="float")


def atanh(x: Operand) -> Tensor:
    return _unary("atanh", x, compute="float")


def reciprocal(x: Operand) -> Tensor:
    return _unary("reciprocal", x, compute="float")


def square(x: Operand) -> Tensor:
    """``x * x`` in ``x``'s dtype."""
    return _unary("square", x, compute="numeric")


def sign(x: Operand) -> Tensor:
    """-1, 0 or 1 in ``x``'s dtype; NaN stays NaN."""
    return _unary("sign", x, compute="numeric")


def trunc(x: Operand) -> Tensor:
    """Round towards 0; integers and bools are returned as they are."""
    return _unary("trunc", x, compute="round")


def isnan(x: Operand) -> Tensor:
    return _unary("isnan", x, compute="predicate")


def isinf(x: Operand) -> Tensor:
    return _unary("isinf", x, compute="predicate")


def isfinite(x: Operand) -> Tensor:
    return _unary("isfinite", x, compute="predicate")


# ---- selection ----------------------------------------------------------------------
def where(condition: Operand, x1: Operand, x2: Operand) -> Tensor:
    """``x1`` where ``condition`` is true, else ``x2`` (all three broadcast)."""
    cond = astype(_as_tensor(condition, "where"), dtypes.bool_)
    a, b = _operand(x1, "where"), _operand(x2, "where")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _as_tensor(a, "where")
    work = dtypes.result_type(_dtype_of(a), _dtype_of(b))
    return _elementwise("where", [cond, cast(a, work, "where"), cast(b, work, "where")], work)


def clip(x: Operand, min: Operand | None = None, max: Operand | None = None) -> Tensor:
    """Limit ``x`` to ``[min, max]``; NaN stays NaN."""
    out = _as_tensor(x, "clip")
    for name, bound in (("min", min), ("max", max)):
        if bound is not None and (isinstance(bound, (str, bytes, complex))
                                  or not isinstance(bound, (Tensor, np.ndarray, np.generic,
                                                            list, tuple, *_SCALARS))):
            raise TypeError(f"clip: {name} must be None, a real number, an array or a Tensor, "
                            f"got {bound!r:.60} ({type(bound).__name__})")
    if min is not None:
        out = maximum(out, _operand(min, "clip"))
    if max is not None:
        out = minimum(out, _operand(max, "clip"))
    return out
