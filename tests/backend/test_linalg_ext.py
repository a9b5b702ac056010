"""``hm.linalg`` (the array API 2024.12 linalg extension) on every device: each function
against ``np.linalg`` and ``array_api_strict.linalg`` on the same inputs, batched, in
float32 and float64; the dtype rules, the build-time errors, and that the compositions stay
lazy and fuse."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hermes_nb as hm

xp = pytest.importorskip("array_api_strict")

L = hm.linalg
FLOATS = ["float32", "float64"]
NAMES = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
         "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
         "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
         "vector_norm"]


def _fp(device, dtype):
    if not device.supports(np.dtype(dtype)):
        pytest.skip(f"{device.id} has no {dtype}")


def _strict(fn, *arrays, **kwargs):
    out = fn(*[xp.asarray(a) for a in arrays], **kwargs)
    if isinstance(out, tuple):
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


def _spd(shape, dtype, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def _loose(dtype):
    return (2e-4, 2e-4) if np.dtype(dtype) == np.float32 else (1e-9, 1e-9)


def _close(actual, expected, dtype):
    rtol, atol = _loose(dtype)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def test_namespace_has_the_standard_names():
    assert sorted(n for n in NAMES if callable(getattr(L, n))) == NAMES
    assert "linalg" in hm.__all__ and hm.linalg is hm.api.linalg_namespace
    from hermes_nb.api.linalg import matmul
    assert matmul is hm.matmul


@pytest.mark.parametrize("name", NAMES)
def test_signatures_match_array_api_strict(name):
    import inspect

    ours = inspect.signature(getattr(L, name)).parameters
    theirs = inspect.signature(getattr(xp.linalg, name)).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]


# ---- lazy compositions --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1])
@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (-1, False), ((0, 2), True)])
def test_vector_norm(device, run_on, sample, dtype, ord, axis, keepdims):
    _fp(device, dtype)
    x = sample((3, 4, 5), dtype, seed=1)
    x[0, 0, 0] = 0
    got = run_on(device, L.vector_norm, x, axis=axis, keepdims=keepdims, ord=ord)
    with np.errstate(divide="ignore"):  # NumPy's own 1/|0| for a negative ord
        expected = np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
        strict = _strict(xp.linalg.vector_norm, x, axis=axis, keepdims=keepdims, ord=ord)
    _close(got, expected, dtype)
    _close(got, strict, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm(device, run_on, sample, dtype, ord, keepdims):
    _fp(device, dtype)
    x = sample((2, 3, 4), dtype, seed=2)
    got = run_on(device, L.matrix_norm, x, keepdims=keepdims, ord=ord)
    _close(got, np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord), dtype)
    _close(got, _strict(xp.linalg.matrix_norm, x, keepdims=keepdims, ord=ord), dtype)


@pytest.mark.parametrize("offset", [-3, -1, 0, 2, 4, 9])
def test_diagonal_and_trace(device, run_on, sample, offset):
    x = sample((2, 4, 5), "float32", seed=3)
    got = run_on(device, L.diagonal, x, offset=offset)
    np.testing.assert_array_equal(got, np.linalg.diagonal(x, offset=offset))
    np.testing.assert_array_equal(got, _strict(xp.linalg.diagonal, x, offset=offset))
    _close(run_on(device, L.trace, x, offset=offset), np.linalg.trace(x, offset=offset),
           "float32")
    n = sample((3, 3), "int32", seed=3)
    t = run_on(device, L.trace, n, dtype=hm.int64)
    assert t.dtype == np.int64 and t == np.trace(n)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cross_outer_and_the_contractions(device, run_on, sample, dtype):
    _fp(device, dtype)
    a, b = sample((4, 3, 5), dtype, seed=4), sample((3, 5), dtype, seed=5)
    _close(run_on(device, L.cross, a, b, axis=-2), np.linalg.cross(a, b, axis=-2), dtype)
    _close(run_on(device, L.cross, a[..., 0], b[..., 0]),
           _strict(xp.linalg.cross, a[..., 0], b[..., 0]), dtype)
    u, v = sample(4, dtype, seed=6), sample(3, dtype, seed=7)
    _close(run_on(device, L.outer, u, v), np.linalg.outer(u, v), dtype)
    m = sample((2, 3, 4), dtype, seed=8)
    _close(run_on(device, L.matmul, m, L.matrix_transpose(hm.asarray(m)).numpy()),
           m @ np.swapaxes(m, -1, -2), dtype)
    _close(run_on(device, L.vecdot, m, m), np.linalg.vecdot(m, m), dtype)
    _close(run_on(device, L.tensordot, m, np.swapaxes(m, 0, 2).copy(), axes=1),
           np.tensordot(m, np.swapaxes(m, 0, 2), axes=1), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -2])
def test_matrix_power(device, run_on, dtype, n):
    _fp(device, dtype)
    x = (_spd((2, 3, 3), dtype, seed=9) / 4).astype(dtype)
    got = run_on(device, L.matrix_power, x, n)
    _close(got, np.linalg.matrix_power(x, n), dtype)
    _close(got, _strict(xp.linalg.matrix_power, x, n), dtype)


def test_lazy_ones_stay_lazy_and_fuse(device, sample):
    x = sample((512, 1024), "float32", seed=10)
    with hm.device(device):
        t = hm.asarray(x)
        before = hm.runtime.last_profile()
        outs = [L.vector_norm(t), L.matrix_norm(t), L.trace(t), L.diagonal(t),
                L.cross(t[:, :3], t[:, 3:6]), L.outer(t[0], t[1]), L.matrix_power(t[:4, :4], 3)]
    assert all(not o.is_materialized for o in outs)
    assert hm.runtime.last_profile() is before, "building ran something"
    fuses = "fused_reduce" in device.fused_ops  # the reference plug-in fuses nothing
    norm = L.vector_norm(t).numpy()
    assert not fuses or len(hm.runtime.last_profile().kernels) == 1, \
        hm.runtime.last_profile().kernels
    np.testing.assert_allclose(norm, np.linalg.vector_norm(x), rtol=1e-4)
    fro = L.matrix_norm(t).numpy()
    assert not fuses or len(hm.runtime.last_profile().kernels) == 1, \
        hm.runtime.last_profile().kernels
    np.testing.assert_allclose(fro, np.linalg.matrix_norm(x), rtol=1e-4)


# ---- eager factorizations -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3, 3)])
def test_square_factorizations(device, run_on, dtype, shape):
    _fp(device, dtype)
    x = _spd(shape, dtype, seed=11)
    for name in ("det", "inv", "eigvalsh", "cholesky"):
        got = run_on(device, getattr(L, name), x)
        _close(got, getattr(np.linalg, name)(x), dtype)
        _close(got, _strict(getattr(xp.linalg, name), x), dtype)
    _close(run_on(device, L.cholesky, x, upper=True), np.linalg.cholesky(x, upper=True), dtype)
    for name in ("slogdet", "eigh"):
        got = run_on(device, getattr(L, name), x)
        for g, e in zip(got, getattr(np.linalg, name)(x)):
            if name == "eigh" and g.ndim == len(shape):  # eigenvectors up to sign
                g, e = np.abs(g), np.abs(e)
            _close(g, e, dtype)


def test_results_are_named_tuples_on_the_device(device, sample):
    x = _spd((3, 3), "float32")
    with hm.device(device):
        t = hm.asarray(x)
        results = [L.eigh(t), L.qr(t), L.slogdet(t), L.svd(t)]
    assert [type(r).__name__ for r in results] == ["EighResult", "QRResult", "SlogdetResult",
                                                   "SVDResult"]
    assert results[0].eigenvalues.dtype == np.float32 and results[1].Q.device == device.id
    assert results[3]._fields == ("U", "S", "Vh") and results[2]._fields == ("sign", "logabsdet")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5)])
def test_rectangular_factorizations(device, run_on, sample, dtype, shape):
    _fp(device, dtype)
    x = sample(shape, dtype, seed=12)
    _close(run_on(device, L.svdvals, x), np.linalg.svdvals(x), dtype)
    _close(run_on(device, L.pinv, x), np.linalg.pinv(x), dtype)
    _close(run_on(device, L.pinv, x, rtol=0.5), np.linalg.pinv(x, rtol=0.5), dtype)
    _close(run_on(device, L.pinv, x), _strict(xp.linalg.pinv, x), dtype)
    for mode in ("reduced", "complete"):
        q, r = run_on(device, L.qr, x, mode=mode)
        eq, er = np.linalg.qr(x, mode=mode)
        assert (q.shape, r.shape, q.dtype) == (eq.shape, er.shape, eq.dtype)
        _close(q @ r, x, dtype)
    for full in (True, False):
        u, s, vh = run_on(device, L.svd, x, full_matrices=full)
        eu, es, evh = np.linalg.svd(x, full_matrices=full)
        assert (u.shape, s.shape, vh.shape, u.dtype) == (eu.shape, es.shape, evh.shape, eu.dtype)
        _close(s, es, dtype)
    low = np.matmul(x, np.swapaxes(x, -1, -2))  # rank 3 in a 5x5 / 3x3 matrix
    rank = run_on(device, L.matrix_rank, low)
    np.testing.assert_array_equal(rank, np.linalg.matrix_rank(low))
    np.testing.assert_array_equal(rank, _strict(xp.linalg.matrix_rank, low))


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_batched_and_vector(device, run_on, sample, dtype):
    _fp(device, dtype)
    a = _spd((2, 3, 3), dtype, seed=13)
    b = sample((2, 3, 4), dtype, seed=14)
    _close(run_on(device, L.solve, a, b), np.linalg.solve(a, b), dtype)
    _close(run_on(device, L.solve, a, b), _strict(xp.linalg.solve, a, b), dtype)
    v = sample(3, dtype, seed=15)
    _close(run_on(device, L.solve, a, v), np.linalg.solve(a, v), dtype)
    _close(run_on(device, L.solve, a, b[0]), np.linalg.solve(a, b[0]), dtype)


def test_singular_matrix_is_an_error_naming_the_function_and_no_warning():
    x = hm.asarray(np.ones((3, 3)))
    with pytest.raises(np.linalg.LinAlgError, match=r"^inv: Singular matrix"):
        L.inv(x)
    assert float(L.det(x)) == 0.0
    assert float(L.slogdet(x).logabsdet) == -math.inf


# ---- errors at build time -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cholesky", "det", "eigh", "eigvalsh", "inv", "pinv", "qr",
                                  "slogdet", "svd", "svdvals", "matrix_rank", "vector_norm",
                                  "matrix_norm"])
def test_integer_input_is_refused(name):
    with pytest.raises(TypeError, match=f"^{name}: x has dtype int64; {name} requires a "
                                        r"floating-point dtype \(float32, float64, complex64 "
                                        r"or complex128\)"):
        getattr(L, name)(hm.asarray(np.eye(3, dtype=np.int64)))


@pytest.mark.parametrize("name", ["det", "inv", "cholesky", "slogdet", "eigh", "eigvalsh"])
def test_non_square_is_refused(name):
    with pytest.raises(ValueError, match=rf"^{name}: x must be a \(stack of\) square matrices, "
                                         r"got shape \(2, 3\) \(2 x 3\)"):
        getattr(L, name)(hm.ones((2, 3)))
    with pytest.raises(ValueError, match=rf"^{name}: x must have at least 2 dimensions"):
        getattr(L, name)(hm.ones(3))


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: L.solve(hm.eye(3), hm.ones(4)), ValueError,
     r"solve: x2 of shape (4,) does not match x1 of shape (3, 3): x2 must be (3,) or (..., 3, K)"),
    (lambda: L.solve(hm.ones((2, 3, 3)), hm.ones((4, 3, 1))), ValueError, "solve"),
    (lambda: L.cross(hm.ones(3), hm.ones(4)), ValueError,
     "cross: x2 of shape (4,) must have size 3 along axis -1"),
    (lambda: L.cross(hm.ones((2, 3)), hm.ones((4, 3))), ValueError, "cross"),
    (lambda: L.cross(hm.ones(3), hm.ones(3), axis=-2), ValueError,
     "cross: axis -2 is out of range for shapes (3,) and (3,) (allowed: -1 to -1)"),
    (lambda: L.vector_norm(hm.ones(3), ord="fro"), ValueError,
     "vector_norm: ord must be a number (2, 1, inf, -inf, 0 or another p), got 'fro'"),
    (lambda: L.vector_norm(hm.ones(3), axis=2), ValueError,
     "vector_norm: axis 2 is out of range for shape (3,) (allowed: -1 to 0)"),
    (lambda: L.matrix_norm(hm.ones((2, 2)), ord=3), ValueError,
     "matrix_norm: ord 3 is not a matrix norm; allowed: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf"),
    (lambda: L.matrix_power(hm.ones((2, 3)), 2), ValueError,
     "matrix_power: x must be a (stack of) square matrices (..., M, M), got shape (2, 3)"),
    (lambda: L.matrix_power(hm.eye(2), 1.5), TypeError, "matrix_power: n must be an int, got 1.5"),
    (lambda: L.qr(hm.eye(2), mode="r"), ValueError,
     "qr: mode 'r' is not allowed; allowed: 'reduced', 'complete'"),
    (lambda: L.outer(hm.ones((2, 2)), hm.ones(2)), ValueError,
     "outer: x1 must be 1-D, got shape (2, 2)"),
    (lambda: L.diagonal(hm.ones(3)), ValueError,
     "diagonal: x must have at least 2 dimensions (..., M, N), got shape (3,)"),
    (lambda: L.pinv(hm.eye(2), rtol="big"), TypeError,
     "pinv: rtol must be a float, a tensor or None, got 'big'"),
])
def test_bad_arguments_are_refused_when_built(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)
