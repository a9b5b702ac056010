"""Sources (zeros, ones, full, arange, asarray, random) and Tensor basics on every device."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm

DTYPES = ["bool", "int32", "int64", "float32", "float64"]


# ----------------------------------------------------------------------------
# zeros / ones / full / arange
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), 0, 5, (3, 4), (2, 0, 3), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("dtype", [None, *DTYPES], ids=str)
@pytest.mark.parametrize("fn", ["zeros", "ones"])
def test_zeros_ones(device, run_on, assert_close, fn, dtype, shape):
    got = run_on(device, lambda: getattr(hm, fn)(shape, dtype=dtype))
    expected = getattr(np, fn)(shape, dtype=dtype)  # default float64, like NumPy
    assert_close(got, expected)


@pytest.mark.parametrize(
    ("fill", "dtype"),
    [
        (7, None),
        (-2.5, None),
        (True, None),
        (3, "float32"),
        (1.5, "float64"),
        (0, "bool"),
        (-7, "int32"),
        (2**40, "int64"),
        (0.25, "float32"),
        (np.inf, "float32"),
        (np.nan, "float64"),
    ],
    ids=str,
)
def test_full(device, run_on, assert_close, fill, dtype):
    got = run_on(device, lambda: hm.full((3, 5), fill, dtype=dtype))
    assert_close(got, np.full((3, 5), fill, dtype=dtype))


def test_full_string_dtype_and_int_shape(device, run_on, assert_close):
    assert_close(run_on(device, lambda: hm.full(4, 2, dtype="int32")), np.full(4, 2, np.int32))
    assert_close(run_on(device, lambda: hm.zeros(4, dtype="int64")), np.zeros(4, np.int64))


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((5,), {}),
        ((2, 11), {}),
        ((10, 0, -3), {}),
        ((0, 1, 0.1), {}),
        ((-1.5, 2.0, 0.5), {}),
        ((5,), {"dtype": "float32"}),
        ((1, 9, 2), {"dtype": "int32"}),
        ((3, 3), {}),  # empty
        ((0, 5, 1), {"dtype": "float64"}),
        ((2.5,), {}),
    ],
    ids=str,
)
def test_arange(device, run_on, assert_close, args, kwargs):
    got = run_on(device, lambda: hm.arange(*args, **kwargs))
    assert_close(got, np.arange(*args, **kwargs))


# ----------------------------------------------------------------------------
# asarray / from_numpy
# ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj",
    [
        [1, 2, 3],
        [[1.5, 2.0], [3.0, -4.0]],
        [True, False, True],
        [[1, 2], [3, 4], [5, 6]],
        3,
        -2.5,
        True,
        [],
        [[1, 2.5]],
    ],
    ids=repr,
)
def test_asarray_python_objects(device, run_on, assert_close, obj):
    got = run_on(device, lambda: hm.asarray(obj))
    assert_close(got, np.asarray(obj))


@pytest.mark.parametrize("dtype", DTYPES)
def test_asarray_numpy_each_dtype(device, run_on, assert_close, sample, dtype):
    x = sample((3, 4), dtype, seed=1)
    assert_close(run_on(device, hm.asarray, x), x)
    assert_close(run_on(device, lambda: hm.Tensor.from_numpy(x)), x)


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", ["int64", "float32", "float64"])
def test_asarray_with_dtype(device, run_on, assert_close, src, dst):
    x = np.array([[0, 1, 2], [3, 1, 0]], dtype=src)
    assert_close(run_on(device, lambda: hm.asarray(x, dtype=dst)), np.asarray(x, dtype=dst))
    lst = x.tolist()
    assert_close(run_on(device, lambda: hm.asarray(lst, dtype=dst)), np.asarray(lst, dtype=dst))


def test_asarray_non_contiguous_numpy(device, run_on, assert_close, sample):
    x = sample((6, 8), "float32", seed=2)
    for view in (x.T, x[::2, ::-3], x[:, 1]):
        assert_close(run_on(device, lambda v=view: hm.asarray(v)), view)


def test_asarray_of_tensor_and_scalar_0d(device, run_on, assert_close):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_close(run_on(device, lambda t: hm.asarray(t), x), x)
    assert_close(run_on(device, lambda t: hm.asarray(t, dtype="float64"), x), x.astype(float))
    assert_close(run_on(device, lambda: hm.asarray(np.float32(2.5))), np.asarray(np.float32(2.5)))


# ----------------------------------------------------------------------------
# random
# ----------------------------------------------------------------------------


def _on(device, fn):
    with hm.device(device):
        return fn().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_uniform_01(device, dtype):
    got = _on(device, lambda: hm.Tensor.random((100, 100), dtype=dtype, seed=123))
    assert got.dtype == np.dtype(dtype)
    assert got.shape == (100, 100)
    assert got.min() >= 0.0
    assert got.max() < 1.0
    assert abs(got.mean() - 0.5) < 0.02
    assert abs(got.var() - 1 / 12) < 0.01
    assert len(np.unique(got)) > 9000


def test_random_default_dtype_and_seed_none(device):
    a = _on(device, lambda: hm.Tensor.random((50, 50)))
    b = _on(device, lambda: hm.Tensor.random((50, 50)))
    assert a.dtype == np.float32
    assert not np.array_equal(a, b), "seed=None gave the same numbers twice"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_same_seed_same_values_on_every_device(device, dtype):
    def make():
        return hm.Tensor.random((64, 33), dtype=dtype, seed=7)

    got = _on(device, make)
    again = _on(device, make)
    np.testing.assert_array_equal(got, again)
    cpu = next(d for d in hm.devices() if d.kind == "cpu")
    np.testing.assert_array_equal(got, _on(cpu, make))
    other = _on(device, lambda: hm.Tensor.random((64, 33), dtype=dtype, seed=8))
    assert not np.array_equal(got, other)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_normal(device, dtype):
    got = _on(device, lambda: hm.random.normal((200, 100), loc=2.0, scale=3.0, dtype=dtype, seed=5))
    assert got.dtype == np.dtype(dtype)
    assert got.shape == (200, 100)
    assert np.isfinite(got).all()
    n = got.size
    assert abs(got.mean() - 2.0) < 5 * 3.0 / np.sqrt(n)
    assert abs(got.std() - 3.0) < 0.1
    # roughly normal: ~68% within one sigma
    assert 0.66 < np.mean(np.abs(got - 2.0) < 3.0) < 0.70
    cpu = next(d for d in hm.devices() if d.kind == "cpu")
    ref = _on(cpu, lambda: hm.random.normal((200, 100), loc=2.0, scale=3.0, dtype=dtype, seed=5))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_uniform_low_high(device, dtype):
    got = _on(device, lambda: hm.random.uniform((100, 100), low=-2.0, high=5.0, dtype=dtype, seed=9))
    assert got.dtype == np.dtype(dtype)
    assert got.min() >= -2.0
    assert got.max() < 5.0
    assert abs(got.mean() - 1.5) < 0.1
    assert got.min() < -1.9
    assert got.max() > 4.9


def test_random_in_expression(device, run_on, assert_close):
    with hm.device(device):
        r = hm.Tensor.random((10, 10), seed=3)
        y = r * 2 - 1
    rv = r.numpy()
    assert_close(y.numpy(), rv * np.float32(2) - np.float32(1))


# ----------------------------------------------------------------------------
# Tensor attributes, conversions, devices
# ----------------------------------------------------------------------------


def test_tensor_attributes(device):
    x = np.zeros((2, 3, 4), dtype=np.int32)
    with hm.device(device):
        t = hm.asarray(x)
        s = t.sum(axis=1)
    assert t.shape == (2, 3, 4)
    assert isinstance(t.shape, tuple)
    assert t.dtype == np.int32
    assert isinstance(t.dtype, np.dtype)
    assert t.ndim == 3
    assert t.size == 24
    assert len(t) == 2
    assert t.device == device.id
    assert s.shape == (2, 4)
    assert s.dtype == np.int64
    assert s.device == device.id


def test_scalar_conversions(device):
    with hm.device(device):
        f = hm.asarray(np.array([[2.5]], dtype=np.float32)) * 2
        i = hm.asarray(np.array([7], dtype=np.int64)) + 1
        b = hm.asarray(np.array(3.0)) > 2
        z = hm.asarray(np.array([0.0]))
    assert float(f) == 5.0
    assert int(i) == 8
    assert bool(b) is True
    assert bool(z) is False
    assert isinstance(float(i), float)
    assert isinstance(int(f), int)
    with pytest.raises((TypeError, ValueError)), hm.device(device):
        float(hm.zeros((2,)))


def test_numpy_conversions_and_compute(device, assert_close, sample):
    x = sample((3, 4), "float64", seed=4)
    with hm.device(device):
        t = hm.asarray(x) + 1
    computed = t.compute()
    assert isinstance(computed, hm.Tensor)
    assert computed.shape == t.shape
    assert computed.dtype == t.dtype
    assert_close(computed.numpy(), x + 1)
    assert_close(np.asarray(t), x + 1)
    assert_close(np.asarray(computed), x + 1)
    # a computed tensor keeps working as an input
    with hm.device(device):
        u = computed * 2
    assert_close(u.numpy(), (x + 1) * 2)


def test_to_device_roundtrip(device, assert_close, sample):
    x = sample((5, 6), "float32", seed=5)
    for other in hm.devices():
        t = hm.asarray(x).to(other) * 2
        moved = t.to(device)
        assert moved.device == device.id
        with hm.device(device):
            r = moved + 1
        assert_close(r.numpy(), x * np.float32(2) + np.float32(1))
        back = r.to(other).numpy()
        assert_close(back, x * np.float32(2) + np.float32(1))


def test_to_accepts_device_object_and_id(device, assert_close):
    x = np.arange(4, dtype=np.int64)
    a = hm.asarray(x).to(device)
    b = hm.asarray(x).to(device.id)
    assert a.device == b.device == device.id
    assert_close(a.numpy(), x)
    assert_close(b.numpy(), x)
    with hm.device(device.id):
        c = hm.asarray(x) * 3
    assert c.device == device.id
    assert_close(c.numpy(), x * 3)


def test_device_info(device):
    assert str(device) == device.id
    kind, _, index = device.id.partition(":")
    assert kind == device.kind
    builtin = type(device).__module__.startswith("hermes_nb.")
    assert kind in {"cpu", "opencl", "cuda"} or not builtin  # a plug-in has a kind of its own
    assert index.isdigit()
    assert isinstance(device.name, str)
    assert device.name
    assert device.memory_bytes > 0
    assert device.compute_units >= 1
    assert isinstance(device.fp64, bool)


def test_float64_on_device(device, assert_close):
    x = np.array([1.0, 2.0, 3.0])
    if device.fp64:
        with hm.device(device):
            t = hm.asarray(x) * 2
        assert_close(t.numpy(), x * 2)
    else:
        with pytest.raises(ValueError, match=device.id), hm.device(device):
            hm.asarray(x) * 2


def test_unknown_device_raises_listing_devices():
    ids = [d.id for d in hm.devices()]
    with pytest.raises(ValueError) as info, hm.device("bogus:7"):
        pass
    assert all(i in str(info.value) for i in ids)
    with pytest.raises(ValueError, match="bogus"):
        hm.zeros(3).to("bogus:0")
    with pytest.raises(ValueError), hm.device("cpu:99"):
        pass


@pytest.mark.parametrize("bad", ["float16", np.float16, "datetime64[s]"], ids=str)
def test_unsupported_dtypes(bad):
    with pytest.raises(TypeError, match="float32"):
        hm.zeros(3, dtype=bad)
    with pytest.raises(TypeError, match="float32"):
        hm.asarray(np.zeros(3, dtype=bad))
    with pytest.raises(TypeError, match="float32"):
        hm.zeros(3, dtype="float32").astype(bad)
