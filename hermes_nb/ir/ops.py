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
"""

from __future__ import annotations

from enum import Enum


class Kind(Enum):
    SOURCE = "source"
    ELEMENTWISE = "elementwise"
    REDUCE = "reduce"
    MOVEMENT = "movement"
    MATMUL = "matmul"
    STENCIL = "stencil"
    FUSED = "fused"


# op name -> (kind, arity or None for variadic, one-line description)
OPS: dict[str, tuple[Kind, int | None, str]] = {
    # sources
    "constant": (Kind.SOURCE, 0, "a host array captured at build time (attrs: value)"),
    "random": (Kind.SOURCE, 0, "seeded random numbers (attrs: distribution, seed, params)"),
    "full": (Kind.SOURCE, 0, "an array filled with one value (attrs: fill_value)"),
    "arange": (Kind.SOURCE, 0, "evenly spaced values (attrs: start, step)"),
    "buffer": (Kind.SOURCE, 0, "a value already resident on a device (attrs: handle)"),
    # elementwise, unary
    "negative": (Kind.ELEMENTWISE, 1, "-x"),
    "abs": (Kind.ELEMENTWISE, 1, "|x|"),
    "exp": (Kind.ELEMENTWISE, 1, "e**x"),
    "log": (Kind.ELEMENTWISE, 1, "natural logarithm"),
    "sqrt": (Kind.ELEMENTWISE, 1, "square root"),
    "sin": (Kind.ELEMENTWISE, 1, "sine"),
    "cos": (Kind.ELEMENTWISE, 1, "cosine"),
    "tanh": (Kind.ELEMENTWISE, 1, "hyperbolic tangent"),
    "sigmoid": (Kind.ELEMENTWISE, 1, "1 / (1 + exp(-x))"),
    "relu": (Kind.ELEMENTWISE, 1, "maximum(x, 0), NaN propagating"),
    "floor": (Kind.ELEMENTWISE, 1, "round towards -inf"),
    "ceil": (Kind.ELEMENTWISE, 1, "round towards +inf"),
    "round": (Kind.ELEMENTWISE, 1, "round half to even"),
    "logical_not": (Kind.ELEMENTWISE, 1, "not x (bool)"),
    "expm1": (Kind.ELEMENTWISE, 1, "e**x - 1, exact near 0"),
    "log1p": (Kind.ELEMENTWISE, 1, "log(1 + x), exact near 0"),
    "log2": (Kind.ELEMENTWISE, 1, "base-2 logarithm"),
    "log10": (Kind.ELEMENTWISE, 1, "base-10 logarithm"),
    "sinh": (Kind.ELEMENTWISE, 1, "hyperbolic sine"),
    "cosh": (Kind.ELEMENTWISE, 1, "hyperbolic cosine"),
    "tan": (Kind.ELEMENTWISE, 1, "tangent"),
    "asin": (Kind.ELEMENTWISE, 1, "arcsine (NaN outside [-1, 1])"),
    "acos": (Kind.ELEMENTWISE, 1, "arccosine (NaN outside [-1, 1])"),
    "atan": (Kind.ELEMENTWISE, 1, "arctangent"),
    "asinh": (Kind.ELEMENTWISE, 1, "inverse hyperbolic sine"),
    "acosh": (Kind.ELEMENTWISE, 1, "inverse hyperbolic cosine (NaN below 1)"),
    "atanh": (Kind.ELEMENTWISE, 1, "inverse hyperbolic tangent (NaN outside [-1, 1])"),
    "reciprocal": (Kind.ELEMENTWISE, 1, "1 / x (floats)"),
    "square": (Kind.ELEMENTWISE, 1, "x * x"),
    "sign": (Kind.ELEMENTWISE, 1, "-1, 0 or 1 (NaN stays NaN), in x's dtype"),
    "trunc": (Kind.ELEMENTWISE, 1, "round towards 0"),
    "isnan": (Kind.ELEMENTWISE, 1, "x is NaN (bool)"),
    "isinf": (Kind.ELEMENTWISE, 1, "x is +-inf (bool)"),
    "isfinite": (Kind.ELEMENTWISE, 1, "x is neither NaN nor +-inf (bool)"),
    "bitwise_invert": (Kind.ELEMENTWISE, 1, "~x (integers and bool)"),
    "astype": (Kind.ELEMENTWISE, 1, "convert to the node's dtype"),
    "to_device": (Kind.ELEMENTWISE, 1, "identity; the runtime moves the input to the node's device"),
    # elementwise, binary
    "add": (Kind.ELEMENTWISE, 2, "x + y"),
    "subtract": (Kind.ELEMENTWISE, 2, "x - y"),
    "multiply": (Kind.ELEMENTWISE, 2, "x * y"),
    "divide": (Kind.ELEMENTWISE, 2, "x / y (floats only)"),
    "floor_divide": (Kind.ELEMENTWISE, 2, "x // y, Python semantics; integer division by 0 gives 0"),
    "remainder": (Kind.ELEMENTWISE, 2, "x % y, sign of y; integer modulo 0 gives 0"),
    "pow": (Kind.ELEMENTWISE, 2, "x ** y"),
    "maximum": (Kind.ELEMENTWISE, 2, "larger of x and y, NaN propagating"),
    "minimum": (Kind.ELEMENTWISE, 2, "smaller of x and y, NaN propagating"),
    "hypot": (Kind.ELEMENTWISE, 2, "sqrt(x*x + y*y) without overflow"),
    "atan2": (Kind.ELEMENTWISE, 2, "arctangent of x / y in the quadrant of (y, x)"),
    "logaddexp": (Kind.ELEMENTWISE, 2, "log(exp(x) + exp(y)) without overflow"),
    "copysign": (Kind.ELEMENTWISE, 2, "|x| with the sign of y"),
    "bitwise_and": (Kind.ELEMENTWISE, 2, "x & y (integers and bool)"),
    "bitwise_or": (Kind.ELEMENTWISE, 2, "x | y (integers and bool)"),
    "bitwise_xor": (Kind.ELEMENTWISE, 2, "x ^ y (integers and bool)"),
    "equal": (Kind.ELEMENTWISE, 2, "x == y"),
    "not_equal": (Kind.ELEMENTWISE, 2, "x != y"),
    "less": (Kind.ELEMENTWISE, 2, "x < y"),
    "less_equal": (Kind.ELEMENTWISE, 2, "x <= y"),
    "greater": (Kind.ELEMENTWISE, 2, "x > y"),
    "greater_equal": (Kind.ELEMENTWISE, 2, "x >= y"),
    "logical_and": (Kind.ELEMENTWISE, 2, "x and y (bool)"),
    "logical_or": (Kind.ELEMENTWISE, 2, "x or y (bool)"),
    # elementwise, ternary
    "where": (Kind.ELEMENTWISE, 3, "x if cond else y"),
    # reductions (attrs: axes, keepdims)
    "sum": (Kind.REDUCE, 1, "sum over axes"),
    "prod": (Kind.REDUCE, 1, "product over axes"),
    "max": (Kind.REDUCE, 1, "maximum over axes, NaN propagating"),
    "min": (Kind.REDUCE, 1, "minimum over axes, NaN propagating"),
    "argmax": (Kind.REDUCE, 1, "index of the first maximum along one axis"),
    "argmin": (Kind.REDUCE, 1, "index of the first minimum along one axis"),
    # movement
    "reshape": (Kind.MOVEMENT, 1, "same elements in C order, new shape"),
    "permute": (Kind.MOVEMENT, 1, "reorder axes (attrs: axes)"),
    "broadcast_to": (Kind.MOVEMENT, 1, "repeat size-1 and missing leading axes to the node's shape"),
    "slice": (Kind.MOVEMENT, 1, "strided window (attrs: starts, steps, keep); kept sizes in shape"),
    "concat": (Kind.MOVEMENT, None, "join along an axis (attrs: axis)"),
    # linear algebra
    "matmul": (Kind.MATMUL, 2, "batched matrix product over the last two axes"),
    # stencils
    "conv2d": (Kind.STENCIL, 1, "2-D correlation over the last two axes (attrs: weights, border)"),
    # made by the compiler
    "fused_elementwise": (Kind.FUSED, None, "a straight-line elementwise program (attrs: program)"),
    "fused_reduce": (Kind.FUSED, None, "prologue program, reduction, optional epilogue in one kernel "
                     "(attrs: reduce, axes, keepdims, in_shape, prologue, epilogue, n_prologue, "
                     "reduce_dtype; inputs: prologue's, then epilogue's after the reduced value)"),
    "fused_matmul": (Kind.FUSED, None, "matmul whose product passes through an elementwise epilogue "
                     "(attrs: epilogue (input 0: the product), matmul_dtype; inputs: a, b, then "
                     "the epilogue's others)"),
    "fused_stencil": (Kind.FUSED, 1, "a pipeline of 2-D stencils and pointwise maths in one pass"),
}

ELEMENTWISE_UNARY = frozenset(n for n, (k, a, _) in OPS.items() if k is Kind.ELEMENTWISE and a == 1)
ELEMENTWISE_BINARY = frozenset(n for n, (k, a, _) in OPS.items() if k is Kind.ELEMENTWISE and a == 2)
COMPARISONS = frozenset(
    {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
)
LOGICAL = frozenset({"logical_and", "logical_or", "logical_not"})
FLOAT_FUNCTIONS = frozenset({
    "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "hypot", "expm1", "log1p", "log2",
    "log10", "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    "reciprocal", "atan2", "logaddexp", "copysign",
})
# elementwise ops that return bool for any input dtype
PREDICATES = frozenset({"isnan", "isinf", "isfinite"})
# elementwise ops defined on integers and bool only
BITWISE = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert"})
REDUCTIONS = frozenset(n for n, (k, _, _) in OPS.items() if k is Kind.REDUCE)
BORDERS = ("reflect101", "reflect", "replicate", "constant")


def kind_of(op: str) -> Kind:
    return OPS[op][0]
