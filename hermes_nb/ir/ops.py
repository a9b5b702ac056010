"""Every op Hermes knows, declared once.

Each op has a kind, which tells the compiler and the device backends how it
behaves: elementwise ops map equal-shaped (broadcast) inputs to an output,
reductions fold axes, movement ops only rearrange data.

Conventions that every backend may rely on (the tensor layer guarantees them):
- elementwise ops get inputs of one dtype (``where``: a bool condition and two
  branches of the output dtype); inputs may have fewer or size-1 dimensions and
  broadcast to the node's shape;
- ``sum``/``prod`` reduce in the output dtype (inputs are cast first);
  ``argmax``/``argmin`` return int64;
- ``matmul`` inputs share a dtype and are at least 2-D.

An elementwise op's :class:`OpDef` also says which dtype it returns (its
:class:`DtypeRule`, from which the op families below are derived) and how NumPy
computes it (the array backend runs that form with NumPy on ``cpu:0`` and for
reference evaluation, with CuPy on ``cuda``).

To add an elementwise op:

1. one ``OpDef`` line in ``OPS`` below: name, one-line doc, dtype rule, NumPy form;
2. one row in each renderer table: ``C_FORMS`` in ``codegen/c_source.py`` (OpenCL C and
   CUDA; a helper in ``FLOAT_HELPERS``/``INT_HELPERS``/``UINT_HELPERS`` if a form calls one) and
   ``NUMBA_FORMS`` in ``codegen/numba_cpu.py``;
3. its NumPy reference in ``tests/reference_ops.py`` (the tests' own oracle) and its name
   in the elementwise import block of ``hermes_nb/__init__.py``.

``api/elementwise.py`` builds the public function from the ``OpDef`` (argument checks from
the dtype rule; an optional docstring in its ``_DOCSTRINGS``); ops that need more than their
rule (``pow``, ``where``, ...) are written out there. ``tests/unit/test_op_tables.py`` fails
while a table lacks the op, or has an op this module does not declare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from types import ModuleType
from typing import Any


class Kind(Enum):
    SOURCE = "source"
    ELEMENTWISE = "elementwise"
    REDUCE = "reduce"
    MOVEMENT = "movement"
    MATMUL = "matmul"
    STENCIL = "stencil"
    WINDOW = "window"
    FUSED = "fused"


class DtypeRule(Enum):
    """The dtype an elementwise op returns, and the operand dtypes it accepts."""

    SAME = "same"  # the operands' promoted dtype, bool included
    NUMERIC = "numeric"  # the same; bool operands are refused
    FLOAT = "float"  # float and complex dtypes stay, integers give float64; bool is refused
    TRUE_DIVIDE = "true_divide"  # as FLOAT, but bool operands are fine (bool / bool: float64)
    PREDICATE = "predicate"  # bool, for operands of any dtype
    COMPARE = "compare"  # bool; the operands are promoted to one dtype first
    LOGICAL = "logical"  # bool; the operands are converted to bool first
    BITWISE = "bitwise"  # the operands' promoted dtype; integers and bool only
    SELECT = "select"  # the branches' promoted dtype (the condition is bool)
    CAST = "cast"  # the dtype the node was built with (astype, to_device)
    REAL = "real"  # the operand's dtype; for a complex one, its components' (abs, real, imag)


# How NumPy computes an op: the name of an array-namespace function, or a function of the
# array module returning the callable (for ops NumPy spells differently).
ArrayForm = str | Callable[[ModuleType], Callable[..., Any]]


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: Kind
    arity: int | None  # None: variadic
    doc: str
    dtype: DtypeRule | None = None  # elementwise ops only
    numpy: ArrayForm | None = None  # elementwise ops only

    def array_function(self, xp: ModuleType) -> Callable[..., Any]:
        """The op as a function of arrays of module ``xp`` (NumPy or CuPy)."""
        if self.numpy is None:
            raise KeyError(f"{self.name} has no array form")
        return getattr(xp, self.numpy) if isinstance(self.numpy, str) else self.numpy(xp)


# ---- array forms NumPy has no single function for --------------------------------------
def _sigmoid(xp: ModuleType) -> Callable[[Any], Any]:
    return lambda x: 1 / (1 + xp.exp(-x))


def _relu(xp: ModuleType) -> Callable[[Any], Any]:
    return lambda x: xp.maximum(x, x.dtype.type(0))


def _keep_int(name: str) -> Callable[[ModuleType], Callable[[Any], Any]]:
    # floor/ceil/round/trunc of an integer is the integer itself (array API)
    def form(xp: ModuleType) -> Callable[[Any], Any]:
        fn = getattr(xp, name)
        return lambda x: fn(x) if x.dtype.kind in "fc" else x.copy()

    return form


def _identity(xp: ModuleType) -> Callable[[Any], Any]:
    # the conversion to the node's dtype follows every op (ArrayOps.run)
    return lambda x: x


def _op(name: str, kind: Kind, arity: int | None, doc: str) -> OpDef:
    return OpDef(name, kind, arity, doc)


def _unary(name: str, doc: str, dtype: DtypeRule, numpy: ArrayForm) -> OpDef:
    return OpDef(name, Kind.ELEMENTWISE, 1, doc, dtype, numpy)


def _binary(name: str, doc: str, dtype: DtypeRule, numpy: ArrayForm) -> OpDef:
    return OpDef(name, Kind.ELEMENTWISE, 2, doc, dtype, numpy)


_R = DtypeRule


OPS: dict[str, OpDef] = {op.name: op for op in (
    # sources
    _op("constant", Kind.SOURCE, 0, "a host array (attrs: value; borrowed: value is a read-only "
        "view of the user's array, read at each compute)"),
    _op("random", Kind.SOURCE, 0, "seeded random numbers (attrs: distribution, seed, params)"),
    _op("full", Kind.SOURCE, 0, "an array filled with one value (attrs: fill_value)"),
    _op("arange", Kind.SOURCE, 0, "evenly spaced values (attrs: start, step)"),
    _op("buffer", Kind.SOURCE, 0, "a value already resident on a device (attrs: handle)"),
    # elementwise, unary
    _unary("negative", "-x", _R.NUMERIC, "negative"),
    _unary("abs", "|x| (complex: the modulus, in the components' float dtype)", _R.REAL, "abs"),
    _unary("real", "real part (complex: in the components' float dtype; real dtypes: x)",
           _R.REAL, "real"),
    _unary("imag", "imaginary part (complex: in the components' float dtype; real: 0)",
           _R.REAL, "imag"),
    _unary("conj", "complex conjugate (real dtypes: x)", _R.NUMERIC, "conj"),
    _unary("exp", "e**x", _R.FLOAT, "exp"),
    _unary("log", "natural logarithm", _R.FLOAT, "log"),
    _unary("sqrt", "square root", _R.FLOAT, "sqrt"),
    _unary("sin", "sine", _R.FLOAT, "sin"),
    _unary("cos", "cosine", _R.FLOAT, "cos"),
    _unary("tanh", "hyperbolic tangent", _R.FLOAT, "tanh"),
    _unary("sigmoid", "1 / (1 + exp(-x))", _R.FLOAT, _sigmoid),
    _unary("relu", "maximum(x, 0), NaN propagating", _R.NUMERIC, _relu),
    _unary("floor", "round towards -inf", _R.SAME, _keep_int("floor")),
    _unary("ceil", "round towards +inf", _R.SAME, _keep_int("ceil")),
    _unary("round", "round half to even", _R.NUMERIC, _keep_int("round")),
    _unary("logical_not", "not x (bool)", _R.LOGICAL, "logical_not"),
    _unary("expm1", "e**x - 1, exact near 0", _R.FLOAT, "expm1"),
    _unary("log1p", "log(1 + x), exact near 0", _R.FLOAT, "log1p"),
    _unary("log2", "base-2 logarithm", _R.FLOAT, "log2"),
    _unary("log10", "base-10 logarithm", _R.FLOAT, "log10"),
    _unary("sinh", "hyperbolic sine", _R.FLOAT, "sinh"),
    _unary("cosh", "hyperbolic cosine", _R.FLOAT, "cosh"),
    _unary("tan", "tangent", _R.FLOAT, "tan"),
    _unary("asin", "arcsine (NaN outside [-1, 1])", _R.FLOAT, "arcsin"),
    _unary("acos", "arccosine (NaN outside [-1, 1])", _R.FLOAT, "arccos"),
    _unary("atan", "arctangent", _R.FLOAT, "arctan"),
    _unary("asinh", "inverse hyperbolic sine", _R.FLOAT, "arcsinh"),
    _unary("acosh", "inverse hyperbolic cosine (NaN below 1)", _R.FLOAT, "arccosh"),
    _unary("atanh", "inverse hyperbolic tangent (NaN outside [-1, 1])", _R.FLOAT, "arctanh"),
    _unary("reciprocal", "1 / x (floats)", _R.FLOAT, "reciprocal"),
    _unary("square", "x * x", _R.NUMERIC, "square"),
    _unary("sign", "-1, 0 or 1 (NaN stays NaN), in x's dtype", _R.NUMERIC, "sign"),
    _unary("trunc", "round towards 0", _R.SAME, _keep_int("trunc")),
    _unary("isnan", "x is NaN (bool)", _R.PREDICATE, "isnan"),
    _unary("isinf", "x is +-inf (bool)", _R.PREDICATE, "isinf"),
    _unary("isfinite", "x is neither NaN nor +-inf (bool)", _R.PREDICATE, "isfinite"),
    _unary("bitwise_invert", "~x (integers and bool)", _R.BITWISE, "invert"),
    _unary("astype", "convert to the node's dtype", _R.CAST, _identity),
    _unary("to_device", "identity; the runtime moves the input to the node's device", _R.CAST,
           _identity),
    # elementwise, binary
    _binary("add", "x + y", _R.SAME, "add"),
    _binary("subtract", "x - y", _R.NUMERIC, "subtract"),
    _binary("multiply", "x * y", _R.SAME, "multiply"),
    _binary("divide", "x / y (floats only)", _R.TRUE_DIVIDE, "true_divide"),
    _binary("floor_divide", "x // y, Python semantics; integer division by 0 gives 0", _R.NUMERIC,
            "floor_divide"),
    _binary("remainder", "x % y, sign of y; integer modulo 0 gives 0", _R.NUMERIC, "remainder"),
    _binary("pow", "x ** y", _R.NUMERIC, "power"),
    _binary("maximum", "larger of x and y, NaN propagating", _R.SAME, "maximum"),
    _binary("minimum", "smaller of x and y, NaN propagating", _R.SAME, "minimum"),
    _binary("hypot", "sqrt(x*x + y*y) without overflow", _R.FLOAT, "hypot"),
    _binary("atan2", "arctangent of x / y in the quadrant of (y, x)", _R.FLOAT, "arctan2"),
    _binary("logaddexp", "log(exp(x) + exp(y)) without overflow", _R.FLOAT, "logaddexp"),
    _binary("copysign", "|x| with the sign of y", _R.FLOAT, "copysign"),
    _binary("bitwise_and", "x & y (integers and bool)", _R.BITWISE, "bitwise_and"),
    _binary("bitwise_or", "x | y (integers and bool)", _R.BITWISE, "bitwise_or"),
    _binary("bitwise_xor", "x ^ y (integers and bool)", _R.BITWISE, "bitwise_xor"),
    _binary("equal", "x == y", _R.COMPARE, "equal"),
    _binary("not_equal", "x != y", _R.COMPARE, "not_equal"),
    _binary("less", "x < y", _R.COMPARE, "less"),
    _binary("less_equal", "x <= y", _R.COMPARE, "less_equal"),
    _binary("greater", "x > y", _R.COMPARE, "greater"),
    _binary("greater_equal", "x >= y", _R.COMPARE, "greater_equal"),
    _binary("logical_and", "x and y (bool)", _R.LOGICAL, "logical_and"),
    _binary("logical_or", "x or y (bool)", _R.LOGICAL, "logical_or"),
    # elementwise, ternary
    OpDef("where", Kind.ELEMENTWISE, 3, "x if cond else y", _R.SELECT, "where"),
    # reductions (attrs: axes, keepdims)
    _op("sum", Kind.REDUCE, 1, "sum over axes"),
    _op("prod", Kind.REDUCE, 1, "product over axes"),
    _op("max", Kind.REDUCE, 1, "maximum over axes, NaN propagating"),
    _op("min", Kind.REDUCE, 1, "minimum over axes, NaN propagating"),
    _op("argmax", Kind.REDUCE, 1, "index of the first maximum along one axis"),
    _op("argmin", Kind.REDUCE, 1, "index of the first minimum along one axis"),
    # movement
    _op("reshape", Kind.MOVEMENT, 1, "same elements in C order, new shape"),
    _op("permute", Kind.MOVEMENT, 1, "reorder axes (attrs: axes)"),
    _op("broadcast_to", Kind.MOVEMENT, 1,
        "repeat size-1 and missing leading axes to the node's shape"),
    _op("slice", Kind.MOVEMENT, 1,
        "strided window (attrs: starts, steps, keep); kept sizes in shape"),
    _op("concat", Kind.MOVEMENT, None, "join along an axis (attrs: axis)"),
    # linear algebra
    _op("matmul", Kind.MATMUL, 2, "batched matrix product over the last two axes"),
    # stencils
    _op("conv2d", Kind.STENCIL, 1,
        "2-D correlation over the last two axes (attrs: weights, border)"),
    # sliding windows over the spatial axes of (N, C, *spatial): see ir/windows.py
    _op("conv", Kind.WINDOW, 2,
        "grouped N-D convolution (cross-correlation) of x by weights (M, C/groups, *kernel) "
        "(attrs: strides, dilations, pads (begins, then ends), groups)"),
    _op("pool", Kind.WINDOW, 1,
        "max or sum over each window, padding reads as the identity (attrs: mode, kernel, "
        "strides, dilations, pads)"),
    # made by the compiler
    _op("fused_elementwise", Kind.FUSED, None,
        "a straight-line elementwise program (attrs: program)"),
    _op("fused_reduce", Kind.FUSED, None,
        "prologue program, reduction, optional epilogue in one kernel "
        "(attrs: reduce, axes, keepdims, in_shape, prologue, epilogue, n_prologue, "
        "reduce_dtype; inputs: prologue's, then epilogue's after the reduced value)"),
    _op("fused_matmul", Kind.FUSED, None,
        "matmul whose product passes through an elementwise epilogue "
        "(attrs: epilogue (input 0: the product), matmul_dtype; inputs: a, b, then "
        "the epilogue's others)"),
    _op("fused_conv", Kind.FUSED, None,
        "conv whose result passes through an elementwise epilogue, then maybe a pool or a "
        "reduction of every spatial axis (attrs: conv's, epilogue (input 0: the "
        "convolution), conv_dtype; with a pool: pool (its attrs) and conv_shape; with a "
        "reduction: reduce (mode, keepdims, epilogue: input 0 the reduced value) and "
        "conv_shape; inputs: x, weights, then the epilogue's others)"),
    _op("fused_stencil", Kind.FUSED, 1,
        "a pipeline of 2-D stencils and pointwise maths in one pass"),
    _op("fused_softmax", Kind.FUSED, 1,
        "exp(x - max(x)) / sum(exp(x - max(x))) over axes, the max and sum kept as dims "
        "(attrs: axes)"),
)}


def _with(*rules: DtypeRule) -> frozenset[str]:
    return frozenset(n for n, op in OPS.items() if op.dtype in rules)


ELEMENTWISE = frozenset(n for n, op in OPS.items() if op.kind is Kind.ELEMENTWISE)
ELEMENTWISE_UNARY = frozenset(n for n in ELEMENTWISE if OPS[n].arity == 1)
ELEMENTWISE_BINARY = frozenset(n for n in ELEMENTWISE if OPS[n].arity == 2)
COMPARISONS = _with(DtypeRule.COMPARE)
LOGICAL = _with(DtypeRule.LOGICAL)
# transcendental functions: float results, computed in float64 for integer operands
FLOAT_FUNCTIONS = _with(DtypeRule.FLOAT)
# ops with a float result for every operand dtype
FLOAT_RESULTS = _with(DtypeRule.FLOAT, DtypeRule.TRUE_DIVIDE)
# elementwise ops that return bool for any input dtype
PREDICATES = _with(DtypeRule.PREDICATE)
# elementwise ops defined on integers and bool only
BITWISE = _with(DtypeRule.BITWISE)
REDUCTIONS = frozenset(n for n, op in OPS.items() if op.kind is Kind.REDUCE)
# ops the array API leaves undefined for complex operands: those that need an order ...
COMPLEX_UNORDERED = frozenset({
    "maximum", "minimum", "less", "less_equal", "greater", "greater_equal", "floor", "ceil",
    "trunc", "floor_divide", "remainder", "relu", "max", "min", "argmax", "argmin"})
# ... and real functions of Hermes or the standard without a complex definition
REAL_ONLY = frozenset({"hypot", "atan2", "logaddexp", "copysign", "sigmoid"})
BORDERS = ("reflect101", "reflect", "replicate", "constant")


def kind_of(op: str) -> Kind:
    return OPS[op].kind
