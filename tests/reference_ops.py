"""NumPy/SciPy references of Hermes' elementwise ops, shared by the device tests."""

from __future__ import annotations

import numpy as np
from scipy import special


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, x.dtype.type(0))


def reciprocal(x: np.ndarray) -> np.ndarray:
    """``1 / x`` in floating point (NumPy's ``reciprocal`` truncates integers)."""
    return np.divide(1, x)


UNARY_MATH = {
    "negative": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": special.expit,
    "relu": relu,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "reciprocal": reciprocal,
    "square": np.square,
    "sign": np.sign,
    "trunc": np.trunc,
    "real": np.real,
    "imag": np.imag,
    "conj": np.conj,
}
# bool for every input dtype
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
ARITHMETIC = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "hypot": np.hypot,
    "atan2": np.arctan2,
    "logaddexp": np.logaddexp,
    "copysign": np.copysign,
}
# integers and bool only
BITWISE = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
BITWISE_UNARY = {"bitwise_invert": np.invert}
COMPARISONS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or}
# ops outside the tables above, with their NumPy references
OTHER = {"logical_not": np.logical_not, "where": np.where, "astype": np.ndarray.astype,
         "to_device": np.asarray}
