"""Dtype behaviour on every device: NumPy 2 promotion (incl. weak Python scalars),
NaN/±Inf propagation, zero-size and 0-d tensors, float64 and int64 precision."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from reference_ops import ARITHMETIC, COMPARISONS, UNARY_MATH

import hermes_nb as hm
from hermes_nb.codegen.c_source import VECTOR_FLOAT_FORMS
from hermes_nb.ir import dtypes

# the real dtypes: these tests order values (maximum, <, max), which complex numbers have
# not; the complex dtypes have tests/backend/test_complex.py
DTYPES = [d for d in dtypes.NAMES if np.dtype(d).kind != "c"]
# every pair of these computes on every device; pairs with the other integer dtypes are
# computed for ``add`` here (each op family is in test_int_dtypes.py) and checked at build
# time for the other ops: a kernel build per pair and op would take minutes on OpenCL
CORE = ["bool", "int32", "int64", "float32", "float64"]
SUPPORTED = {np.dtype(d) for d in DTYPES}
FLOATS = ["float32", "float64"]


def np_ref(fn, *args, **kwargs):
    """NumPy's result with its floating-point and empty-slice warnings silenced."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def numpy_result(fn, *args):
    """NumPy's result, or None where NumPy rejects the inputs or leaves Hermes' dtypes (or
    computes bool ** bool in int8, which the standard does not define: Hermes refuses it)."""
    try:
        out = np.asarray(np_ref(fn, *args))
    except (TypeError, ValueError):
        return None
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    if out.dtype == np.int8 and all(a.dtype == np.bool_ for a in arrays):
        return None
    return out if out.dtype in SUPPORTED else None


def as_float(x):
    """``x`` as the float operand Hermes computes a float function of it on: integers are
    float64 (NumPy gives float16 for int8 and float32 for int16; Hermes has no float16)."""
    return x.astype(np.float64) if x.dtype.kind in "iu" else x


def pair_data(dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random((3, 4)) < 0.5
    return rng.integers(1, 5, size=(3, 4)).astype(dtype)  # positive: safe for / // %


# ----------------------------------------------------------------------------
# promotion
# ----------------------------------------------------------------------------

PROMOTION_OPS = {
    "add": (hm.add, np.add),
    "multiply": (hm.multiply, np.multiply),
    "divide": (hm.divide, np.divide),
    "maximum": (hm.maximum, np.maximum),
    "less": (hm.less, np.less),
    "pow": (hm.pow, np.power),
}


def compute_by_dtype(device, each_case, assert_close, cases, *arrays):
    """``cases``: (name, Hermes fn, NumPy's result); those of one result dtype are computed
    together by one kernel (``each_case``), each compared with its NumPy result."""
    by_dtype = {}
    for case in cases:
        by_dtype.setdefault(case[2].dtype, []).append(case)
    for group in by_dtype.values():
        got = each_case(device, [fn for _, fn, _ in group], *arrays)
        for (name, _, expected), g in zip(group, got):
            try:
                assert_close(g, expected, loose=name == "pow")
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from None


@pytest.mark.parametrize("d2", DTYPES)
@pytest.mark.parametrize("d1", DTYPES)
def test_promotion_table(device, each_case, assert_close, d1, d2):
    x, y = pair_data(d1, 1), pair_data(d2, 2)
    computed = []
    for op, (hm_fn, np_fn) in PROMOTION_OPS.items():
        expected = numpy_result(np_fn, x, y)
        if expected is None:
            # NumPy rejects it (or gives float16): Hermes must reject it at build time
            with hm.device(device), pytest.raises(TypeError):
                hm_fn(hm.asarray(x), hm.asarray(y))
            continue
        with hm.device(device):
            lazy = hm_fn(hm.asarray(x), hm.asarray(y))
        assert lazy.dtype == expected.dtype, f"{d1} {op} {d2}: {lazy.dtype} != {expected.dtype}"
        if op == "add" or (d1 in CORE and d2 in CORE):
            computed.append((op, hm_fn, expected))
    compute_by_dtype(device, each_case, assert_close, computed, x, y)


@pytest.mark.parametrize("d2", DTYPES)
@pytest.mark.parametrize("d1", DTYPES)
def test_where_promotion(device, run_on, assert_close, d1, d2):
    c = np.array([[True, False, True, False]] * 3)
    x, y = pair_data(d1, 3), pair_data(d2, 4)
    if (d1 in CORE and d2 in CORE) or d1 == d2:
        assert_close(run_on(device, hm.where, c, x, y), np.where(c, x, y))
        return
    with hm.device(device):
        lazy = hm.where(hm.asarray(c), hm.asarray(x), hm.asarray(y))
    assert lazy.dtype == np.where(c, x, y).dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_int32_float32_gives_float64(device, run_on, assert_close, dtype):
    i = np.array([16777217, -3, 5], dtype=np.int32)  # not exact in float32
    f = np.array([0.5, 0.25, 3.0], dtype=np.float32)
    got = run_on(device, hm.add, i, f)
    assert_close(got, i + f, dtype="float64")
    assert got[0] == 16777217.5


SCALARS = [True, 2, -3, 2.5, 0.5]
SCALAR_OPS = {
    "t+s": lambda t, s: t + s,
    "s+t": lambda t, s: s + t,
    "t-s": lambda t, s: t - s,
    "s*t": lambda t, s: s * t,
    "t/s": lambda t, s: t / s,
    "t<s": lambda t, s: t < s,
    "maximum": lambda t, s: (hm if isinstance(t, hm.Tensor) else np).maximum(t, s),
    "where": lambda t, s: (hm if isinstance(t, hm.Tensor) else np).where(t == t, t, s),
}


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES)
def test_python_scalars_are_weak(device, each_case, assert_close, dtype, scalar):
    x = pair_data(dtype, 5)
    computed = []
    for expr, fn in SCALAR_OPS.items():
        if type(scalar) is int and x.dtype.kind in "iu" and expr != "t/s" and not (
                np.iinfo(x.dtype).min <= scalar <= np.iinfo(x.dtype).max):
            # an int the integer dtype cannot hold: NumPy 2 raises for arithmetic, compares by
            # value; the standard leaves both unspecified and Hermes raises for every op that
            # computes in that dtype, as for int32 and 2**40 (t / s computes in float64)
            with hm.device(device), pytest.raises(OverflowError, match=f"{scalar} does not fit"):
                fn(hm.asarray(x), scalar)
            continue
        expected = numpy_result(fn, x, scalar)
        if expected is None:
            with hm.device(device), pytest.raises(TypeError):
                fn(hm.asarray(x), scalar)
            continue
        computed.append((expr, lambda t, fn=fn: fn(t, scalar), expected))
    compute_by_dtype(device, each_case, assert_close, computed, x)


@pytest.mark.parametrize(
    ("dtype", "fn", "expected_dtype"),
    [
        ("float32", lambda t: t * 2.0, "float32"),
        ("int32", lambda t: t + 1, "int32"),
        ("int32", lambda t: t * 2.5, "float64"),
        ("int64", lambda t: t / 2, "float64"),
        ("int32", lambda t: hm.exp(t), "float64"),
        ("float32", lambda t: hm.exp(t), "float32"),
        ("int32", lambda t: t.sum(), "int64"),
        ("bool", lambda t: t.sum(), "int64"),
        ("int32", lambda t: t.prod(), "int64"),
        ("int32", lambda t: t.mean(), "float64"),
        ("float32", lambda t: t.argmax(), "int64"),
        ("float32", lambda t: t.var(), "float32"),
        ("int64", lambda t: t.std(), "float64"),
    ],
)
def test_spec_examples(device, run_on, dtype, fn, expected_dtype):
    x = pair_data(dtype, 6)
    assert run_on(device, fn, x).dtype == np.dtype(expected_dtype)


def test_numpy_rejects_so_hermes_rejects(device):
    with hm.device(device):
        b = hm.asarray(np.array([True, False]))
        with pytest.raises(TypeError):
            hm.negative(b)
        with pytest.raises(TypeError):
            b - b
        with pytest.raises(TypeError):
            hm.matmul(b.reshape(1, 2), b.reshape(2, 1))


# ----------------------------------------------------------------------------
# NaN and infinities
# ----------------------------------------------------------------------------

SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -0.5, 1e30]

UNARY_FLOAT = UNARY_MATH
BINARY_FLOAT = {**ARITHMETIC, **COMPARISONS}


def _specials(dtype):
    with np.errstate(over="ignore"):
        return np.array(SPECIALS, dtype=dtype)


def assert_same_specials(got, expected, assert_close):
    """Values within tolerance, and NaN / ±Inf / sign of infinities exactly where NumPy has them."""
    assert_close(got, expected, loose=True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(expected))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(expected))


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_inf_unary(device, each_case, assert_close, dtype):
    """Every op in a few kernels, not one each: those OpenCL renders in vector form both in
    it (a float row selector) and in scalar form (an int32 one), the others in scalar form."""
    x = _specials(dtype)
    vector = [op for op in UNARY_FLOAT if op in VECTOR_FLOAT_FORMS]
    scalar = [op for op in UNARY_FLOAT if op not in vector]
    for ops, selector in ((vector, dtype), (vector, "int32"), (scalar, "int32")):
        got = each_case(device, [getattr(hm, op) for op in ops], x, tile=True, selector=selector)
        for op, g in zip(ops, got):
            try:
                assert_same_specials(g, np_ref(UNARY_FLOAT[op], x), assert_close)
            except AssertionError as exc:
                raise AssertionError(f"{op} ({selector} selector): {exc}") from None


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_inf_binary(device, each_case, assert_close, dtype):
    v = _specials(dtype)
    x, y = v[:, None], v[None, :]  # every pair of special values
    for ops in (list(ARITHMETIC), list(COMPARISONS)):  # one kernel per result dtype
        got = each_case(device, [getattr(hm, op) for op in ops], x, y, tile=True)
        for op, g in zip(ops, got):
            expected = np_ref(BINARY_FLOAT[op], x, y)
            try:
                if g.dtype == np.bool_:
                    assert_close(g, expected)
                else:
                    assert_same_specials(g, expected, assert_close)
            except AssertionError as exc:
                raise AssertionError(f"{op}: {exc}") from None


def test_signed_zero_division(device, run_on, assert_close):
    x = np.array([1.0, -1.0, 0.0, 1.0], dtype=np.float32)
    y = np.array([0.0, 0.0, 0.0, -0.0], dtype=np.float32)
    got = run_on(device, operator.truediv, x, y)
    assert_same_specials(got, np_ref(np.divide, x, y), assert_close)


def test_int_true_divide_by_zero(device, run_on, assert_close):
    x = np.array([1, -1, 0, 7], dtype=np.int32)
    y = np.array([0, 0, 0, 2], dtype=np.int32)
    got = run_on(device, operator.truediv, x, y)
    assert_same_specials(got, np_ref(np.divide, x, y), assert_close)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_inf_where_clip_astype(device, run_on, assert_close, dtype):
    x = _specials(dtype)
    c = np.arange(x.size) % 2 == 0
    assert_close(run_on(device, hm.where, c, x, x[::-1].copy()), np.where(c, x, x[::-1]))
    got = run_on(device, lambda t: hm.clip(t, min=-1.0, max=1.0), x)
    assert_same_specials(got, np_ref(np.clip, x, -1.0, 1.0), assert_close)
    assert_close(run_on(device, lambda t: t.astype("bool"), x), x.astype(bool))
    other = "float32" if dtype == "float64" else "float64"
    got = run_on(device, lambda t: t.astype(other), x)
    assert_same_specials(got, np_ref(x.astype, other), assert_close)


NAN_ARRAYS = {
    "nan-first": [np.nan, 1.0, 3.0, -2.0],
    "nan-middle": [1.0, 5.0, np.nan, -2.0, np.nan],
    "nan-last": [1.0, 5.0, -2.0, np.nan],
    "all-nan": [np.nan, np.nan],
    "inf": [1.0, np.inf, -np.inf, 2.0],
    "all-neg-inf": [-np.inf, -np.inf, -np.inf],
    "all-pos-inf": [np.inf, np.inf],
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", list(NAN_ARRAYS))
@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "sum", "mean", "prod"])
def test_nan_inf_reductions(device, run_on, assert_close, op, case, dtype):
    x = np.array(NAN_ARRAYS[case], dtype=dtype)
    got = run_on(device, lambda t: getattr(t, op)(), x)
    assert_close(got, np_ref(getattr(np, op), x), loose=True)


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_nan_reductions_along_axis(device, run_on, assert_close, op):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    x[1, 2] = np.nan
    x[3, 0] = np.nan
    x[3, 5] = np.inf
    x[0, 4] = -np.inf
    for axis in (0, 1):
        got = run_on(device, lambda t, a=axis: getattr(t, op)(axis=a), x)
        assert_close(got, np_ref(getattr(np, op), x, axis=axis))


# ----------------------------------------------------------------------------
# zero-size tensors
# ----------------------------------------------------------------------------

EMPTY_SHAPES = [(0,), (0, 3), (2, 0, 4)]


@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_size_elementwise(device, run_on, assert_close, dtype, shape):
    x = np.zeros(shape, dtype=dtype)
    assert_close(run_on(device, lambda t: t == t, x), x == x)
    assert_close(run_on(device, lambda t: hm.maximum(t, t), x), np.maximum(x, x))
    if dtype != "bool":
        assert_close(run_on(device, lambda t: t * 2 + 1, x), x * 2 + 1)
        assert_close(run_on(device, hm.exp, x), np.exp(as_float(x)))
    assert_close(run_on(device, lambda t: t.astype("float32"), x), x.astype("float32"))


def test_zero_size_broadcasting(device, run_on, assert_close):
    a = np.zeros((0, 3), dtype=np.float32)
    b = np.ones((1, 3), dtype=np.float32)
    assert_close(run_on(device, hm.add, a, b), a + b)
    c = np.zeros((0, 1), dtype=np.int64)
    d = np.ones((1, 4), dtype=np.int64)
    assert_close(run_on(device, hm.multiply, c, d), c * d)
    assert_close(run_on(device, lambda t: hm.where(t > 0, t, 0), c), np.where(c > 0, c, 0))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "float64"])
@pytest.mark.parametrize("op", ["sum", "prod", "mean", "var", "std"])
def test_zero_size_reductions(device, run_on, assert_close, op, dtype, axis):
    x = np.zeros((0, 3), dtype=dtype)
    got = run_on(device, lambda t: getattr(t, op)(axis=axis), x)
    assert_close(got, np_ref(getattr(np, op), x, axis=axis))


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_zero_size_max_min(device, run_on, assert_close, op):
    x = np.zeros((0, 3), dtype=np.float32)
    # reducing a non-empty axis of an empty tensor is fine
    got = run_on(device, lambda t: getattr(t, op)(axis=1), x)
    assert_close(got, getattr(np, op)(x, axis=1))
    with hm.device(device):
        t = hm.asarray(x)
        with pytest.raises(ValueError, match=op):
            getattr(hm, op)(t, axis=0)
        with pytest.raises(ValueError):
            getattr(t, op)()  # axis=None over 0 elements


def test_zero_size_movement(device, run_on, assert_close):
    x = np.zeros((0, 3), dtype=np.int32)
    assert_close(run_on(device, lambda t: t.reshape(3, 0), x), x.reshape(3, 0))
    assert_close(run_on(device, lambda t: t.T, x), x.T)
    assert_close(run_on(device, lambda t: t[:, 1:], x), x[:, 1:])
    y = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_close(run_on(device, lambda t, u: hm.concat([t, u]), x, y), np.concatenate([x, y]))
    assert_close(run_on(device, lambda u: u[5:], y), y[5:])
    assert_close(run_on(device, lambda u: u[1:1, ::-1] * 2, y), y[1:1, ::-1] * 2)


# ----------------------------------------------------------------------------
# 0-d tensors
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_d(device, run_on, assert_close, dtype):
    x = np.asarray(np.array(3, dtype=dtype))
    y = np.arange(4).astype(dtype)
    assert_close(run_on(device, lambda t: t == t, x), x == x)
    assert_close(run_on(device, hm.maximum, x, y), np.maximum(x, y))
    assert_close(run_on(device, lambda t: t.sum(), x), np.sum(x))
    assert_close(run_on(device, lambda t: t.max(), x), np.max(x))
    assert_close(run_on(device, lambda t: t.argmax(), x), np.argmax(x))
    assert_close(run_on(device, lambda t: t.T, x), x.T)
    assert_close(run_on(device, lambda t: t.reshape(1, 1), x), x.reshape(1, 1))
    assert_close(run_on(device, lambda t: t.astype("float64"), x), x.astype("float64"))
    if dtype != "bool":
        assert_close(run_on(device, lambda t: t * 2 - 1, x), x * 2 - 1)
        assert_close(run_on(device, lambda t: t.mean(), x), np.mean(x))
        assert_close(run_on(device, hm.sqrt, x), np.sqrt(as_float(x)))


def test_zero_d_where_and_reductions_axis(device, run_on, assert_close):
    c = np.array(True)
    x = np.array(2.5, dtype=np.float32)
    y = np.array([1.0, 2.0], dtype=np.float32)
    assert_close(run_on(device, hm.where, c, x, y), np.where(c, x, y))
    assert_close(run_on(device, lambda t: t.sum(axis=()), x), np.sum(x, axis=()))
    assert_close(run_on(device, lambda t: t.var(), x), np.var(x))
    with hm.device(device), pytest.raises(ValueError):
        hm.asarray(x).sum(axis=0)


# ----------------------------------------------------------------------------
# float64 and int64 precision
# ----------------------------------------------------------------------------


def test_float64_keeps_precision(device, run_on, assert_close):
    x = 1.0 + np.arange(10) * 1e-12  # float32 would round all of these to 1.0

    def build(t):
        return (t - 1.0) * 1e12

    got = run_on(device, build, x)
    assert_close(got, (x - 1.0) * 1e12, dtype="float64")
    np.testing.assert_allclose(got, np.arange(10.0), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "sin", "cos", "tanh"])
def test_float64_transcendentals_are_double_precision(device, run_on, op):
    x = np.linspace(0.1, 3.0, 31)
    got = run_on(device, getattr(hm, op), x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, getattr(np, op)(x), rtol=1e-14, atol=1e-15)


def test_float64_arithmetic_exact(device, run_on):
    x = np.array([2.0, 1 / 3, 1e-300, 1e300, 0.1])
    got = run_on(device, lambda t: (hm.sqrt(t), t * 3, t / 7, t + 0.2), x)
    np.testing.assert_array_equal(got[0], np.sqrt(x))  # IEEE: correctly rounded
    np.testing.assert_array_equal(got[1], x * 3)
    np.testing.assert_array_equal(got[2], x / 7)
    np.testing.assert_array_equal(got[3], x + 0.2)


def test_float64_reduction_precision(device, run_on):
    x = 1.0 + np.random.default_rng(3).random(10_000) * 1e-9
    got = run_on(device, lambda t: (t.sum(), t.mean(), t.var()), x)
    np.testing.assert_allclose(got[0], np.sum(x), rtol=1e-13)
    np.testing.assert_allclose(got[1], np.mean(x), rtol=1e-13)
    np.testing.assert_allclose(got[2], np.var(x), rtol=1e-6)  # var ~ 8e-20: needs float64


def test_int64_beyond_float_precision(device, run_on, assert_close):
    big = np.array([2**53 + 1, -(2**62) + 3, 3_000_000_007, 2**40], dtype=np.int64)
    got = run_on(device, lambda t: (t + 2, t * 2, t // 3, t % 1000, t - 1, hm.maximum(t, 5)), big)
    assert_close(got[0], big + 2)
    assert_close(got[1], big * 2)
    assert_close(got[2], big // 3)
    assert_close(got[3], big % 1000)
    assert_close(got[4], big - 1)
    assert_close(got[5], np.maximum(big, 5))
    got = run_on(device, lambda t: t.astype("float64"), big)
    assert_close(got, big.astype(np.float64), rtol=0, atol=0)
