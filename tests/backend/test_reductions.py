"""Reductions on every device, compared with NumPy: values, dtype and shape."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm

DTYPES = ["bool", "int32", "int64", "float32", "float64"]
SHAPE = (3, 4, 5)

REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "var": np.var,
    "std": np.std,
}
LOOSE = {"sum", "mean", "prod", "var", "std"}


def reduction_input(op: str, dtype: str, sample) -> np.ndarray:
    kind = np.dtype(dtype).kind
    if op == "prod":
        if kind == "b":
            x = sample(SHAPE, dtype, seed=1)
            x[0, 0, :] = True  # some all-True lines
            return x
        if kind in "iu":
            return np.random.default_rng(1).choice([-1, 1, 2], size=SHAPE).astype(dtype)
        mag = sample(SHAPE, dtype, low=0.5, high=1.5, seed=1)
        return np.where(sample(SHAPE, "bool", seed=2), mag, -mag)
    return sample(SHAPE, dtype, seed=3)


def call(op: str, form: str, x, **kwargs):
    if form == "method":
        return getattr(x, op)(**kwargs)
    return getattr(hm, op)(x, **kwargs)


def _reduction_cases():
    axes_keepdims = [(None, False), (None, True), (0, False), (-1, False), (1, True)]
    axes_keepdims += [((0, 2), False), ((-1, 0), True), ((0, 1, 2), False)]
    cases = []
    for op in REDUCTIONS:
        for dtype in DTYPES:
            for axis, keepdims in axes_keepdims:
                cases.append(
                    pytest.param(
                        op,
                        dtype,
                        axis,
                        keepdims,
                        "method",
                        id=f"{op}-{dtype}-axis={axis}{'-keepdims' if keepdims else ''}",
                    )
                )
        for dtype in ("int32", "float32"):
            for axis, keepdims in [(None, False), ((0, 2), True), (1, False)]:
                cases.append(
                    pytest.param(
                        op,
                        dtype,
                        axis,
                        keepdims,
                        "function",
                        id=f"hm.{op}-{dtype}-axis={axis}{'-keepdims' if keepdims else ''}",
                    )
                )
    return cases


@pytest.mark.parametrize(("op", "dtype", "axis", "keepdims", "form"), _reduction_cases())
def test_reduction(device, run_on, assert_close, sample, op, dtype, axis, keepdims, form):
    x = reduction_input(op, dtype, sample)
    got = run_on(device, lambda t: call(op, form, t, axis=axis, keepdims=keepdims), x)
    expected = REDUCTIONS[op](x, axis=axis, keepdims=keepdims)
    assert_close(got, expected, loose=op in LOOSE)


@pytest.mark.parametrize(
    ("axis", "keepdims"), [(None, False), (None, True), (0, False), (-1, True), (1, False)]
)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduction(device, run_on, assert_close, sample, op, dtype, axis, keepdims):
    # small value range so that ties happen: the first index must win
    x = sample(SHAPE, "int64", low=-2, high=2, seed=4).astype(dtype)
    got = run_on(device, lambda t: call(op, "method", t, axis=axis, keepdims=keepdims), x)
    expected = getattr(np, op)(x, axis=axis, keepdims=keepdims)
    assert_close(got, expected, dtype="int64")
    got_fn = run_on(device, lambda t: call(op, "function", t, axis=axis, keepdims=keepdims), x)
    assert_close(got_fn, expected)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduction_first_of_ties(device, run_on, assert_close, op):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0], [5.0, 5.0, 5.0, 5.0]])
    for axis in (None, 0, 1):
        got = run_on(device, lambda t, axis=axis: getattr(hm, op)(t, axis=axis), x)
        assert_close(got, getattr(np, op)(x, axis=axis))


@pytest.mark.parametrize("correction", [0.0, 1, 1.5])
@pytest.mark.parametrize("axis", [None, 0, (1, 2)], ids=str)
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_correction(device, run_on, assert_close, sample, op, dtype, axis, correction):
    x = sample(SHAPE, dtype, seed=5)
    got = run_on(device, lambda t: getattr(hm, op)(t, axis=axis, correction=correction), x)
    assert_close(got, getattr(np, op)(x, axis=axis, correction=correction), loose=True)


def test_empty_axis_tuple_reduces_nothing(device, run_on, assert_close, sample):
    x = sample((3, 4), "int32", seed=6)
    assert_close(run_on(device, lambda t: t.sum(axis=()), x), np.sum(x, axis=()))
    xf = sample((3, 4), "float32", seed=6)
    assert_close(run_on(device, lambda t: t.max(axis=()), xf), np.max(xf, axis=()))



@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape", [(0, 1, 1), (0, 2, 3), (2, 3, 1), (2, 1, 0)], ids=str)
@pytest.mark.parametrize("op", ["sum", "max", "prod"])
def test_innermost_axes_with_empty_and_unit_axes(device, run_on, assert_close, sample, op,
                                                 shape, keepdims):
    # the innermost axes are reduced as one: an empty outer axis must not make that ambiguous
    x = sample(shape, "float32", seed=7)
    if op == "max" and 0 in shape[1:]:  # the max of nothing: refused when the graph is built
        with pytest.raises(ValueError, match=r"max: zero-size reduction over axis 2"):
            hm.asarray(x).max(axis=(1, 2), keepdims=keepdims)
        return
    got = run_on(device, lambda t: getattr(t, op)(axis=(1, 2), keepdims=keepdims), x)
    assert_close(got, REDUCTIONS[op](x, axis=(1, 2), keepdims=keepdims))

# ----------------------------------------------------------------------------
# precision and sizes that need several work-groups/blocks
# ----------------------------------------------------------------------------


def test_float32_sum_precision_1000x1000(device, run_on, assert_close):
    # Summing 0.1f a million times one after another in float32 drifts by ~1%;
    # NumPy's pairwise summation (and any tree reduction) stays within ~1e-7.
    x = np.full((1000, 1000), 0.1, dtype=np.float32)
    exact = x.astype(np.float64).sum()
    got = run_on(device, lambda t: t.sum(), x)
    assert got.dtype == np.float32
    assert got.shape == ()
    np.testing.assert_allclose(float(got), exact, rtol=1e-4)
    got_mean = run_on(device, lambda t: t.mean(), x)
    np.testing.assert_allclose(float(got_mean), exact / x.size, rtol=1e-4)
    got_rows = run_on(device, lambda t: t.sum(axis=1), x)
    np.testing.assert_allclose(got_rows, x.astype(np.float64).sum(axis=1), rtol=1e-5)


def test_float32_reductions_1000x1000_random(device, run_on, assert_close):
    x = np.random.default_rng(7).random((1000, 1000), dtype=np.float32)
    x64 = x.astype(np.float64)
    got_sum, got_sum0, got_sum1, got_max, got_argmin = run_on(
        device, lambda t: (t.sum(), t.sum(axis=0), t.sum(axis=1), t.max(), t.argmin()), x
    )
    np.testing.assert_allclose(float(got_sum), x64.sum(), rtol=1e-5)
    np.testing.assert_allclose(got_sum0, x64.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(got_sum1, x64.sum(axis=1), rtol=1e-5)
    assert got_sum0.dtype == got_sum1.dtype == np.float32
    assert_close(got_max, x.max())
    assert_close(got_argmin, np.argmin(x))


def test_float32_var_large_mean(device, run_on):
    # var of 1000 + U(0, 1): E[x^2] - E[x]^2 in float32 loses every digit
    x = (1000.0 + np.random.default_rng(8).random((256, 256))).astype(np.float32)
    x64 = x.astype(np.float64)
    got = run_on(device, lambda t: (t.var(), t.std(), t.var(axis=0)), x)
    np.testing.assert_allclose(float(got[0]), x64.var(), rtol=1e-3)
    np.testing.assert_allclose(float(got[1]), x64.std(), rtol=1e-3)
    np.testing.assert_allclose(got[2], x64.var(axis=0), rtol=1e-2)
    assert got[0].dtype == np.float32


def test_argmax_large_first_occurrence(device, run_on, assert_close):
    x = np.random.default_rng(9).random((1000, 1000)).astype(np.float32)
    x.flat[777_777] = 2.0
    x.flat[888_888] = 2.0  # a later tie must not win
    x.flat[123_456] = -1.0
    got = run_on(device, lambda t: (t.argmax(), t.argmin(), t.argmax(axis=0)), x)
    assert_close(got[0], np.argmax(x))
    assert_close(got[1], np.argmin(x))
    assert_close(got[2], np.argmax(x, axis=0))


def test_int64_sum_exact(device, run_on, assert_close):
    # beyond float64's 53-bit mantissa: accumulating in floating point loses it
    x = np.arange(1000, dtype=np.int64) + (2**50 + 1)
    assert_close(run_on(device, lambda t: t.sum(), x), x.sum())
    x32 = np.full((100, 100), 2**31 - 1, dtype=np.int32)  # overflows int32
    assert_close(run_on(device, lambda t: t.sum(), x32), x32.sum(), dtype="int64")
    assert_close(run_on(device, lambda t: t.sum(axis=0), x32), x32.sum(axis=0))


def test_bool_reductions(device, run_on, assert_close, sample):
    x = sample((6, 7), "bool", seed=10)
    x[0] = True
    x[1] = False
    got = run_on(device, lambda t: (t.sum(axis=1), t.max(axis=1), t.min(axis=1), t.mean()), x)
    assert_close(got[0], x.sum(axis=1), dtype="int64")
    assert_close(got[1], x.max(axis=1), dtype="bool")
    assert_close(got[2], x.min(axis=1), dtype="bool")
    assert_close(got[3], x.mean(), dtype="float64")


def test_reduction_of_expression_and_non_contiguous(device, run_on, assert_close, sample):
    x = sample((6, 8), "float32", seed=11)

    def build(t):
        y = (t * 2 + 1).T[::2]  # (4, 6) strided view of an expression
        return y.sum(axis=1), hm.max(y, axis=0), y.mean(keepdims=True)

    y = (x * np.float32(2) + np.float32(1)).T[::2]
    got = run_on(device, build, x)
    assert_close(got[0], y.sum(axis=1), loose=True)
    assert_close(got[1], y.max(axis=0))
    assert_close(got[2], y.mean(keepdims=True), loose=True)


# ----------------------------------------------------------------------------
# errors at build time
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("op", [*REDUCTIONS, "argmax", "argmin"])
def test_axis_out_of_range(device, op):
    with hm.device(device):
        t = hm.zeros((3, 4), dtype="float32")
        with pytest.raises(ValueError, match="axis"):
            getattr(hm, op)(t, axis=2)
        with pytest.raises(ValueError, match="axis"):
            getattr(t, op)(axis=-3)


@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_repeated_axis(device, op):
    with hm.device(device):
        t = hm.zeros((3, 4), dtype="float32")
        with pytest.raises(ValueError):
            getattr(hm, op)(t, axis=(0, 0))
        with pytest.raises(ValueError):
            getattr(hm, op)(t, axis=(1, -1))
