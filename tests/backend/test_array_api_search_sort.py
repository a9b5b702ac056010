"""The array API's indexing, searching, sorting and set functions on every device, against
NumPy and ``array_api_strict``: take, take_along_axis, nonzero, sort, argsort, unique_*,
boolean masks; and the ``dtype=`` of sum/prod/cumulative_*, ``copy=``/``device=`` of astype,
``device=`` of asarray."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm

strict = pytest.importorskip("array_api_strict")


def _strict(a):
    return strict.asarray(a)


def _np(a):
    return np.asarray(a)


# ---- dtype= of the accumulations, copy= of astype, device= of asarray -----------------
@pytest.mark.parametrize("fn", ["sum", "prod"])
@pytest.mark.parametrize(("dtype", "want"), [("bool", None), ("int32", None), ("float32", None),
                                             ("int32", "float32"), ("float32", "float64"),
                                             ("bool", "int32")], ids=str)
def test_sum_prod_dtype(device, run_on, assert_close, sample, fn, dtype, want):
    x = sample((3, 4), dtype, low=-3, high=3)
    kw = {} if want is None else {"dtype": getattr(hm, want)}
    out = run_on(device, lambda t: getattr(hm, fn)(t, axis=-1, **kw), x)
    if dtype == "bool":  # array_api_strict sums numeric tensors only: NumPy's int64 sum
        expected = getattr(np, fn)(x, axis=-1, dtype=np.dtype(want or "int64"))
    else:
        skw = {} if want is None else {"dtype": getattr(strict, want)}
        expected = _np(getattr(strict, fn)(_strict(x), axis=-1, **skw))
    assert_close(out, expected)


@pytest.mark.parametrize("fn", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize(("dtype", "want"), [("bool", None), ("int32", None), ("float32", None),
                                             ("int32", "float64")], ids=str)
def test_cumulative_dtype(device, run_on, assert_close, sample, fn, dtype, want):
    x = sample((2, 5), dtype, low=-2, high=2)
    kw = {} if want is None else {"dtype": getattr(hm, want)}
    out = run_on(device, lambda t: getattr(hm, fn)(t, axis=1, **kw), x)
    if dtype == "bool":
        np_fn = np.cumsum if fn == "cumulative_sum" else np.cumprod
        assert_close(out, np_fn(x, axis=1, dtype=np.dtype(want or "int64")))
        return
    skw = {} if want is None else {"dtype": getattr(strict, want)}
    assert_close(out, _np(getattr(strict, fn)(_strict(x), axis=1, **skw)))


def test_sum_dtype_refused():
    with pytest.raises(TypeError, match="sum: dtype: unsupported dtype float16; supported: "):
        hm.sum(hm.ones(3), dtype="float16")
    with pytest.raises(TypeError, match="prod: dtype: unknown dtype 'nope'"):
        hm.prod(hm.ones(3), dtype="nope")


@pytest.mark.parametrize("copy", [True, False])
def test_astype_copy_never_raises(device, run_on, assert_close, copy):
    x = np.array([1.7, -2.5, 0.0])
    assert_close(run_on(device, lambda t: hm.astype(t, hm.int32, copy=copy), x),
                 x.astype(np.int32))
    t = hm.asarray(x)
    # no data is copied either way; copy=True still gives a new Tensor object, which
    # x[key] = value can rebind without reaching t
    for same in (hm.astype(t, hm.float64, copy=copy), t.astype(hm.float64, copy=copy)):
        assert (same is t) is not copy
        assert same.node is t.node


def test_astype_and_asarray_device(device):
    t = hm.asarray([1, 2, 3], device=device)
    assert t.device == device.id
    assert hm.astype(hm.asarray([1, 2]), hm.int32, device=device).device == device.id
    assert hm.asarray(t, device=device, copy=False) is t
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3])


def test_device_arguments_refused():
    with pytest.raises(ValueError, match="asarray: device 'nope:3' is not a Hermes device"):
        hm.asarray([1], device="nope:3")
    with pytest.raises(TypeError, match="astype: copy must be True or False, got 'yes'"):
        hm.astype(hm.ones(2), hm.int32, copy="yes")
    if len(hm.devices()) > 1:
        a, b = hm.devices()[:2]
        with pytest.raises(ValueError, match=f"copy=False, but a tensor on {a.id}"):
            hm.asarray(hm.asarray([1.0], device=a), device=b, copy=False)


# ---- take, take_along_axis --------------------------------------------------------------
@pytest.mark.parametrize(("shape", "indices", "axis"), [
    ((6,), [5, 0, 0, -1, 2, 3, 4], None), ((3, 4), [3, 2, 1, 0], -1), ((3, 4), [1, 1, 1], 0),
    ((3, 4), [], 1), ((2, 3, 4), [0, 2, 1, 3], -1), ((5,), [4, 2, 0], 0), ((0, 3), [2], 1)],
    ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_take(device, run_on, assert_close, sample, shape, indices, axis, dtype):
    x = sample(shape, dtype)
    idx = np.asarray(indices, dtype=np.int64)
    out = run_on(device, lambda t: hm.take(t, hm.asarray(idx), axis=axis), x)
    assert_close(out, np.take(x, idx, axis=0 if axis is None else axis))
    if idx.size and (idx >= 0).all():
        assert_close(out, _np(strict.take(_strict(x), _strict(idx), axis=axis)))


def test_take_of_many_scattered_indices(device, run_on, assert_close, sample):
    x = sample((3, 5000), "float32")
    idx = np.random.default_rng(2).integers(-5000, 5000, size=3000)
    assert_close(run_on(device, lambda t: hm.take(t, idx, axis=1), x), np.take(x, idx, axis=1))
    m = sample((5000,), "bool", seed=4)
    assert_close(run_on(device, lambda t: t[m], x[0]), x[0][m])
    keyed = x.copy()
    keyed[:, m] = 2.0
    assert_close(run_on(device, lambda t: t.at[:, m].set(hm.full((3, int(m.sum())), 2.0,
                                                                  dtype=hm.float32)), x), keyed)


def test_take_stays_lazy_in_x():
    x = hm.arange(10) * 2
    out = hm.take(x, np.array([1, 3, 5, 7, 9, 0]))
    assert not out.is_materialized
    assert out.numpy().tolist() == [2, 6, 10, 14, 18, 0]


@pytest.mark.parametrize(("x_shape", "i_shape", "axis"), [
    ((3, 4), (3, 2), -1), ((3, 4), (2, 4), 0), ((3, 4), (1, 5), 1), ((2, 3, 4), (2, 3, 1), 2),
    ((2, 3, 4), (2, 2, 4), -2), ((4,), (6,), 0), ((3, 4), (3, 0), 1)], ids=str)
def test_take_along_axis(device, run_on, assert_close, sample, x_shape, i_shape, axis):
    x = sample(x_shape, "float64")
    size = x_shape[axis]
    idx = np.random.default_rng(1).integers(-size, size, size=i_shape)
    out = run_on(device, lambda t: hm.take_along_axis(t, idx, axis=axis), x)
    assert_close(out, np.take_along_axis(x, idx, axis=axis))
    if idx.size:
        want = strict.take_along_axis(_strict(x), _strict(idx % size), axis=axis)
        assert_close(out, _np(want))


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: hm.take(hm.ones(4), [4]), IndexError,
     "take: index 4 is out of range for axis 0 of size 4; allowed: -4 to 3"),
    (lambda: hm.take(hm.ones((2, 3)), [-4], axis=-1), IndexError,
     "take: index -4 is out of range for axis 1 of size 3; allowed: -3 to 2"),
    (lambda: hm.take(hm.ones((0, 3)), [0], axis=0), IndexError,
     "take: index 0 is out of range for axis 0 of size 0; allowed: none (the axis is empty)"),
    (lambda: hm.take(hm.ones((2, 3)), [0]), ValueError,
     "take: axis must be given for a tensor of shape (2, 3)"),
    (lambda: hm.take(hm.ones(3), [0.5]), TypeError,
     "take: indices must be an integer array, got dtype float64"),
    (lambda: hm.take(hm.ones(3), [[0]]), ValueError, "take: indices must be 1-D, got shape"),
    (lambda: hm.take(hm.ones(3), [0], axis=1), ValueError, "take"),
    (lambda: hm.take_along_axis(hm.ones((2, 3)), np.array([[3]]), axis=1), IndexError,
     "take_along_axis: index 3 is out of range for axis 1 of size 3; allowed: -3 to 2"),
    (lambda: hm.take_along_axis(hm.ones((2, 3)), np.array([0]), axis=1), ValueError,
     "take_along_axis: indices of shape (1,) must have as many dimensions as x"),
    (lambda: hm.take_along_axis(hm.ones((2, 3)), np.zeros((3, 1), int), axis=1), ValueError,
     "take_along_axis: indices of shape (3, 1) do not broadcast with x of shape (2, 3)"),
], ids=range(10))
def test_take_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


# ---- nonzero, boolean masks -------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 0), (2, 3, 2)], ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float64"])
def test_nonzero(device, run_on, assert_close, sample, shape, dtype):
    x = sample(shape, dtype, low=-1, high=1)
    if dtype == "int32":
        x = (x * (x > 0)).astype(np.int32)
    out = run_on(device, hm.nonzero, x)
    want = strict.nonzero(_strict(x))
    assert len(out) == len(want) == x.ndim
    for got, ref, np_ref in zip(out, want, np.nonzero(x)):
        assert_close(got, _np(ref))
        assert_close(got, np_ref.astype(np.int64))


def test_nonzero_refuses_0d():
    with pytest.raises(ValueError, match="nonzero: x must have at least 1 dimension"):
        hm.nonzero(hm.asarray(1.0))


@pytest.mark.parametrize(("shape", "mask_ndim"), [((6,), 1), ((3, 4), 2), ((3, 4), 1),
                                                  ((2, 3, 2), 2), ((0, 3), 1)], ids=str)
def test_boolean_mask(device, run_on, assert_close, sample, shape, mask_ndim):
    x = sample(shape, "float32")
    m = sample(shape[:mask_ndim], "bool", seed=3)
    assert_close(run_on(device, lambda t: t[hm.asarray(m)], x), x[m])
    assert_close(run_on(device, lambda t: t[m], x), x[m])


def test_boolean_mask_errors():
    with pytest.raises(IndexError, match=r"getitem: a mask of shape \(2,\) must match the "
                                         r"leading dimensions of x \(shape \(3,\)\)"):
        hm.ones(3)[np.array([True, False])]


# ---- sort, argsort ----------------------------------------------------------------------
_TIES = np.array([[3.0, 1.0, np.nan, 1.0, -0.0, 3.0, 0.0, np.nan, -np.inf, 2.0],
                  [1.0, 1.0, 1.0, 0.0, 0.0, 2.0, 2.0, 2.0, 1.0, 1.0]])


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
def test_sort_and_argsort(device, run_on, assert_close, dtype, axis, descending):
    x = np.nan_to_num(_TIES, nan=5.0, neginf=-4.0).astype(dtype) if dtype != "float64" \
        else _TIES.copy()
    if dtype == "float32":
        x[0, 2] = np.nan
    kw = {"axis": axis, "descending": descending, "stable": True}
    # array_api_strict sorts numbers only; Hermes sorts bool as NumPy does (False first)
    ref = _strict(x.astype(np.int32) if dtype == "bool" else x)
    s, a = _np(strict.sort(ref, **kw)).astype(dtype), strict.argsort(ref, **kw)
    assert_close(run_on(device, lambda t: hm.sort(t, **kw), x), s)
    assert_close(run_on(device, lambda t: hm.argsort(t, **kw), x), _np(a))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (1,)], ids=str)
def test_sort_empty(device, run_on, assert_close, shape):
    x = np.zeros(shape, np.float32)
    assert_close(run_on(device, hm.sort, x), np.sort(x))
    assert_close(run_on(device, hm.argsort, x), np.argsort(x).astype(np.int64))


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: hm.sort(hm.asarray(1.0)), ValueError, "sort: x must have at least 1 dimension"),
    (lambda: hm.argsort(hm.ones(3), descending="yes"), TypeError,
     "argsort: descending must be True or False, got 'yes'"),
    (lambda: hm.sort(hm.ones(3), stable=None), TypeError,
     "sort: stable must be True or False, got None"),
    (lambda: hm.sort(hm.ones(3), axis=1), ValueError, "sort"),
], ids=range(4))
def test_sort_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


# ---- unique_* ---------------------------------------------------------------------------
_UNIQUE = [np.array([3, 1, 3, 2, 1, 1], np.int32), np.array([[True, False], [True, True]]),
           np.array([2.0, np.nan, -0.0, 0.0, np.nan, 2.0, np.inf]),
           np.array([1.5, 1.5, -1.0], np.float32).reshape(3, 1), np.zeros((0, 2), np.int64)]


@pytest.mark.parametrize("x", _UNIQUE, ids=["int32", "bool2d", "nans", "float32", "empty"])
def test_unique(device, run_on, assert_close, x):
    sx = _strict(x)
    assert_close(run_on(device, hm.unique_values, x), _np(strict.unique_values(sx)))
    got = run_on(device, lambda t: tuple(hm.unique_all(t)), x)
    want = strict.unique_all(sx)
    for g, w in zip(got, want):
        assert_close(g, _np(w))
    counts = run_on(device, lambda t: tuple(hm.unique_counts(t)), x)
    for g, w in zip(counts, strict.unique_counts(sx)):
        assert_close(g, _np(w))
    inverse = run_on(device, lambda t: tuple(hm.unique_inverse(t)), x)
    for g, w in zip(inverse, strict.unique_inverse(sx)):
        assert_close(g, _np(w))
    assert inverse[1].shape == x.shape


def test_unique_results_are_named():
    r = hm.unique_all(hm.asarray([2.0, np.nan, np.nan]))
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    assert np.isnan(r.values.numpy()).sum() == 2  # each NaN is distinct
    assert hm.unique_counts(hm.ones(2))._fields == ("values", "counts")
    assert hm.unique_inverse(hm.ones(2))._fields == ("values", "inverse_indices")


# ---- x.at[key].set(value) ---------------------------------------------------------------
_KEYS = [1, (slice(None), -1), (slice(None, None, 2), slice(None, None, -2)), (Ellipsis, None),
         np.array([[True, False, True, False]] * 3), (slice(None), np.array([0, 0, 3])),
         (slice(1, 1),)]


@pytest.mark.parametrize("key", _KEYS, ids=["int", "neg", "steps", "ellipsis", "mask", "ints",
                                            "empty"])
@pytest.mark.parametrize("dtype", ["bool", "int32", "float64"])
def test_at_set(device, run_on, assert_close, sample, key, dtype):
    x = sample((3, 4), dtype)
    target = x[key].shape
    value = sample(target[-1:] if target else (), dtype, seed=5)
    expected = x.copy()
    expected[key] = value
    assert_close(run_on(device, lambda t, v: t.at[key].set(v), x, np.asarray(value)), expected)
    assert_close(run_on(device, lambda t: t.at[key].set(1), x),
                 np.where(np.isin(np.arange(12).reshape(3, 4), np.arange(12).reshape(3, 4)[key]),
                          np.ones((), dtype), x))


def test_at_set_is_functional():
    x = hm.zeros(4)
    y = x.at[1:3].set(hm.ones(2) * 5)
    assert not y.is_materialized
    assert y.numpy().tolist() == [0.0, 5.0, 5.0, 0.0]
    assert x.numpy().tolist() == [0.0, 0.0, 0.0, 0.0]


def test_at_set_errors():
    with pytest.raises(IndexError, match=r"at\[...\].set: index 5 does not index a tensor of "
                                         r"shape \(3, 4\)"):
        hm.zeros((3, 4)).at[5].set(1)
    with pytest.raises(ValueError, match=r"at\[...\].set: a value of shape \(3,\) does not "
                                         r"broadcast to the indexed shape \(2, 4\)"):
        hm.zeros((3, 4)).at[1:].set(hm.ones(3))
