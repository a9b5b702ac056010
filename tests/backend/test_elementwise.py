"""Elementwise ops on every device, compared with NumPy: values, dtype and shape."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from reference_ops import (
    ARITHMETIC,
    BITWISE,
    BITWISE_UNARY,
    COMPARISONS,
    LOGICAL,
    PREDICATES,
    UNARY_MATH,
)

import hermes_nb as hm

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
SUPPORTED = {np.dtype(d) for d in DTYPES}
SHAPE = (5, 7)


UNARY = {**UNARY_MATH, **PREDICATES, **BITWISE_UNARY, "logical_not": np.logical_not}
# ops NumPy defines on more dtypes than Hermes promises
NUMERIC = {"int32", "int64", "float32", "float64"}
UNARY_ONLY = {"logical_not": {"bool"}, "relu": NUMERIC, "sigmoid": NUMERIC, "square": NUMERIC,
              "reciprocal": NUMERIC}
# inputs in the op's domain: (low, high) for ints, floats
UNARY_DOMAIN = {
    "log": ((1, 100), (0.01, 10.0)),
    "sqrt": ((0, 100), (0.0, 10.0)),
    "exp": ((-20, 20), (-5.0, 5.0)),
    "log1p": ((0, 100), (-0.9, 10.0)),
    "log2": ((1, 100), (0.01, 10.0)),
    "log10": ((1, 100), (0.01, 10.0)),
    "acosh": ((1, 100), (1.0, 10.0)),
    "atanh": ((-1, 1), (-0.99, 0.99)),
    "asin": ((-1, 1), (-1.0, 1.0)),
    "acos": ((-1, 1), (-1.0, 1.0)),
    "reciprocal": ((1, 20), (0.1, 4.0)),
}
LOOSE_UNARY = {"exp", "tanh", "sigmoid", "sin", "cos", "log", "expm1", "log1p", "log2", "log10",
               "sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh"}

BINARY = {**ARITHMETIC, **COMPARISONS, **LOGICAL, **BITWISE}
BINARY_ONLY = {"logical_and": {"bool"}, "logical_or": {"bool"}}
LOOSE_BINARY = {"pow", "remainder", "hypot", "atan2", "logaddexp"}
OPERATORS = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "remainder": operator.mod,
    "pow": operator.pow,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "logical_and": operator.and_,
    "logical_or": operator.or_,
}


def _numpy_defines(fn, dtype: str, arity: int) -> bool:
    """NumPy accepts ``dtype`` inputs and returns a dtype Hermes supports."""
    args = [np.ones(2, dtype=dtype)] * arity
    try:
        with np.errstate(all="ignore"):
            out = fn(*args)
    except (TypeError, ValueError):
        return False
    return np.asarray(out).dtype in SUPPORTED


UNARY_CASES = [
    pytest.param(op, dt, id=f"{op}-{dt}")
    for op, fn in UNARY.items()
    for dt in DTYPES
    if dt in UNARY_ONLY.get(op, set(DTYPES)) and _numpy_defines(fn, dt, 1)
]
BINARY_CASES = [
    pytest.param(op, dt, id=f"{op}-{dt}")
    for op, fn in BINARY.items()
    for dt in DTYPES
    if dt in BINARY_ONLY.get(op, set(DTYPES)) and _numpy_defines(fn, dt, 2)
]


def np_ref(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


def unary_input(op: str, dtype: str, sample) -> np.ndarray:
    ints, floats = UNARY_DOMAIN.get(op, ((-20, 20), (-4.0, 4.0)))
    lo, hi = floats if np.dtype(dtype).kind == "f" else ints
    return sample(SHAPE, dtype, low=lo, high=hi, seed=11)


def binary_inputs(op: str, dtype: str, sample) -> tuple[np.ndarray, np.ndarray]:
    kind = np.dtype(dtype).kind
    if kind == "b":
        return sample(SHAPE, dtype, seed=1), sample(SHAPE, dtype, seed=2)
    if op in {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}:
        # small integers so that ties occur
        x = sample(SHAPE, "int64", low=-3, high=3, seed=1).astype(dtype)
        y = sample(SHAPE, "int64", low=-3, high=3, seed=2).astype(dtype)
        return x, y
    if op == "pow":
        if kind == "f":
            return (
                sample(SHAPE, dtype, low=0.1, high=4.0, seed=1),
                sample(SHAPE, dtype, low=-3.0, high=3.0, seed=2),
            )
        return (
            sample(SHAPE, dtype, low=-6, high=6, seed=1),
            sample(SHAPE, dtype, low=0, high=5, seed=2),
        )
    if op in {"divide", "floor_divide", "remainder"}:
        if kind == "f":
            x = sample(SHAPE, dtype, low=-10.0, high=10.0, seed=1)
            mag = sample(SHAPE, dtype, low=0.5, high=4.0, seed=2)
            sign = np.where(sample(SHAPE, "bool", seed=3), 1, -1).astype(dtype)
            return x, mag * sign
        x = sample(SHAPE, dtype, low=-50, high=50, seed=1)
        y = sample(SHAPE, dtype, low=-7, high=7, seed=2)
        if op == "divide":
            y[y == 0] = 3
        else:
            y.flat[0] = 0  # NumPy: integer // 0 and % 0 give 0
        return x, y
    return sample(SHAPE, dtype, seed=1), sample(SHAPE, dtype, seed=2)


# ----------------------------------------------------------------------------
# unary
# ----------------------------------------------------------------------------


def check_batched(device, each_case, assert_close, dtype, cases):
    """``cases``: (label, Hermes fn, its inputs, NumPy's result, loose). Those of one result
    dtype run together in one kernel (``each_case``), each fn on its own inputs; on float
    inputs twice, with a float row selector (OpenCL's vector form, for ops that have one)
    and an int32 one (the scalar form). Each result is compared with NumPy's, named by its
    label when it differs."""
    by_result: dict[np.dtype, list] = {}
    for case in cases:
        by_result.setdefault(case[3].dtype, []).append(case)
    selectors = [dtype, "int32"] if np.dtype(dtype).kind == "f" else ["int32"]
    for group in by_result.values():
        arrays, fns = [], []
        for _, fn, inputs, _, _ in group:
            fns.append(_on_slice(fn, len(arrays), len(inputs)))
            arrays.extend(inputs)
        for selector in selectors:
            got = each_case(device, fns, *arrays, tile=True, selector=selector)
            for (label, _, _, expected, loose), g in zip(group, got):
                try:
                    assert_close(g, expected, loose=loose)
                except AssertionError as exc:
                    raise AssertionError(f"{label} ({selector} row selector): {exc}") from None


def _on_slice(fn, start: int, count: int):
    """``fn`` applied to ``count`` of the batch's inputs, from ``start``."""
    return lambda *ts: fn(*ts[start:start + count])


def _dtypes_of(cases) -> list[str]:
    return [d for d in DTYPES if any(c.values[1] == d for c in cases)]


@pytest.mark.parametrize("dtype", _dtypes_of(UNARY_CASES))
def test_unary(device, each_case, assert_close, sample, dtype):
    cases = []
    for op in (c.values[0] for c in UNARY_CASES if c.values[1] == dtype):
        x = unary_input(op, dtype, sample)
        cases.append((op, getattr(hm, op), (x,), np_ref(UNARY[op], x), op in LOOSE_UNARY))
    check_batched(device, each_case, assert_close, dtype, cases)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_half_to_even(device, run_on, assert_close, dtype):
    x = np.array(
        [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, -0.51, 1e7 + 0.5, 2.675],
        dtype=dtype,
    )
    assert_close(run_on(device, hm.round, x), np.round(x))
    assert_close(run_on(device, hm.floor, x), np.floor(x))
    assert_close(run_on(device, hm.ceil, x), np.ceil(x))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_unary_operators(device, run_on, assert_close, sample, dtype):
    x = sample(SHAPE, dtype, seed=5)
    assert_close(run_on(device, operator.neg, x), -x)
    assert_close(run_on(device, abs, x), np.abs(x))
    assert_close(run_on(device, lambda t: -abs(t), x), -np.abs(x))


def test_invert_bool(device, run_on, assert_close, sample):
    x = sample(SHAPE, "bool", seed=6)
    assert_close(run_on(device, operator.invert, x), ~x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opname", ["and", "or", "xor", "invert", "lshift"])
def test_bitwise_operators_reject_floats(device, dtype, opname):
    # & | ^ ~ << are the array API's bitwise operators: integers and bools only
    with hm.device(device):
        t = hm.ones((3,), dtype=dtype)
        with pytest.raises(TypeError, match="integer"):
            if opname == "and":
                _ = t & t
            elif opname == "or":
                _ = t | t
            elif opname == "xor":
                _ = t ^ t
            elif opname == "lshift":
                _ = t << 1
            else:
                _ = ~t


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_bitwise_operators_on_integers(device, run_on, assert_close, sample, dtype):
    x, y = sample(SHAPE, dtype, seed=7), sample(SHAPE, dtype, seed=8)
    got = run_on(device, lambda a, b: ((a & b) | (a ^ ~b)) + (a << 3) + (b >> 2), x, y)
    assert_close(got, ((x & y) | (x ^ ~y)) + (x << 3) + (y >> 2), dtype=dtype)


# ----------------------------------------------------------------------------
# binary
# ----------------------------------------------------------------------------


def _binary_cases(dtype, sample, fns):
    cases = []
    for op in (c.values[0] for c in BINARY_CASES if c.values[1] == dtype and c.values[0] in fns):
        x, y = binary_inputs(op, dtype, sample)
        cases.append((op, fns[op], (x, y), np_ref(BINARY[op], x, y), op in LOOSE_BINARY))
    return cases


@pytest.mark.parametrize("dtype", _dtypes_of(BINARY_CASES))
def test_binary_function(device, each_case, assert_close, sample, dtype):
    functions = {op: getattr(hm, op) for op in BINARY}
    check_batched(device, each_case, assert_close, dtype, _binary_cases(dtype, sample, functions))


@pytest.mark.parametrize("dtype", _dtypes_of([c for c in BINARY_CASES if c.values[0] in OPERATORS]))
def test_binary_operator(device, each_case, assert_close, sample, dtype):
    check_batched(device, each_case, assert_close, dtype, _binary_cases(dtype, sample, OPERATORS))


def test_integer_division_by_zero_gives_zero(device, run_on, assert_close):
    x = np.array([7, -7, 0, 5, -5, 2**31 - 1], dtype=np.int32)
    y = np.zeros_like(x)
    assert_close(run_on(device, hm.floor_divide, x, y), np_ref(np.floor_divide, x, y))
    assert_close(run_on(device, hm.remainder, x, y), np_ref(np.remainder, x, y))
    x64 = x.astype(np.int64) * 3
    assert_close(run_on(device, operator.floordiv, x64, 0), np_ref(np.floor_divide, x64, 0))
    assert_close(run_on(device, operator.mod, x64, 0), np_ref(np.remainder, x64, 0))


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_floor_divide_remainder_signs(device, run_on, assert_close, dtype):
    # Python semantics: floor division, remainder has the sign of the divisor
    x = np.array([7, -7, 7, -7, 6, -6, 0, 1, -1], dtype=dtype)
    y = np.array([2, 2, -2, -2, 3, -3, 5, -4, 4], dtype=dtype)
    assert_close(run_on(device, hm.floor_divide, x, y), x // y)
    assert_close(run_on(device, hm.remainder, x, y), x % y)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_negative_base_integer_exponent(device, run_on, assert_close, dtype):
    x = np.array([-2.0, -3.0, -0.5, -1.0, 2.0, 0.0, 0.0], dtype=dtype)
    y = np.array([3.0, 2.0, -2.0, 7.0, 0.5, 2.0, 0.0], dtype=dtype)
    assert_close(run_on(device, hm.pow, x, y), np.power(x, y), loose=True)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_pow_exact(device, run_on, assert_close, dtype):
    x = np.array([3, -3, 2, 7, -1, 0, 10], dtype=dtype)
    y = np.array([19, 19, 30, 10, 5, 0, 9], dtype=dtype)
    assert_close(run_on(device, operator.pow, x, y), x**y)


# ----------------------------------------------------------------------------
# broadcasting, scalars, NumPy operands
# ----------------------------------------------------------------------------

BROADCAST_SHAPES = [
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (3, 2)),
    ((5, 1, 1), (1, 6, 1)),
    ((1,), (2, 3, 1)),
    ((2, 3, 4, 5), (3, 1, 5)),
]


@pytest.mark.parametrize(("sx", "sy"), BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "greater", "divide"])
def test_broadcasting(device, run_on, assert_close, sample, op, sx, sy):
    x = sample(sx, "float32", seed=1)
    y = sample(sy, "float32", low=0.5, high=3.0, seed=2)
    assert_close(run_on(device, getattr(hm, op), x, y), np_ref(BINARY[op], x, y))
    assert_close(run_on(device, getattr(hm, op), y, x), np_ref(BINARY[op], y, x))


@pytest.mark.parametrize(("sx", "sy"), [((3, 4), (5,)), ((2, 3), (3, 2)), ((4, 2), (3, 1, 3))])
def test_broadcast_mismatch_raises_at_build(device, sx, sy):
    with hm.device(device):
        a, b = hm.zeros(sx, dtype="float32"), hm.zeros(sy, dtype="float32")
        with pytest.raises(ValueError, match="add") as info:
            hm.add(a, b)
        assert str(sx[-1]) in str(info.value)
        with pytest.raises(ValueError):
            a * b


SCALAR_EXPRS = {
    "t+s": lambda t, s: t + s,
    "s+t": lambda t, s: s + t,
    "t-s": lambda t, s: t - s,
    "s-t": lambda t, s: s - t,
    "t*s": lambda t, s: t * s,
    "s*t": lambda t, s: s * t,
    "t/s": lambda t, s: t / s,
    "s/t": lambda t, s: s / t,
    "t//s": lambda t, s: t // s,
    "s//t": lambda t, s: s // t,
    "t%s": lambda t, s: t % s,
    "s%t": lambda t, s: s % t,
    "t**2": lambda t, s: t**2,
    "t==s": lambda t, s: t == s,
    "t<s": lambda t, s: t < s,
    "s<t": lambda t, s: s < t,
    "t>=s": lambda t, s: t >= s,
    "s!=t": lambda t, s: s != t,
}


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("scalar", [3, 2.5], ids=["int", "float"])
def test_python_scalar_operands(device, each_case, assert_close, sample, dtype, scalar):
    x = sample(SHAPE, dtype, low=1, high=9, seed=3)  # positive: no division by zero
    cases = [(expr, lambda t, fn=fn: fn(t, scalar), (x,), np_ref(fn, x, scalar), True)
             for expr, fn in SCALAR_EXPRS.items()]
    check_batched(device, each_case, assert_close, dtype, cases)


NUMPY_EXPRS = {
    "t+a": lambda t, a: t + a,
    "a+t": lambda t, a: a + t,
    "a-t": lambda t, a: a - t,
    "a*t": lambda t, a: a * t,
    "a/t": lambda t, a: a / t,
    "a//t": lambda t, a: a // t,
    "a%t": lambda t, a: a % t,
    "a**t": lambda t, a: a**t,
    "a<t": lambda t, a: a < t,
    "a==t": lambda t, a: a == t,
}


@pytest.mark.parametrize("expr", list(NUMPY_EXPRS))
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_numpy_array_operands(device, run_on, assert_close, sample, expr, dtype):
    fn = NUMPY_EXPRS[expr]
    x = sample((4, 5), dtype, low=1, high=4, seed=3)
    a = sample((5,), dtype, low=1, high=4, seed=4)  # broadcasts against x

    def build(t):
        return fn(t, a)  # `a` stays a NumPy array: the tensor must win dispatch

    assert_close(run_on(device, build, x), np_ref(fn, x, a), loose=True)


# ----------------------------------------------------------------------------
# where, clip, astype
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_where(device, run_on, assert_close, sample, dtype):
    c = sample(SHAPE, "bool", seed=7)
    x = sample(SHAPE, dtype, seed=8)
    y = sample(SHAPE, dtype, seed=9)
    assert_close(run_on(device, hm.where, c, x, y), np.where(c, x, y))


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_where_broadcast_and_scalars(device, run_on, assert_close, sample, dtype):
    c = sample((3, 1), "bool", seed=7)
    x = sample((1, 4), dtype, seed=8)
    y = sample((), dtype, seed=9)
    assert_close(run_on(device, hm.where, c, x, y), np.where(c, x, y))
    assert_close(run_on(device, lambda c, x: hm.where(c, x, 0), c, x), np.where(c, x, 0))
    assert_close(run_on(device, lambda c, x: hm.where(c, 1, x), c, x), np.where(c, 1, x))
    xs = sample((3, 4), dtype, seed=10)
    assert_close(run_on(device, lambda t: hm.where(t > 0, t, -t), xs), np.where(xs > 0, xs, -xs))


@pytest.mark.parametrize(
    ("dtype", "lo", "hi"),
    [
        ("int32", -5, 7),
        ("int64", None, 3),
        ("int64", -2, None),
        ("float32", -1.5, 2.25),
        ("float64", None, 0.5),
        ("float32", -0.5, None),
    ],
)
def test_clip(device, run_on, assert_close, sample, dtype, lo, hi):
    x = sample(SHAPE, dtype, seed=12)
    got = run_on(device, lambda t: hm.clip(t, min=lo, max=hi), x)
    assert_close(got, np.clip(x, lo, hi))


ASTYPE_SOURCES = {
    "bool": np.array([True, False, True, True, False, False, True, False]),
    "int32": np.array([-5, 0, 1, 2, 7, -2147483647, 2147483647, 1000], dtype=np.int32),
    "int64": np.array([-5, 0, 1, 2, 7, -2147483647, 2147483647, -1000], dtype=np.int64),
    "float32": np.array([-3.75, -1.5, -0.5, 0.0, 0.5, 2.5, 7.9, 100.25], dtype=np.float32),
    "float64": np.array([-3.75, -1.5, -0.5, 0.0, 0.5, 2.5, 7.9, 1e9 + 0.7], dtype=np.float64),
}


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_astype(device, run_on, assert_close, src, dst):
    x = ASTYPE_SOURCES[src].reshape(2, 4)
    expected = x.astype(dst)
    assert_close(run_on(device, lambda t: t.astype(dst), x), expected)
    assert_close(run_on(device, lambda t: hm.astype(t, np.dtype(dst)), x), expected)


def test_astype_float64_to_float32_rounds(device, run_on, assert_close):
    # correctly rounded (to nearest even), so compared exactly
    x = np.array([1 / 3, 3.4e38, 16777217.0, 16777219.0, -0.1, 1e-30], dtype=np.float64)
    got = run_on(device, lambda t: t.astype("float32"), x)
    assert_close(got, x.astype(np.float32), rtol=0, atol=0)


# ----------------------------------------------------------------------------
# graphs of several ops
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_chain(device, run_on, assert_close, sample, dtype):
    x = sample((8, 9), dtype, seed=20)
    y = sample((8, 9), dtype, seed=21)

    def build(a, b):
        s = (a * 2 + 1 - b) / (abs(b) + 1)
        return hm.where(s > 0, hm.sqrt(abs(s)), hm.tanh(s)) * hm.exp(-(a * a))

    with np.errstate(all="ignore"):
        s = (x * 2 + 1 - y) / (np.abs(y) + 1)
        expected = np.where(s > 0, np.sqrt(np.abs(s)), np.tanh(s)) * np.exp(-(x * x))
    assert_close(run_on(device, build, x, y), expected, loose=True)


def test_shared_subexpression(device, run_on, assert_close, sample):
    x = sample((6, 6), "float32", seed=22)

    def build(t):
        a = t * 3 - 1
        b = a * a + a  # `a` used twice (diamond graph)
        return b - a, hm.relu(a), a

    got_1, got_2, got_3 = run_on(device, build, x)
    a = x * np.float32(3) - np.float32(1)
    assert_close(got_1, a * a + a - a)
    assert_close(got_2, np.maximum(a, 0))
    assert_close(got_3, a)


def test_hm_compute_several(device, assert_close, sample):
    x = sample((4, 5), "float64", seed=23)
    with hm.device(device):
        t = hm.asarray(x)
        shared = hm.exp(t) + 1
        a = shared * 2
        b = shared.sum(axis=0)
    out = hm.compute(a, b)
    assert isinstance(out, tuple)
    assert len(out) == 2
    assert all(isinstance(o, hm.Tensor) for o in out)
    ref = np.exp(x) + 1
    assert_close(out[0].numpy(), ref * 2)
    assert_close(out[1].numpy(), ref.sum(axis=0))
    # computing again, or with .compute(), gives the same values
    assert_close(a.compute().numpy(), ref * 2)
    assert_close(np.asarray(b), ref.sum(axis=0))


def test_mixed_int_float_chain(device, run_on, assert_close, sample):
    i = sample((5, 5), "int32", seed=24)
    f = sample((5, 5), "float32", seed=25)

    def build(a, b):
        return (a * 2 + 1) * b  # int32 * float32 -> float64

    assert_close(run_on(device, build, i, f), (i * 2 + 1) * f, dtype="float64")


def test_wrong_argument_types_raise_type_error_at_build(device):
    with hm.device(device):
        t = hm.ones((3,), dtype="float32")
        with pytest.raises(TypeError):
            hm.add(t, "2")
        with pytest.raises(TypeError):
            _ = t * object()
        with pytest.raises(TypeError):
            hm.exp(t, t)
        with pytest.raises(TypeError):
            hm.sum(t, axis=0.5)
        with pytest.raises(TypeError):
            t.astype("not-a-dtype")


# ----------------------------------------------------------------------------
# array-API functions: predicates, domains, bitwise
# ----------------------------------------------------------------------------

SPECIAL_VALUES = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 1e30, 3e-39]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(PREDICATES))
def test_predicates_on_nan_and_inf(device, run_on, assert_close, op, dtype):
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL_VALUES, dtype=dtype)
    got = run_on(device, getattr(hm, op), x)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, PREDICATES[op](x))
    # fused with arithmetic around it, bool result used as a number
    fused = run_on(device, lambda t: hm.where(getattr(hm, op)(t * 2), t, -1.0) + 1, x)
    with np.errstate(all="ignore"):
        assert_close(fused, np.where(PREDICATES[op](x * 2), x, -1.0) + 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("op", "values"), [
    ("asin", [-1.5, -1.0, 0.5, 1.0, 2.0]), ("acos", [-1.5, -1.0, 0.5, 1.0, 2.0]),
    ("atanh", [-2.0, -1.0, 0.5, 1.0, 1.5]), ("acosh", [-1.0, 0.5, 1.0, 2.0, 10.0]),
    ("log1p", [-2.0, -1.0, -1e-10, 1e-10, 3.0]), ("log2", [-1.0, 0.0, 0.5, 8.0, 1e30]),
    ("log10", [-1.0, 0.0, 0.5, 1000.0, 1e30]), ("expm1", [-1e-10, 1e-10, -50.0, 0.5, 80.0]),
    ("reciprocal", [-0.0, 0.0, 4.0, -0.5, 1e30]), ("sign", [-0.0, 0.0, -3.0, 2.0, np.nan]),
    ("trunc", [-2.5, -0.5, 0.5, 2.7, 1e30]),
])
def test_edge_values(device, run_on, assert_close, dtype, op, values):
    """Outside the domain NaN, at its edges +-inf, near 0 exact: as NumPy."""
    x = np.array(values, dtype=dtype)
    got = run_on(device, getattr(hm, op), x)
    expected = np_ref(UNARY_MATH[op], x)
    assert_close(got, expected, loose=True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logaddexp_and_copysign_specials(device, run_on, assert_close, dtype):
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 700.0, -3.0], dtype=dtype)
    x, y = v[:, None], v[None, :]
    for op in ("logaddexp", "copysign", "atan2"):
        got = run_on(device, getattr(hm, op), x, y)
        expected = np_ref(ARITHMETIC[op], x, y)
        assert_close(got, expected, loose=True)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    got = run_on(device, hm.copysign, x, y)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.copysign(x, y)))


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64"])
def test_bitwise(device, run_on, assert_close, sample, dtype):
    x, y = sample(SHAPE, dtype, low=-1000, high=1000, seed=30), sample(SHAPE, dtype, seed=31)
    for op, fn in BITWISE.items():
        assert_close(run_on(device, getattr(hm, op), x, y), fn(x, y))
    assert_close(run_on(device, hm.bitwise_invert, x), np.invert(x))
    # fused: (x & y) ^ ~x | y
    got = run_on(device, lambda a, b: hm.bitwise_or(hm.bitwise_xor(hm.bitwise_and(a, b),
                                                                    hm.bitwise_invert(a)), b), x, y)
    assert_close(got, ((x & y) ^ ~x) | y)


def test_bitwise_promotes_like_numpy(device, run_on, assert_close):
    x = np.array([-7, 0, 5, 2**31 - 1], dtype=np.int32)
    y = np.array([3, -1, 6, 2**40], dtype=np.int64)
    assert_close(run_on(device, hm.bitwise_and, x, y), np.bitwise_and(x, y), dtype="int64")
    assert_close(run_on(device, lambda t: hm.bitwise_xor(t, 6), x), x ^ 6, dtype="int32")


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_rejects_floats(device, op):
    with hm.device(device):
        f, i = hm.ones((3,), dtype="float32"), hm.ones((3,), dtype="int32")
        with pytest.raises(TypeError, match=rf"^{op}: argument x2 has dtype float32; {op} is "
                                             r"defined for integer and bool dtypes only"):
            getattr(hm, op)(i, f)
        with pytest.raises(TypeError, match=rf"^{op}: argument x2 has a Python float \(1.5\)"):
            getattr(hm, op)(i, 1.5)
        with pytest.raises(TypeError, match=r"^bitwise_invert: argument x has dtype float32; "
                                            r"bitwise_invert is defined for integer and bool"):
            hm.bitwise_invert(f)


@pytest.mark.parametrize(("op", "dtype", "out"), [
    ("isnan", "int32", "bool"), ("isfinite", "bool", "bool"), ("sign", "int64", "int64"),
    ("trunc", "int32", "int32"), ("trunc", "float32", "float32"), ("square", "int32", "int32"),
    ("asin", "int32", "float64"), ("reciprocal", "float32", "float32"),
])
def test_result_dtypes(op, dtype, out):
    assert getattr(hm, op)(hm.ones((2,), dtype=dtype)).dtype == np.dtype(out)


@pytest.mark.parametrize(("op", "arity"), [("square", 1), ("sign", 1), ("reciprocal", 1),
                                           ("asin", 1), ("logaddexp", 2)])
def test_bool_rejected_for_numeric_functions(op, arity):
    b = hm.ones((2,), dtype="bool")
    with pytest.raises(TypeError, match=rf"^{op}: expected a numeric tensor, got dtype bool"):
        getattr(hm, op)(*[b] * arity)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_new_functions_fused_chain(device, run_on, assert_close, sample, dtype):
    x = sample((8, 9), dtype, low=-0.9, high=0.9, seed=40)
    y = sample((8, 9), dtype, low=0.5, high=2.0, seed=41)

    def build(a, b, lib):
        asin, atan, atanh = (getattr(lib, n) for n in ("asin", "atan", "atanh")) if lib is hm \
            else (np.arcsin, np.arctan, np.arctanh)
        s = lib.expm1(a) * lib.log1p(b) + lib.square(asin(a)) - lib.sign(a) * lib.trunc(b * 3)
        t = lib.logaddexp(s, lib.log2(b)) + lib.copysign(lib.cosh(a), a) * lib.reciprocal(b)
        u = atan(t) + lib.tan(a) + lib.sinh(a) - atanh(a * 0.5) + lib.log10(b)
        return lib.where(lib.isfinite(u), u, 0.0)

    got = run_on(device, lambda a, b: build(a, b, hm), x, y)
    with np.errstate(all="ignore"):
        assert_close(got, build(x, y, np), loose=True)
    with hm.device(device):
        out = build(hm.asarray(x), hm.asarray(y), hm)
    if "fused_elementwise" in device.fused_ops:
        assert len(out.explain().kernels) == 1  # the whole chain is one fused kernel
