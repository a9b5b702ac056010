"""Elementwise maths: NumPy broadcasting, NumPy 2 / array-API type promotion.

Each function checks its operands when called and inserts the casts the
devices rely on: every elementwise node sees inputs of one dtype.

The unary and binary functions whose checks follow from their op's dtype rule
(``hermes_nb.ir.ops``) are built from the op table at the end of this module;
the others (``pow``, the logical ones, ``where``, ``astype``, ``clip``) are written out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hermes_nb.api.graph import make_node
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes
from hermes_nb.ir.infer import broadcast_shapes
from hermes_nb.ir.ops import COMPLEX_UNORDERED, OPS, REAL_ONLY, DtypeRule, OpDef

Operand = Tensor | np.ndarray | bool | int | float | complex

_SCALARS = (bool, int, float, complex)
_ARITHMETIC = ("add", "multiply", "maximum", "minimum")  # defined on bool too (NumPy)


def _operand(value: Any, op: str) -> Tensor | bool | int | float | complex:
    if isinstance(value, (Tensor, *_SCALARS)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (np.ndarray, list, tuple)):
        from hermes_nb.api.creation import asarray

        return asarray(value)
    raise TypeError(f"{op}: unsupported operand type {type(value).__name__} ({value!r:.60}); "
                    "expected a Tensor, NumPy array, list or number")


def _dtype_of(value: Tensor | bool | int | float | complex
              ) -> np.dtype | bool | int | float | complex:
    return value.dtype if isinstance(value, Tensor) else value


def cast(value: Tensor | bool | int | float | complex, dtype: np.dtype, op: str) -> Tensor:
    """``value`` as a tensor of ``dtype``; scalars become 0-d constants."""
    if isinstance(value, Tensor):
        return astype(value, dtype)
    from hermes_nb.api.creation import from_numpy

    try:
        array = np.asarray(value, dtype=dtype)
    except OverflowError as exc:
        raise OverflowError(f"{op}: Python scalar {value!r} does not fit in {dtype.name}") from exc
    return from_numpy(array)


def astype(x: Tensor, dtype: object, /, *, copy: bool = True, device: Any = None) -> Tensor:
    """``x`` converted to ``dtype`` (to bool: nonzero; floats to ints truncate), moved to
    ``device`` if given.

    A tensor's value never changes, so ``copy`` copies no data: ``copy=False`` never raises
    (a cast to ``x``'s own dtype returns ``x``, a real cast a new tensor), unlike
    ``asarray(copy=False)``, and ``copy=True`` gives a new Tensor object even for ``x``'s
    own dtype, so that ``out[key] = value`` leaves ``x`` as it was.

    >>> import hermes_nb as hm
    >>> t = hm.asarray([1.7, -2.5])
    >>> hm.astype(t, hm.int32, copy=False).numpy().tolist()
    [1, -2]
    >>> hm.astype(t, hm.float64, copy=False) is t
    True
    """
    target = dtypes.as_dtype(dtype, op="astype")
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise TypeError(f"astype: copy must be True or False, got {copy!r}")
    if not isinstance(x, Tensor):
        x = _as_tensor(x, "astype")
    if x.dtype != target:
        out = Tensor(make_node("astype", (x.node,), x.shape, target))
    else:
        out = Tensor(x.node) if copy else x
    if device is not None:
        from hermes_nb.api.namespace_info import device_id

        wanted = device_id(device, "astype")
        if out.device != wanted:
            out = out.to(wanted)
    return out


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


def _binary(op: str, x1: Any, x2: Any) -> Tensor:
    rule = OPS[op].dtype
    a, b = _operand(x1, op), _operand(x2, op)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _as_tensor(a, op)
    work = dtypes.result_type(_dtype_of(a), _dtype_of(b))
    if work not in dtypes.SUPPORTED:
        raise TypeError(f"{op}: result dtype {work.name} is not supported")
    _check_complex(op, work)
    out = work
    if rule is DtypeRule.BITWISE:
        _require_integer(op, (("x1", a), ("x2", b)))
    elif rule in (DtypeRule.FLOAT, DtypeRule.TRUE_DIVIDE):
        if rule is DtypeRule.FLOAT:  # bool / bool is float64 (NumPy); float functions need numbers
            _reject_bool(op, work)
        work = out = dtypes.float_result(work)
    elif rule is DtypeRule.COMPARE:
        out = dtypes.bool_
    elif rule is DtypeRule.NUMERIC:
        _reject_bool(op, work)
    return _elementwise(op, [cast(a, work, op), cast(b, work, op)], out)


def _require_integer(op: str, operands: tuple[tuple[str, Any], ...]) -> None:
    """Bitwise ops take integer and bool operands only."""
    for name, value in operands:
        if isinstance(value, Tensor) and dtypes.is_inexact(value.dtype):
            what = f"dtype {value.dtype.name}"
        elif isinstance(value, (float, complex)):
            what = f"a Python {type(value).__name__} ({value!r})"
        else:
            continue
        raise TypeError(f"{op}: argument {name} has {what}; {op} is defined for integer and "
                        f"bool dtypes only ({', '.join(dtypes.INTEGER_NAMES)}, bool)")


def _check_complex(op: str, dtype: np.dtype) -> None:
    """The ops the array API leaves undefined for complex numbers refuse them here."""
    if op in COMPLEX_UNORDERED or op in REAL_ONLY:
        dtypes.refuse_complex(op, dtype, ordered=op in COMPLEX_UNORDERED)


def _unary(op: str, x: Any) -> Tensor:
    rule = OPS[op].dtype
    t = _as_tensor(x, op)
    work = t.dtype
    _check_complex(op, work)
    if rule is DtypeRule.PREDICATE:
        return _elementwise(op, [t], dtypes.bool_)
    if rule is DtypeRule.BITWISE:
        _require_integer(op, (("x", t),))
    if rule is DtypeRule.FLOAT:
        _reject_bool(op, work)
        work = dtypes.float_result(work)
    elif rule is DtypeRule.NUMERIC:
        _reject_bool(op, work)  # floor/ceil of bool is bool in NumPy 2 (SAME); round is not defined
    elif rule is DtypeRule.REAL:
        return _elementwise(op, [t], dtypes.real_dtype(work))
    return _elementwise(op, [astype(t, work)], work)


# ---- written out: more than their dtype rule ----------------------------------------


def pow(x1: Operand, x2: Operand) -> Tensor:
    """``x1 ** x2``. Integers to negative integer powers raise ``ValueError`` as in NumPy:
    at build time for a scalar or constant exponent, else when the graph runs."""
    out = _binary("pow", x1, x2)
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


# ---- logic --------------------------------------------------------------------------


def _logical_operand(value: Any, op: str) -> Tensor:
    """``value`` as a bool tensor: nonzero values count as True."""
    return astype(_as_tensor(value, op), dtypes.bool_)


def logical_and(x1: Operand, x2: Operand) -> Tensor:
    a, b = _logical_operand(x1, "logical_and"), _logical_operand(x2, "logical_and")
    return _elementwise("logical_and", [a, b], dtypes.bool_)


def logical_or(x1: Operand, x2: Operand) -> Tensor:
    a, b = _logical_operand(x1, "logical_or"), _logical_operand(x2, "logical_or")
    return _elementwise("logical_or", [a, b], dtypes.bool_)


def logical_not(x: Operand) -> Tensor:
    return _elementwise("logical_not", [_logical_operand(x, "logical_not")], dtypes.bool_)


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
    dtypes.refuse_complex("clip", out.dtype)
    for name, bound in (("min", min), ("max", max)):
        if bound is not None and (isinstance(bound, (str, bytes, complex))
                                  or not isinstance(bound, (Tensor, np.ndarray, np.generic,
                                                            list, tuple, *_SCALARS))):
            raise TypeError(f"clip: {name} must be None, a real number, an array or a Tensor, "
                            f"got {bound!r:.60} ({type(bound).__name__})")
    if min is not None:
        out = _binary("maximum", out, _operand(min, "clip"))
    if max is not None:
        out = _binary("minimum", out, _operand(max, "clip"))
    return out


# ---- built from the op table --------------------------------------------------------
# the dtype rules whose argument checks _unary and _binary make
_RULE_CHECKED = frozenset({
    DtypeRule.SAME, DtypeRule.NUMERIC, DtypeRule.FLOAT, DtypeRule.TRUE_DIVIDE,
    DtypeRule.PREDICATE, DtypeRule.COMPARE, DtypeRule.BITWISE, DtypeRule.REAL,
})
# public docstrings of the functions built below; the others have none
_DOCSTRINGS = {
    "divide": "True division; integer operands give float64, as in NumPy.",
    "atan2": "Arctangent of ``x1 / x2`` in the quadrant of the point ``(x2, x1)``.",
    "logaddexp": "``log(exp(x1) + exp(x2))`` without overflow.",
    "copysign": "``|x1|`` with the sign of ``x2``.",
    "bitwise_invert": "``~x``: bits flipped for integers, ``not x`` for bool.",
    "sigmoid": "``1 / (1 + exp(-x))``.",
    "relu": "``maximum(x, 0)``; NaN stays NaN.",
    "round": "Round half to even, like NumPy.",
    "square": "``x * x`` in ``x``'s dtype.",
    "sign": "-1, 0 or 1 in ``x``'s dtype; NaN stays NaN; ``x / |x|`` for complex ``x``.",
    "abs": "``|x|``; for complex ``x`` the modulus, in its components' float dtype.",
    "real": """The real part of ``x``; for complex ``x`` in its components' float dtype.

    >>> import hermes_nb as hm
    >>> t = hm.asarray([1 + 2j, 3 - 4j], dtype=hm.complex64)
    >>> hm.real(t).numpy().tolist(), hm.real(t).dtype.name
    ([1.0, 3.0], 'float32')
    """,
    "imag": """The imaginary part of ``x`` (zeros for a real ``x``).

    >>> import hermes_nb as hm
    >>> hm.imag(hm.asarray([1 + 2j, 3 - 4j])).numpy().tolist()
    [2.0, -4.0]
    """,
    "conj": """The complex conjugate of ``x`` (``x`` itself for real dtypes).

    >>> import hermes_nb as hm
    >>> hm.conj(hm.asarray([1 + 2j])).numpy().tolist()
    [(1-2j)]
    """,
    "trunc": "Round towards 0; integers and bools are returned as they are.",
}


def _public_function(op: OpDef) -> Callable[..., Tensor]:
    """``hm.<op>``: the op's node after the argument checks of its dtype rule."""
    name = op.name
    if op.arity == 1:
        def function(x: Operand) -> Tensor:
            return _unary(name, x)
    else:
        def function(x1: Operand, x2: Operand) -> Tensor:
            return _binary(name, x1, x2)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = _DOCSTRINGS.get(name)
    return function


for _op in OPS.values():
    if _op.dtype in _RULE_CHECKED and _op.name not in globals():  # not written out above
        globals()[_op.name] = _public_function(_op)
del _op
