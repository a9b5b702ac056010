"""The array API's manipulation, contraction and utility functions on every device, against
NumPy: expand_dims, squeeze, flip, roll, moveaxis, broadcast_arrays, tile, repeat, unstack,
matrix_transpose/.mT, vecdot, tensordot, all, any, count_nonzero, diff, cumulative_sum."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm


@pytest.mark.parametrize(("shape", "axis"), [((2, 3), 0), ((2, 3), -1), ((2, 3), 2), ((), 0),
                                             ((4,), -2)], ids=str)
def test_expand_dims(device, run_on, assert_close, sample, shape, axis):
    x = sample(shape, "int32")
    assert_close(run_on(device, lambda t: hm.expand_dims(t, axis=axis), x),
                 np.expand_dims(x, axis))


@pytest.mark.parametrize(("shape", "axis"), [((1, 3, 1), 0), ((1, 3, 1), (0, 2)),
                                             ((1, 3, 1), -1), ((1, 3, 1), None), ((1,), 0)],
                         ids=str)
def test_squeeze(device, run_on, assert_close, sample, shape, axis):
    x = sample(shape, "float32")
    assert_close(run_on(device, lambda t: hm.squeeze(t, axis), x), np.squeeze(x, axis))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), ()], ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_flip(device, run_on, assert_close, sample, axis, dtype):
    x = sample((2, 3, 4), dtype)
    assert_close(run_on(device, lambda t: hm.flip(t, axis=axis), x), np.flip(x, axis))


@pytest.mark.parametrize(("shift", "axis"), [(2, None), (-7, None), (1, 0), (5, -1),
                                             ((1, -2), (0, 2)), (4, 1), ((1, 1), (1, 1)), (3, (0, 2))],
                         ids=str)
def test_roll(device, run_on, assert_close, sample, shift, axis):
    x = sample((3, 4, 5), "float64")
    assert_close(run_on(device, lambda t: hm.roll(t, shift, axis=axis), x),
                 np.roll(x, shift, axis))


@pytest.mark.parametrize(("source", "destination"), [(0, -1), (-1, 0), ((0, 1), (2, 0)),
                                                     ([2], [1])], ids=str)
def test_moveaxis(device, run_on, assert_close, sample, source, destination):
    x = sample((2, 3, 4), "int64")
    assert_close(run_on(device, lambda t: hm.moveaxis(t, source, destination), x),
                 np.moveaxis(x, source, destination))


def test_broadcast_arrays(device, run_on, assert_close, sample):
    a, b, c = sample((3, 1), "float32"), sample((4,), "int32", seed=1), sample((), "bool")
    got = run_on(device, lambda *ts: tuple(hm.broadcast_arrays(*ts)), a, b, c)
    for g, e in zip(got, np.broadcast_arrays(a, b, c)):
        assert_close(g, e)


@pytest.mark.parametrize(("shape", "reps"), [((3,), (2,)), ((2, 3), (2, 1)), ((2, 3), (3,)),
                                             ((3,), (2, 2)), ((2, 3), (0, 2)), ((), (3,)),
                                             ((2, 1, 2), (1, 2, 3))], ids=str)
def test_tile(device, run_on, assert_close, sample, shape, reps):
    x = sample(shape, "int32")
    assert_close(run_on(device, lambda t: hm.tile(t, reps), x), np.tile(x, reps))


@pytest.mark.parametrize(("repeats", "axis"), [(2, None), (3, 0), (2, -1), (0, 1),
                                               ([1, 0, 2], 1), ([2], 0), ((1, 3), 0)],
                         ids=str)
def test_repeat(device, run_on, assert_close, sample, repeats, axis):
    x = sample((2, 3), "float32")
    assert_close(run_on(device, lambda t: hm.repeat(t, repeats, axis=axis), x),
                 np.repeat(x, repeats, axis))


def test_repeat_counts_from_a_tensor(device, run_on, assert_close, sample):
    x = sample((4,), "int64")
    counts = np.array([0, 2, 1, 3])
    assert_close(run_on(device, lambda t: hm.repeat(t, hm.asarray(counts)), x),
                 np.repeat(x, counts))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(device, run_on, assert_close, sample, axis):
    x = sample((2, 3, 4), "float64")
    got = run_on(device, lambda t: hm.unstack(t, axis=axis), x)
    expected = [np.take(x, i, axis=axis) for i in range(x.shape[axis])]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_close(g, e)


@pytest.mark.parametrize("shape", [(2, 3), (4, 2, 3)], ids=str)
def test_matrix_transpose_and_mT(device, run_on, assert_close, sample, shape):
    x = sample(shape, "int32")
    expected = np.swapaxes(x, -1, -2)
    assert_close(run_on(device, hm.matrix_transpose, x), expected)
    assert_close(run_on(device, lambda t: t.mT, x), expected)


@pytest.mark.parametrize(("a", "b", "axis"), [((5,), (5,), -1), ((3, 4), (4,), -1),
                                              ((2, 1, 4), (3, 4), -1), ((4, 3), (4, 3), -2)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_vecdot(device, run_on, assert_close, sample, a, b, axis, dtype):
    x, y = sample(a, dtype), sample(b, dtype, seed=1)
    assert_close(run_on(device, lambda s, t: hm.vecdot(s, t, axis=axis), x, y),
                 np.vecdot(x, y, axis=axis), loose=True)


@pytest.mark.parametrize(("a", "b", "axes"), [((2, 3, 4), (3, 4, 5), 2), ((3, 4), (4, 5), 1),
                                              ((2, 3), (4,), 0), ((3, 2, 4), (4, 3), ([0, 2], [1, 0])),
                                              ((2, 0), (0, 3), 1)], ids=str)
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_tensordot(device, run_on, assert_close, sample, a, b, axes, dtype):
    x, y = sample(a, dtype), sample(b, dtype, seed=1)
    assert_close(run_on(device, lambda s, t: hm.tensordot(s, t, axes=axes), x, y),
                 np.tensordot(x, y, axes=axes), loose=True)


@pytest.mark.parametrize("fn", ["all", "any", "count_nonzero"])
@pytest.mark.parametrize(("shape", "axis", "keepdims"), [((2, 3), None, False), ((2, 3), 1, True),
                                                         ((2, 0), 1, False), ((3, 4, 2), (0, 2), False)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float64"])
def test_all_any_count_nonzero(device, run_on, assert_close, fn, shape, axis, keepdims, dtype):
    x = (np.arange(np.prod(shape)).reshape(shape) % 3 == 0).astype(dtype)
    got = run_on(device, lambda t: getattr(hm, fn)(t, axis=axis, keepdims=keepdims), x)
    expected = getattr(np, fn)(x, axis=axis, keepdims=keepdims)
    assert_close(got, np.asarray(expected, dtype="int64" if fn == "count_nonzero" else None))


def test_any_all_see_nan_as_true(device, run_on, assert_close):
    x = np.array([np.nan, 0.0, -0.0], dtype="float32")
    assert_close(run_on(device, hm.any, x), np.any(x))
    assert_close(run_on(device, lambda t: hm.all(t[:1]), x), np.all(x[:1]))


@pytest.mark.parametrize(("shape", "axis", "n"), [((6,), -1, 1), ((3, 5), 0, 1), ((3, 5), 1, 2),
                                                  ((4,), 0, 0), ((3,), 0, 5)], ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
def test_diff(device, run_on, assert_close, sample, shape, axis, n, dtype):
    x = sample(shape, dtype)
    assert_close(run_on(device, lambda t: hm.diff(t, axis=axis, n=n), x), np.diff(x, n, axis))


def test_diff_with_prepend_and_append(device, run_on, assert_close, sample):
    x, edge = sample((2, 4), "float64"), sample((2, 1), "float64", seed=3)
    assert_close(run_on(device, lambda t, e: hm.diff(t, prepend=e, append=2.0), x, edge),
                 np.diff(x, prepend=edge, append=2.0))


@pytest.mark.parametrize(("shape", "axis"), [((10,), None), ((1,), 0), ((0,), 0), ((3, 7), 1),
                                             ((5, 2), 0)], ids=str)
@pytest.mark.parametrize(("dtype", "to"), [("int32", None), ("bool", None), ("float32", None),
                                           ("int32", "float64")], ids=str)
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_sum(device, run_on, assert_close, sample, shape, axis, dtype, to,
                        include_initial):
    x = sample(shape, dtype)
    got = run_on(device, lambda t: hm.cumulative_sum(t, axis=axis, dtype=to,
                                                     include_initial=include_initial), x)
    expected = np.cumulative_sum(x, axis=axis, dtype=to or hm.sum(hm.asarray(x)).dtype,
                                 include_initial=include_initial)
    assert_close(got, expected, loose=True)


@pytest.mark.parametrize(("shape", "axis"), [((6,), None), ((3, 4), 1), ((4, 3), 0), ((0,), 0)],
                         ids=str)
@pytest.mark.parametrize("dtype", ["int32", "float64", "bool"])
@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative_prod(device, run_on, assert_close, sample, shape, axis, dtype,
                         include_initial):
    x = sample(shape, dtype, low=-2, high=2)
    got = run_on(device, lambda t: hm.cumulative_prod(t, axis=axis,
                                                      include_initial=include_initial), x)
    expected = np.cumulative_prod(x, axis=axis, include_initial=include_initial,
                                  dtype=hm.prod(hm.asarray(x)).dtype)
    assert_close(got, expected, loose=True)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize(("x1", "x2"), [
    ([1, 2, 2, 5], [[0, 2], [5, 9]]), ([0.5, 1.5, np.nan], [np.nan, 1.5, -np.inf, 2.0]),
    ([], [1, 2]), ([3], 3),
], ids=str)
def test_searchsorted(device, run_on, assert_close, side, x1, x2):
    a = np.asarray(x1, dtype="float64" if any(isinstance(v, float) for v in x1) else "int64")
    v = np.asarray(x2, dtype=a.dtype)
    assert_close(run_on(device, lambda s, t: hm.searchsorted(s, t, side=side), a, v),
                 np.searchsorted(a, v, side=side))


def test_reshape_copy_argument(device, run_on, assert_close, sample):
    x = sample((2, 6), "int32")
    for copy in (None, True, False):
        assert_close(run_on(device, lambda t, c=copy: hm.reshape(t, (3, 4), copy=c), x), x.reshape(3, 4))


# ---- bad input: clear errors when the graph is built ---------------------------------------
_M = hm.zeros((2, 3))


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: hm.squeeze(_M, axis=1), ValueError,
     "squeeze: axis 1 has size 3, only axes of size 1 can be removed"),
    (lambda: hm.squeeze(_M, axis=(0, 0)), ValueError, "squeeze: axis (0, 0) repeats an axis"),
    (lambda: hm.squeeze(_M, axis=2.0), TypeError, "squeeze: axis must be an int or a tuple"),
    (lambda: hm.expand_dims(_M, axis=3), ValueError,
     "expand_dims: axis 3 is out of range for a 3-d tensor (allowed: -3 to 2)"),
    (lambda: hm.flip(_M, axis=5), ValueError, "flip: axis 5 is out of range for a 2-d tensor"),
    (lambda: hm.roll(_M, (1, 2)), ValueError, "roll: shift (1, 2) must be one int when axis is None"),
    (lambda: hm.roll(_M, (1, 2), axis=0), ValueError,
     "roll: shift (1, 2) and axis 0 must have the same length"),
    (lambda: hm.roll(_M, 1.5), TypeError, "roll: shift must be an int or a tuple of ints, got 1.5"),
    (lambda: hm.moveaxis(_M, (0, 1), 0), ValueError,
     "moveaxis: source (0, 1) and destination 0 must name the same number of axes"),
    (lambda: hm.broadcast_arrays(_M, hm.zeros(4)), ValueError,
     "broadcast_arrays: shapes (2, 3), (4,) cannot be broadcast together"),
    (lambda: hm.tile(_M, 2), TypeError, "tile: repetitions must be a tuple of ints, got 2"),
    (lambda: hm.tile(_M, (-1, 2)), ValueError, "tile: repetitions (-1, 2) must not be negative"),
    (lambda: hm.repeat(_M, [1, 2], axis=1), ValueError,
     "repeat: repeats has 2 counts, but the axis has size 3"),
    (lambda: hm.repeat(_M, -1), ValueError, "repeat: repeats -1 must not be negative"),
    (lambda: hm.repeat(_M, hm.ones(2), axis=0), TypeError,
     "repeat: repeats must hold integers, got dtype float64"),
    (lambda: hm.unstack(hm.zeros(())), ValueError, "unstack: x must have at least 1 dimension"),
    (lambda: hm.matrix_transpose(hm.zeros(3)), ValueError,
     "matrix_transpose: x must have at least 2 dimensions, got shape (3,)"),
    (lambda: hm.zeros(3).mT, ValueError, "matrix_transpose: x must have at least 2 dimensions"),
    (lambda: hm.vecdot(_M, hm.zeros((2, 4))), ValueError,
     "vecdot: axis -1 has size 3 in x1 (shape (2, 3)) but 4 in x2 (shape (2, 4))"),
    (lambda: hm.vecdot(_M, _M, axis=0), ValueError,
     "vecdot: axis 0 is out of range for shapes (2, 3) and (2, 3) (allowed: -2 to -1)"),
    (lambda: hm.vecdot(hm.ones(2, dtype="bool"), hm.ones(2, dtype="bool")), TypeError,
     "vecdot: bool operands are not supported"),
    (lambda: hm.tensordot(_M, _M, axes=1), ValueError,
     "tensordot: axis 1 of x1 (shape (2, 3)) has size 3 but axis 0 of x2 (shape (2, 3)) has "
     "size 2; contracted axes must match"),
    (lambda: hm.tensordot(_M, _M, axes=3), ValueError, "tensordot: axes=3 must be between 0 and 2"),
    (lambda: hm.tensordot(_M, _M, axes=([0], [0, 1])), ValueError,
     "tensordot: axes ([0], [0, 1]) name 1 axes of x1 but 2 of x2"),
    (lambda: hm.tensordot(_M, _M, axes="ij"), TypeError,
     "tensordot: axes must be an int or a pair of sequences of axes"),
    (lambda: hm.all(_M, axis=2), ValueError, "all: axis 2 is out of range for a 2-d tensor"),
    (lambda: hm.count_nonzero(_M, axis=(0, 0)), ValueError, "count_nonzero: repeated axis"),
    (lambda: hm.diff(_M, n=-1), ValueError, "diff: n must be a non-negative int, got -1"),
    (lambda: hm.diff(_M, prepend=hm.zeros(2)), ValueError,
     "diff: prepend of shape (2,) must be a scalar or have 2 dimensions like x"),
    (lambda: hm.diff(hm.zeros(())), ValueError, "diff: x must have at least 1 dimension"),
    (lambda: hm.cumulative_sum(_M), ValueError,
     "cumulative_sum: axis must be given for a tensor of shape (2, 3)"),
    (lambda: hm.cumulative_sum(_M, axis=1, dtype="float16"), TypeError,
     "cumulative_sum: unsupported dtype float16"),
    (lambda: hm.cumulative_prod(_M, axis=0, include_initial=1), TypeError,
     "cumulative_prod: include_initial must be True or False, got 1"),
    (lambda: hm.searchsorted(_M, 1.0), ValueError, "searchsorted: x1 must be 1-D, got shape (2, 3)"),
    (lambda: hm.searchsorted(hm.ones(3), 1.0, side="middle"), ValueError,
     "searchsorted: side must be 'left' or 'right', got 'middle'"),
    (lambda: hm.searchsorted(hm.ones(3), 1.0, sorter=hm.ones(3)), TypeError,
     "searchsorted: sorter must be an integer array of x1's shape (3,), got dtype float64"),
    (lambda: hm.reshape(_M, (3, 2), copy="no"), TypeError,
     "reshape: copy must be True, False or None, got 'no'"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_bad_input_is_refused_at_build(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_repeat_of_a_tensor_counts_is_eager_but_the_result_is_lazy():
    out = hm.repeat(hm.arange(3), hm.asarray([1, 0, 2]))
    assert not out.is_materialized and out.shape == (3,)


def test_large_compositions_run_fused(device, run_on, assert_close, sample):
    """Above the JIT size, on compiled kernels: roll, flip, tile, cumulative_sum, vecdot."""
    x = sample((300, 200), "float32")
    assert_close(run_on(device, lambda t: hm.roll(t, 7, axis=1) * 2, x), np.roll(x, 7, axis=1) * 2)
    assert_close(run_on(device, lambda t: hm.flip(t, axis=0) - 1, x), np.flip(x, axis=0) - 1)
    assert_close(run_on(device, lambda t: hm.tile(t, (2, 1)) + 0, x), np.tile(x, (2, 1)))
    assert_close(run_on(device, lambda t: hm.vecdot(t, t), x), np.vecdot(x, x), loose=True)
    ints = sample((70_000,), "int32")
    assert_close(run_on(device, hm.cumulative_sum, ints), np.cumulative_sum(ints, dtype="int64"))
    assert_close(run_on(device, lambda t: hm.count_nonzero(t > 0), x), np.count_nonzero(x > 0))
