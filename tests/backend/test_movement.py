"""Movement ops on every device: reshape, permute/transpose/.T, broadcast_to, indexing,
concat and stack, compared with NumPy (values, dtype and shape)."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm

DTYPES = ["bool", "int32", "int64", "float32", "float64"]


# ----------------------------------------------------------------------------
# reshape
# ----------------------------------------------------------------------------

RESHAPES = [
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (24,)),
    ((2, 3, 4), (4, -1)),
    ((2, 3, 4), (-1,)),
    ((2, 3, 4), (2, 1, 3, 1, 4)),
    ((24,), (2, 3, 4)),
    ((1,), ()),
    ((), (1, 1)),
    ((6,), (3, 2)),
    ((0, 4), (2, 0, 2)),
]


@pytest.mark.parametrize(("src", "dst"), RESHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_reshape(device, run_on, assert_close, sample, dtype, src, dst):
    x = sample(src, dtype, seed=1)
    assert_close(run_on(device, lambda t: t.reshape(dst), x), x.reshape(dst))
    assert_close(run_on(device, lambda t: hm.reshape(t, dst), x), np.reshape(x, dst))
    if len(dst) > 0:
        assert_close(run_on(device, lambda t: t.reshape(*dst), x), x.reshape(*dst))


def test_reshape_of_non_contiguous(device, run_on, assert_close, sample):
    x = sample((4, 6), "float64", seed=2)
    assert_close(run_on(device, lambda t: t.T.reshape(3, 8), x), x.T.reshape(3, 8))
    assert_close(run_on(device, lambda t: t[::-1, 1::2].reshape(-1), x), x[::-1, 1::2].reshape(-1))
    assert_close(run_on(device, lambda t: (t * 2).reshape(2, 12).T + 1, x), (x * 2).reshape(2, 12).T + 1)


@pytest.mark.parametrize("bad", [(5, 5), (7, -1), (-1, -1), (2, -3)], ids=str)
def test_bad_reshape_raises_at_build(device, bad):
    with hm.device(device):
        t = hm.zeros((4, 6), dtype="float32")
        with pytest.raises(ValueError, match="reshape"):
            t.reshape(bad)
        with pytest.raises(ValueError):
            hm.reshape(t, bad)


# ----------------------------------------------------------------------------
# permute_dims / transpose / .T
# ----------------------------------------------------------------------------

PERMUTES = [
    ((3, 4), (1, 0)),
    ((3, 4), (0, 1)),
    ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4), (1, 2, 0)),
    ((2, 3, 4), (-1, 0, -2)),
    ((2, 1, 3, 4), (3, 1, 0, 2)),
    ((5,), (0,)),
]


@pytest.mark.parametrize(("shape", "axes"), PERMUTES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_permute_dims(device, run_on, assert_close, sample, dtype, shape, axes):
    x = sample(shape, dtype, seed=3)
    assert_close(run_on(device, lambda t: hm.permute_dims(t, axes), x), np.transpose(x, axes))
    assert_close(run_on(device, lambda t: hm.transpose(t, axes), x), np.transpose(x, axes))


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (2, 3, 1, 5)], ids=str)
def test_transpose_default_and_T(device, run_on, assert_close, sample, shape):
    x = sample(shape, "int32", seed=4)
    assert_close(run_on(device, lambda t: t.T, x), x.T)
    assert_close(run_on(device, lambda t: hm.transpose(t), x), np.transpose(x))
    assert_close(run_on(device, lambda t: t.T.T, x), x)


@pytest.mark.parametrize("axes", [(0,), (0, 0), (0, 2), (0, 1, 2)], ids=str)
def test_bad_permutation_raises(device, axes):
    with hm.device(device):
        t = hm.zeros((2, 3), dtype="float32")
        with pytest.raises(ValueError):
            hm.permute_dims(t, axes)


# ----------------------------------------------------------------------------
# broadcast_to
# ----------------------------------------------------------------------------

BROADCASTS = [
    ((3, 1), (2, 3, 4)),
    ((), (2, 2)),
    ((4,), (3, 4)),
    ((1, 1), (5, 6)),
    ((2, 1, 3), (2, 4, 3)),
    ((3,), (3,)),
    ((1,), (0,)),
]


@pytest.mark.parametrize(("src", "dst"), BROADCASTS, ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float64"])
def test_broadcast_to(device, run_on, assert_close, sample, dtype, src, dst):
    x = sample(src, dtype, seed=5)
    got = run_on(device, lambda t: hm.broadcast_to(t, dst), x)
    assert_close(got, np.broadcast_to(x, dst))


def test_broadcast_to_then_compute(device, run_on, assert_close, sample):
    x = sample((3, 1), "float32", seed=6)
    got = run_on(device, lambda t: hm.broadcast_to(t, (2, 3, 4)) * hm.arange(4.0), x)
    assert_close(got, np.broadcast_to(x, (2, 3, 4)) * np.arange(4.0))


@pytest.mark.parametrize(("src", "dst"), [((3,), (4,)), ((2, 3), (3,)), ((2, 1), (3, 1))], ids=str)
def test_bad_broadcast_to_raises(device, src, dst):
    with hm.device(device):
        t = hm.zeros(src, dtype="float32")
        with pytest.raises(ValueError, match="broadcast"):
            hm.broadcast_to(t, dst)


# ----------------------------------------------------------------------------
# basic indexing
# ----------------------------------------------------------------------------

INDICES = [
    np.s_[0],
    np.s_[-1],
    np.s_[2, 3],
    np.s_[-1, -2, -3],
    np.s_[1:4],
    np.s_[::2],
    np.s_[::-1],
    np.s_[::-2],
    np.s_[4:1:-1],
    np.s_[-2:],
    np.s_[:, ::-1],
    np.s_[:, 1:6:2, ::-3],
    np.s_[..., 0],
    np.s_[..., ::-1],
    np.s_[1, ..., 2],
    np.s_[None],
    np.s_[:, None, 2],
    np.s_[None, ..., None],
    np.s_[2:2],
    np.s_[5:100],
    np.s_[-100:2],
    np.s_[3:1],
    np.s_[::-1, ::-1, ::-1],
    np.s_[1:-1, 1:-1, 1:-1],
    np.s_[:, :, 4],
    np.s_[-6:-1:3, 0:7:7],
    np.s_[1, 2, 3],
    np.s_[...],
    np.s_[()],
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_basic_indexing(device, run_on, assert_close, sample, index):
    x = sample((6, 7, 5), "float32", seed=7)
    assert_close(run_on(device, lambda t: t[index], x), x[index])


@pytest.mark.parametrize("dtype", DTYPES)
def test_indexing_each_dtype(device, run_on, assert_close, sample, dtype):
    x = sample((5, 6), dtype, seed=8)
    assert_close(run_on(device, lambda t: t[::-2, 1:5], x), x[::-2, 1:5])
    assert_close(run_on(device, lambda t: t[3], x), x[3])
    assert_close(run_on(device, lambda t: t[1, -1], x), x[1, -1])


def test_chained_indexing_and_expressions(device, run_on, assert_close, sample):
    x = sample((8, 9), "float64", seed=9)

    def build(t):
        a = t[1:, ::-1][::2, 2:7][None, :, 1]
        return a, (t.T[::3] + 1)[:, ::-2] * t[0, :3].reshape(3, 1)

    got = run_on(device, build, x)
    assert_close(got[0], x[1:, ::-1][::2, 2:7][None, :, 1])
    assert_close(got[1], (x.T[::3] + 1)[:, ::-2] * x[0, :3].reshape(3, 1))


def test_indexing_0d_and_1d(device, run_on, assert_close):
    x = np.arange(5, dtype=np.int64)
    assert_close(run_on(device, lambda t: t[2], x), x[2])
    assert_close(run_on(device, lambda t: t[::-1], x), x[::-1])
    s = np.array(3.5)
    assert_close(run_on(device, lambda t: t[()], s), s[()])
    assert_close(run_on(device, lambda t: t[None], s), s[None])
    assert_close(run_on(device, lambda t: t[...], s), s[...])


@pytest.mark.parametrize("index", [np.s_[6], np.s_[-7], np.s_[0, 0, 0], np.s_[..., ...]], ids=repr)
def test_bad_index_raises_at_build(device, index):
    with hm.device(device):
        t = hm.zeros((6, 4), dtype="float32")
        with pytest.raises((IndexError, ValueError)):
            t[index]


# ----------------------------------------------------------------------------
# concat / stack
# ----------------------------------------------------------------------------

CONCATS = [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 5), (2, 1)], 1),
    ([(2, 3), (2, 5)], -1),
    ([(3, 2, 4), (3, 1, 4), (3, 3, 4)], 1),
    ([(4,), (0,), (2,)], 0),
    ([(2, 2)], 0),
    ([(1, 2, 3), (1, 2, 3)], 2),
]


@pytest.mark.parametrize(("shapes", "axis"), CONCATS, ids=str)
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "float64"])
def test_concat(device, run_on, assert_close, sample, dtype, shapes, axis):
    xs = [sample(s, dtype, seed=10 + i) for i, s in enumerate(shapes)]
    got = run_on(device, lambda *ts: hm.concat(list(ts), axis=axis), *xs)
    assert_close(got, np.concatenate(xs, axis=axis))


def test_concat_of_expressions_and_views(device, run_on, assert_close, sample):
    a = sample((3, 4), "float32", seed=20)
    b = sample((4, 5), "float32", seed=21)

    def build(x, y):
        return hm.concat((x * 2, y.T[::-1], x[:1] + 1), axis=0)

    expected = np.concatenate((a * 2, b.T[::-1], a[:1] + 1), axis=0)
    assert_close(run_on(device, build, a, b), expected)


@pytest.mark.parametrize(("d1", "d2"), [("int32", "int64"), ("int32", "float32"), ("bool", "float64")])
def test_concat_promotes(device, run_on, assert_close, d1, d2):
    a = np.arange(3).astype(d1)
    b = np.arange(2).astype(d2)
    got = run_on(device, lambda x, y: hm.concat([x, y]), a, b)
    assert_close(got, np.concatenate([a, b]))


@pytest.mark.parametrize(("shapes", "axis"), [([(2, 3), (3, 3)], 1), ([(2, 3), (2,)], 0)], ids=str)
def test_bad_concat_raises(device, shapes, axis):
    with hm.device(device):
        ts = [hm.zeros(s, dtype="float32") for s in shapes]
        with pytest.raises(ValueError, match="concat"):
            hm.concat(ts, axis=axis)


def test_concat_axis_out_of_range(device):
    with hm.device(device):
        ts = [hm.zeros((2, 3)), hm.zeros((2, 3))]
        with pytest.raises(ValueError):
            hm.concat(ts, axis=2)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
def test_stack(device, run_on, assert_close, sample, dtype, axis):
    xs = [sample((2, 3), dtype, seed=30 + i) for i in range(3)]
    got = run_on(device, lambda *ts: hm.stack(list(ts), axis=axis), *xs)
    assert_close(got, np.stack(xs, axis=axis))


def test_stack_0d_and_bad_shapes(device, run_on, assert_close):
    xs = [np.array(1.5), np.array(-2.0)]
    assert_close(run_on(device, lambda a, b: hm.stack([a, b]), *xs), np.stack(xs))
    with hm.device(device):
        with pytest.raises(ValueError):
            hm.stack([hm.zeros((2, 3)), hm.zeros((3, 2))])
        with pytest.raises(ValueError):
            hm.stack([hm.zeros((2, 3)), hm.zeros((2, 3))], axis=3)
