"""The array API's creation functions on every device, against NumPy: empty, the *_like
family, eye, linspace, meshgrid, tril, triu, and device= on the creation functions."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm


@pytest.mark.parametrize("dtype", [None, "bool", "int32", "float32", "float64"], ids=str)
def test_empty_is_zero_filled(device, run_on, assert_close, dtype):
    assert_close(run_on(device, lambda: hm.empty((2, 3), dtype=dtype)),
                 np.zeros((2, 3), dtype=dtype))


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32"])
@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like"])
def test_like_keeps_shape_and_dtype(device, run_on, assert_close, sample, fn, dtype):
    x = sample((3, 4), dtype)
    reference = {"empty_like": np.zeros_like}.get(fn, getattr(np, fn, None))
    assert_close(run_on(device, getattr(hm, fn), x), reference(x))


@pytest.mark.parametrize(("fill", "dtype", "to"), [
    (7, "float32", None), (2.5, "int32", None), (True, "int64", "bool"), (-3, "int32", "float64"),
], ids=str)
def test_full_like(device, run_on, assert_close, sample, fill, dtype, to):
    x = sample((2, 5), dtype)
    assert_close(run_on(device, lambda t: hm.full_like(t, fill, dtype=to), x),
                 np.full_like(x, fill, dtype=to))


def test_like_follows_the_device_of_its_input(device):
    placed = hm.ones((2, 2), device=device.id)
    assert hm.zeros_like(placed).device == device.id
    assert hm.full_like(hm.ones(3), 2.0, device=device).device == device.id


@pytest.mark.parametrize(("n", "m", "k"), [(3, None, 0), (3, 5, 1), (4, 2, -1), (3, 3, 5),
                                           (0, 2, 0), (1, 1, 0)], ids=str)
@pytest.mark.parametrize("dtype", [None, "int32", "bool", "float32"], ids=str)
def test_eye(device, run_on, assert_close, n, m, k, dtype):
    assert_close(run_on(device, lambda: hm.eye(n, m, k=k, dtype=dtype)),
                 np.eye(n, m, k=k, dtype=dtype))


@pytest.mark.parametrize("fn", ["tril", "triu"])
@pytest.mark.parametrize("k", [0, 1, -2])
@pytest.mark.parametrize(("shape", "dtype"), [((4, 4), "float64"), ((3, 5), "int32"),
                                              ((2, 4, 3), "bool"), ((5, 2), "float32")], ids=str)
def test_tril_triu(device, run_on, assert_close, sample, fn, k, shape, dtype):
    x = sample(shape, dtype)
    assert_close(run_on(device, lambda t: getattr(hm, fn)(t, k=k), x), getattr(np, fn)(x, k=k))


@pytest.mark.parametrize(("start", "stop", "num", "endpoint"), [
    (0, 1, 5, True), (-2.5, 3.0, 7, False), (3, 3, 4, True), (1, 10, 1, True), (1, 10, 1, False),
    (0, 1, 0, True), (10, -10, 101, True),
], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_linspace(device, run_on, assert_close, start, stop, num, endpoint, dtype):
    got = run_on(device, lambda: hm.linspace(start, stop, num, dtype=dtype, endpoint=endpoint))
    expected = np.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)
    assert_close(got, expected, loose=True)
    if endpoint and num > 1:
        assert got[-1] == expected[-1]


def test_linspace_defaults_to_float64(device, run_on, assert_close):
    assert_close(run_on(device, lambda: hm.linspace(0, 2, 3)), np.linspace(0, 2, 3))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sizes", [(3,), (3, 4), (2, 3, 4)], ids=str)
def test_meshgrid(device, run_on, sample, assert_close, indexing, sizes):
    arrays = [sample(n, "float32", seed=i) for i, n in enumerate(sizes)]
    got = run_on(device, lambda *ts: tuple(hm.meshgrid(*ts, indexing=indexing)), *arrays)
    for g, e in zip(got, np.meshgrid(*arrays, indexing=indexing)):
        assert_close(g, e)


@pytest.mark.parametrize("make", [
    lambda d: hm.zeros(3, device=d), lambda d: hm.ones((2,), device=d),
    lambda d: hm.full(2, 1.5, device=d), lambda d: hm.arange(4, device=d),
    lambda d: hm.empty(2, device=d), lambda d: hm.eye(2, device=d),
    lambda d: hm.linspace(0, 1, 3, device=d, dtype="float32"),
], ids=["zeros", "ones", "full", "arange", "empty", "eye", "linspace"])
def test_device_argument_pins_the_result(device, make):
    for spelling in (device.id, device):
        t = make(spelling)
        assert t.device == device.id
        assert t.to_device(device).numpy().shape == t.shape


# ---- bad input: clear errors when the graph is built ---------------------------------------
@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: hm.eye(-1), ValueError, "eye: n_rows must not be negative, got -1"),
    (lambda: hm.eye(2, 2.5), TypeError, "eye: n_cols must be an int, got 2.5"),
    (lambda: hm.eye(2, k=0.5), TypeError, "eye: k must be an int, got 0.5"),
    (lambda: hm.eye(2, dtype="float16"), TypeError, "eye: unsupported dtype float16"),
    (lambda: hm.tril(hm.ones(3)), ValueError,
     "tril: x must have at least 2 dimensions, got shape (3,)"),
    (lambda: hm.triu(hm.ones((2, 2)), k=1.0), TypeError, "triu: k must be an int, got 1.0"),
    (lambda: hm.linspace(0, 1, -2), ValueError, "linspace: num must not be negative, got -2"),
    (lambda: hm.linspace(0, 1, 3, dtype="int32"), TypeError,
     "linspace: dtype int32 is not a floating-point dtype"),
    (lambda: hm.linspace(0, "1", 3), TypeError, "linspace: stop must be a number"),
    (lambda: hm.meshgrid(hm.ones((2, 2))), ValueError,
     "meshgrid: every array must be 1-D, array 0 has shape (2, 2)"),
    (lambda: hm.meshgrid(hm.ones(2), indexing="xz"), ValueError,
     "meshgrid: indexing must be 'xy' or 'ij', got 'xz'"),
    (lambda: hm.full_like(hm.ones(2, dtype="int32"), 2**40), OverflowError,
     "out of bounds for int32"),
    (lambda: hm.zeros(2, device="tpu:0"), ValueError,
     "zeros: device 'tpu:0' is not a Hermes device; available: cpu:0"),
    (lambda: hm.ones_like(hm.ones(2), device=3), TypeError, "ones_like: device must be"),
    (lambda: hm.empty((2, -1)), ValueError, "empty: negative dimension in shape (2, -1)"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_bad_input_is_refused_at_build(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_large_compositions_run_fused(device, run_on, assert_close, sample):
    """Above the JIT size: eye, tril and linspace run as compiled fused kernels."""
    x = sample((300, 400), "float32")
    assert_close(run_on(device, lambda: hm.eye(300, 400, k=3, dtype="float32")),
                 np.eye(300, 400, k=3, dtype="float32"))
    assert_close(run_on(device, lambda t: hm.tril(t, k=-5) + 1, x), np.tril(x, k=-5) + 1)
    assert_close(run_on(device, lambda: hm.linspace(-1, 1, 100_001, dtype="float32")),
                 np.linspace(-1, 1, 100_001, dtype="float32"), loose=True)
    # the mask, the select and the + 1 are one kernel (the aranges are its small inputs)
    kernels = [k.ops for k in (hm.tril(hm.asarray(x), k=-5) + 1).explain().kernels]
    assert [ops for ops in kernels if "where" in ops] == [
        ("subtract", "less_equal", "where", "add")], kernels
