"""Hypothesis: Hermes agrees with NumPy on random shapes, layouts and values, on every device.

Inputs include 0-d and zero-size shapes, broadcasting pairs, non-contiguous and
negative-stride NumPy views, and NaN/±Inf for floats. Every comparison checks
dtype and shape as well as values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hermes_nb as hm

pytestmark = [
    # The NumPy reference (and a NumPy-based CPU backend) warn on overflow/inf-inf/NaN
    # compares; such warnings are expected for these inputs and say nothing about results.
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=False,
)

F32, F64, I32, I64, BOOL = (np.dtype(d) for d in ("float32", "float64", "int32", "int64", "bool"))
# the narrow and unsigned integers
SMALL_INTS = [np.dtype(d) for d in ("int8", "int16", "uint8", "uint16", "uint32", "uint64")]
RTOL = {F32: 2e-6, F64: 1e-13}


# --------------------------------------------------------------------------- strategies


def elements(dtype: np.dtype, *, special: bool = True, bound: float | None = None):
    if dtype.kind == "f":
        width = dtype.itemsize * 8
        if bound is not None:
            finite = st.floats(-bound, bound, width=width, allow_subnormal=False)
            if special:
                return finite | st.sampled_from([np.nan, np.inf, -np.inf])
            return finite
        return st.floats(width=width, allow_nan=special, allow_infinity=special, allow_subnormal=False)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(max(-1000, info.min), min(1000, info.max))
    return st.booleans()


@st.composite
def arrays(draw, dtype: np.dtype, shape: tuple[int, ...], **elem_kwargs) -> np.ndarray:
    """An array of ``shape`` that is C-contiguous, a transpose, or a negative-stride view."""
    elems = elements(dtype, **elem_kwargs)
    layout = draw(st.sampled_from(["c", "transposed", "reversed_strided"]))
    if layout == "transposed" and len(shape) >= 2:
        base = draw(hnp.arrays(dtype, shape[::-1], elements=elems))
        out = base.T
    elif layout == "reversed_strided" and len(shape) >= 1:
        base = draw(hnp.arrays(dtype, tuple(2 * s for s in shape), elements=elems))
        out = base[(slice(None, None, -2),) * len(shape)]
    else:
        out = draw(hnp.arrays(dtype, shape, elements=elems))
    assert out.shape == shape
    return out


def shapes(min_dims: int = 0, max_dims: int = 3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=5)


def broadcastable(num: int):
    return hnp.mutually_broadcastable_shapes(num_shapes=num, min_dims=0, max_dims=3, min_side=0, max_side=4)


# --------------------------------------------------------------------------- helpers


def on(data, device, fn, *arrays_in):
    """Build ``fn`` on tensors from ``arrays_in`` pinned to ``device``; return NumPy.

    Inputs are drawn either as host constants (``hm.asarray``) or as values already
    resident on the device (``hm.asarray(...)`` computed first). Small work on host
    constants may be constant-folded; work on resident values must run on the device.
    """
    resident = data.draw(st.booleans(), label="resident inputs")
    with hm.device(device):
        tensors = [hm.asarray(a) for a in arrays_in]
    if resident and tensors:
        tensors = list(hm.compute(*tensors))
        assert all(t.device == device.id for t in tensors)
    with hm.device(device):
        out = fn(*tensors)
    assert isinstance(out, hm.Tensor)
    assert out.device == device.id
    lazy_shape, lazy_dtype = out.shape, out.dtype
    result = out.numpy()
    assert isinstance(result, np.ndarray)
    assert (result.shape, result.dtype) == (lazy_shape, lazy_dtype), "build-time metadata lies"
    return result


def reference(fn, *arrays_in):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*arrays_in))


def check(actual: np.ndarray, expected: np.ndarray, *, rtol=None, atol=None) -> None:
    """Dtype, shape and values equal NumPy's; NaN matches NaN, infinities must match.

    The default ``atol`` is the smallest normal float: a device may flush subnormal
    results to zero (OpenCL allows it for float32), which is not a wrong answer.
    """
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != NumPy's {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != NumPy's {expected.shape}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(
            actual,
            expected,
            rtol=RTOL[expected.dtype] if rtol is None else rtol,
            atol=np.finfo(expected.dtype).smallest_normal if atol is None else atol,
            equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(actual, expected)


def float_dtypes(device):
    return st.sampled_from([F32, F64] if device.fp64 else [F32])


def numeric_dtypes(device):
    ints = [I32, I64, *SMALL_INTS]
    return st.sampled_from([F32, F64, *ints] if device.fp64 else [F32, *ints])


def needs_fp64(*dtypes: np.dtype) -> bool:
    return np.result_type(*dtypes) == F64


# --------------------------------------------------------------------------- elementwise


@pytest.mark.parametrize(
    ("name", "ref"),
    [("add", np.add), ("multiply", np.multiply), ("maximum", np.maximum)],
    ids=["add", "multiply", "maximum"],
)
@SETTINGS
@given(data=st.data())
def test_binary_elementwise_broadcasting(device, name, ref, data) -> None:
    s1, s2 = data.draw(broadcastable(2).map(lambda bs: bs.input_shapes), label="shapes")
    d1 = data.draw(numeric_dtypes(device), label="dtype1")
    d2 = data.draw(st.sampled_from([d1, d1, I32, F32]), label="dtype2")
    assume(device.fp64 or not needs_fp64(d1, d2))
    a = data.draw(arrays(d1, s1), label="a")
    b = data.draw(arrays(d2, s2), label="b")
    expected = reference(ref, a, b)
    actual = on(data, device, getattr(hm, name), a, b)
    # IEEE add/multiply/max are exactly rounded: keep the tolerance tight
    check(actual, expected)


@pytest.mark.parametrize("op", ["+", "*"])
@SETTINGS
@given(data=st.data())
def test_operators_with_python_scalars(device, op, data) -> None:
    dtype = data.draw(numeric_dtypes(device), label="dtype")
    a = data.draw(arrays(dtype, data.draw(shapes(), label="shape")), label="a")
    scalar = data.draw(st.integers(-50, 50) | st.floats(-50, 50, allow_subnormal=False), label="scalar")
    assume(device.fp64 or np.result_type(dtype, type(scalar)(0)) != F64)
    # a negative int does not fit an unsigned dtype: NumPy and Hermes raise (test_dtypes.py)
    assume(not (dtype.kind == "u" and isinstance(scalar, int) and scalar < 0))
    fns = {
        "+": (lambda x: x + scalar, lambda x: scalar + x),
        "*": (lambda x: x * scalar, lambda x: scalar * x),
    }
    for fn in fns[op]:
        check(on(data, device, fn, a), reference(fn, a))


@SETTINGS
@given(data=st.data())
def test_exp(device, data) -> None:
    dtype = data.draw(st.sampled_from([F32, F64, I32] if device.fp64 else [F32]), label="dtype")
    a = data.draw(arrays(dtype, data.draw(shapes(), label="shape"), bound=80.0), label="a")
    expected = reference(np.exp, a)
    check(on(data, device, hm.exp, a), expected, rtol=1e-5 if expected.dtype == F32 else 1e-12)


@SETTINGS
@given(data=st.data())
def test_where(device, data) -> None:
    sc, s1, s2 = data.draw(broadcastable(3).map(lambda bs: bs.input_shapes), label="shapes")
    dtype = data.draw(numeric_dtypes(device), label="dtype")
    cond = data.draw(arrays(BOOL, sc), label="cond")
    x1 = data.draw(arrays(dtype, s1), label="x1")
    x2 = data.draw(arrays(dtype, s2), label="x2")
    check(on(data, device, hm.where, cond, x1, x2), reference(np.where, cond, x1, x2))


@SETTINGS
@given(data=st.data())
def test_chained_elementwise(device, data) -> None:
    s1, s2 = data.draw(broadcastable(2).map(lambda bs: bs.input_shapes), label="shapes")
    a = data.draw(arrays(F32, s1, bound=10.0), label="a")
    b = data.draw(arrays(F32, s2, bound=10.0), label="b")

    def hfn(x, y):
        return hm.maximum((x + y) * 2.0 - abs(y), x)

    def nfn(x, y):
        return np.maximum((x + y) * np.float32(2.0) - np.abs(y), x)

    check(on(data, device, hfn, a, b), reference(nfn, a, b), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- reductions


@st.composite
def axes_for(draw, ndim: int):
    if ndim == 0 or draw(st.booleans()):
        return draw(st.sampled_from([None, *([] if ndim == 0 else [0, -1])]))
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, min_size=1, max_size=ndim))
    as_negative = draw(st.booleans())
    chosen = [c - ndim if as_negative else c for c in chosen]
    return chosen[0] if len(chosen) == 1 and draw(st.booleans()) else tuple(chosen)


def _reduced_sizes(shape, axis):
    if axis is None:
        return list(shape)
    axes = (axis,) if isinstance(axis, int) else axis
    return [shape[a] for a in axes]


@SETTINGS
@given(data=st.data())
def test_sum(device, data) -> None:
    dtype = data.draw(st.sampled_from([F32, F64, I32, I64, BOOL, *SMALL_INTS]), label="dtype")
    assume(device.fp64 or dtype != F64)
    shape = data.draw(shapes(), label="shape")
    a = data.draw(arrays(dtype, shape, bound=1e4), label="a")
    axis = data.draw(axes_for(len(shape)), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    expected = reference(lambda x: np.sum(x, axis=axis, keepdims=keepdims), a)
    actual = on(data, device, lambda x: hm.sum(x, axis=axis, keepdims=keepdims), a)
    if dtype.kind == "f":
        # summation order differs from NumPy's pairwise sum: allow n * eps * max|x|
        finite = np.abs(a[np.isfinite(a)])
        scale = float(finite.max()) if finite.size else 0.0
        n = max(a.size, 1)
        check(actual, expected, rtol=1e-5, atol=4 * n * np.finfo(dtype).eps * scale)
    else:
        check(actual, expected)


@pytest.mark.parametrize("method", [False, True], ids=["function", "method"])
@SETTINGS
@given(data=st.data())
def test_max(device, method, data) -> None:
    dtype = data.draw(st.sampled_from([F32, F64, I32, I64, *SMALL_INTS]), label="dtype")
    assume(device.fp64 or dtype != F64)
    shape = data.draw(shapes(), label="shape")
    a = data.draw(arrays(dtype, shape), label="a")
    axis = data.draw(axes_for(len(shape)), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")

    def build(x):
        if method:
            return x.max(axis=axis, keepdims=keepdims)
        return hm.max(x, axis=axis, keepdims=keepdims)

    if 0 in _reduced_sizes(shape, axis):
        with hm.device(device), pytest.raises(ValueError, match="max"):
            build(hm.asarray(a))
        return
    expected = reference(lambda x: np.max(x, axis=axis, keepdims=keepdims), a)
    check(on(data, device, build, a), expected, rtol=0)


# --------------------------------------------------------------------------- movement


@SETTINGS
@given(data=st.data())
def test_basic_indexing(device, data) -> None:
    dtype = data.draw(st.sampled_from([F32, I32, BOOL, *SMALL_INTS]), label="dtype")
    shape = data.draw(shapes(max_dims=4), label="shape")
    a = data.draw(arrays(dtype, shape), label="a")
    index = data.draw(
        hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True),
        label="index",
    )
    expected = np.asarray(a[index])
    check(on(data, device, lambda x: x[index], a), expected, rtol=0)


@SETTINGS
@given(data=st.data())
def test_slice_of_slice_then_arithmetic(device, data) -> None:
    shape = data.draw(shapes(min_dims=1, max_dims=3), label="shape")
    a = data.draw(arrays(F32, shape, bound=100.0), label="a")
    i1 = data.draw(hnp.basic_indices(shape, allow_newaxis=False, allow_ellipsis=False))
    s1 = np.asarray(a[i1]).shape
    i2 = data.draw(hnp.basic_indices(s1, allow_newaxis=True, allow_ellipsis=True))
    expected = reference(lambda x: np.asarray(x[i1])[i2] * np.float32(3.0), a)
    check(on(data, device, lambda x: x[i1][i2] * 3.0, a), expected)


@SETTINGS
@given(data=st.data())
def test_transpose_and_permute(device, data) -> None:
    dtype = data.draw(st.sampled_from([F32, I64, BOOL]), label="dtype")
    shape = data.draw(shapes(max_dims=4), label="shape")
    a = data.draw(arrays(dtype, shape), label="a")
    perm = tuple(data.draw(st.permutations(range(len(shape))), label="perm"))
    check(on(data, device, lambda x: x.T, a), a.T, rtol=0)
    check(on(data, device, lambda x: hm.permute_dims(x, perm), a), np.transpose(a, perm), rtol=0)
    check(on(data, device, lambda x: hm.transpose(x), a), np.transpose(a), rtol=0)


@SETTINGS
@given(data=st.data())
def test_transpose_then_reduce(device, data) -> None:
    shape = data.draw(shapes(min_dims=2, max_dims=3).filter(lambda s: 0 not in s), label="shape")
    a = data.draw(arrays(I32, shape), label="a")
    expected = reference(lambda x: x.T.max(axis=0) + x.T[::-1].sum(axis=-1, keepdims=True), a)
    actual = on(data, device, lambda x: x.T.max(axis=0) + x.T[::-1].sum(axis=-1, keepdims=True), a)
    check(actual, expected)


@SETTINGS
@given(data=st.data())
def test_from_numpy_views(device, data) -> None:
    """Tensor.from_numpy of arbitrary views round-trips exactly, specials included."""
    dtype = data.draw(st.sampled_from([F32, I32, BOOL, I64, *SMALL_INTS]), label="dtype")
    a = data.draw(arrays(dtype, data.draw(shapes(max_dims=4), label="shape")), label="a")
    with hm.device(device):
        t = hm.Tensor.from_numpy(a)
    assert t.shape == a.shape and t.dtype == a.dtype
    check(t.numpy(), a, rtol=0)
