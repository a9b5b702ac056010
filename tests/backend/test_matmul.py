"""matmul on every device, compared with np.matmul (values, dtype and shape)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import hermes_nb as hm

SHAPES_2D = [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((1, 7), (7, 1)),
    ((7, 1), (1, 6)),
    ((17, 33), (33, 9)),
    ((64, 64), (64, 64)),
    ((5, 65), (65, 3)),
    ((2, 128), (128, 2)),
]
SHAPES_BATCHED = [
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 6)),
    ((1, 3, 4), (4, 4, 2)),
    ((2, 3, 1, 2, 3), (3, 1, 3, 2)),
]
SHAPES_1D = [
    ((4,), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
    ((1,), (1,)),
]
SHAPES_EMPTY = [
    ((3, 0), (0, 4)),
    ((0, 3), (3, 4)),
    ((3, 4), (4, 0)),
    ((0,), (0,)),
    ((2, 0, 3), (3, 5)),
]


def _data(shape, dtype, sample, seed):
    if np.dtype(dtype).kind in "iu":
        return sample(shape, dtype, low=-9, high=9, seed=seed)
    return sample(shape, dtype, low=-1.0, high=1.0, seed=seed)


def _check(got, expected, k, assert_close):
    if expected.dtype.kind == "f":
        # rounding grows with the inner dimension
        scale = max(1.0, np.sqrt(k))
        rtol, atol = (1e-5, 1e-6 * scale) if expected.dtype == np.float32 else (1e-12, 1e-14 * scale)
        assert_close(got, expected, rtol=rtol * scale, atol=atol * 10)
    else:
        assert_close(got, expected)


@pytest.mark.parametrize(("sa", "sb"), SHAPES_2D + SHAPES_BATCHED + SHAPES_1D, ids=str)
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_matmul(device, run_on, assert_close, sample, dtype, sa, sb):
    a = _data(sa, dtype, sample, 1)
    b = _data(sb, dtype, sample, 2)
    expected = np.matmul(a, b)
    k = sa[-1]
    _check(run_on(device, hm.matmul, a, b), expected, k, assert_close)


@pytest.mark.parametrize(("sa", "sb"), SHAPES_2D[:3] + SHAPES_BATCHED[:4] + SHAPES_1D, ids=str)
def test_matmul_operator(device, run_on, assert_close, sample, sa, sb):
    a = _data(sa, "float64", sample, 3)
    b = _data(sb, "float64", sample, 4)
    _check(run_on(device, operator.matmul, a, b), a @ b, sa[-1], assert_close)


@pytest.mark.parametrize(("sa", "sb"), SHAPES_EMPTY, ids=str)
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_matmul_zero_size(device, run_on, assert_close, dtype, sa, sb):
    a = np.ones(sa, dtype=dtype)
    b = np.ones(sb, dtype=dtype)
    assert_close(run_on(device, hm.matmul, a, b), np.matmul(a, b))


@pytest.mark.parametrize(
    ("da", "db"),
    [("int32", "float32"), ("int32", "int64"), ("float32", "float64"), ("int64", "float32")],
)
def test_matmul_mixed_dtypes_promote(device, run_on, assert_close, sample, da, db):
    a = _data((3, 5), da, sample, 5)
    b = _data((5, 2), db, sample, 6)
    expected = a @ b
    got = run_on(device, hm.matmul, a, b)
    _check(got, expected, 5, assert_close)


def test_matmul_with_numpy_operands(device, run_on, assert_close, sample):
    a = _data((3, 4), "float64", sample, 7)
    b = _data((4, 2), "float64", sample, 8)
    assert_close(run_on(device, lambda t: t @ b, a), a @ b)
    assert_close(run_on(device, lambda t: a @ t, b), a @ b)


def test_matmul_of_views_and_expressions(device, run_on, assert_close, sample):
    a = _data((6, 5), "float32", sample, 9)
    b = _data((4, 6), "float32", sample, 10)

    def build(x, y):
        return (x.T * 2) @ y.T[::-1] + 1, hm.matmul(x[::2].T, y.T[::2])

    got = run_on(device, build, a, b)
    _check(got[0], (a.T * np.float32(2)) @ b.T[::-1] + np.float32(1), 6, assert_close)
    _check(got[1], a[::2].T @ b.T[::2], 3, assert_close)


def test_matmul_int_exact_large_values(device, run_on, assert_close):
    a = np.full((4, 8), 2**20, dtype=np.int64)
    b = np.full((8, 3), 2**20 + 1, dtype=np.int64)  # products exceed float64's exactness
    assert_close(run_on(device, hm.matmul, a, b), a @ b)


def test_matmul_float64_precision(device, run_on, assert_close):
    a = np.array([[1.0 + 2**-40, 1.0], [1.0, 1.0]])
    b = np.array([[1.0, 0.0], [-1.0, 1.0]])
    assert_close(run_on(device, hm.matmul, a, b), a @ b, rtol=1e-15, atol=0)


def test_matmul_errors_at_build(device):
    with hm.device(device):
        a = hm.zeros((3, 4), dtype="float32")
        b = hm.zeros((5, 2), dtype="float32")
        with pytest.raises(ValueError, match=r"matmul") as info:
            hm.matmul(a, b)
        assert "(3, 4)" in str(info.value)
        assert "(5, 2)" in str(info.value)
        with pytest.raises(ValueError):
            a @ b
        with pytest.raises(ValueError):  # batch dims that do not broadcast
            hm.matmul(hm.zeros((2, 3, 4)), hm.zeros((3, 4, 5)))
        with pytest.raises(ValueError):  # 0-d operand
            hm.matmul(hm.zeros(()), hm.zeros((3,)))
        with pytest.raises(ValueError):
            hm.matmul(hm.zeros((3,)), hm.zeros((4,)))
        with pytest.raises(TypeError):
            hm.matmul(hm.zeros((2, 2), dtype="bool"), hm.zeros((2, 2), dtype="bool"))
