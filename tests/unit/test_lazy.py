"""Laziness: graphs build instantly with NumPy's shapes and dtypes; work runs at compute."""

from __future__ import annotations

import re
import time
import tracemalloc
from collections import Counter

import numpy as np
import pytest

import hermes_nb as hm

HUGE = (10**6, 10**6)  # 8 TB of float64: any allocation would fail or take forever


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Count ``Device.execute`` calls per op name, on every device."""
    calls: Counter = Counter()
    for dev in hm.devices():
        original = dev.execute

        def counting(spec, inputs, _original=original):
            calls[spec.op] += 1
            calls[("key", spec.key)] += 1
            return _original(spec, inputs)

        monkeypatch.setattr(dev, "execute", counting)
    return calls


@pytest.fixture
def executions_by_device(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Count ``Device.execute`` calls per device id."""
    calls: Counter = Counter()
    for dev in hm.devices():

        def counting(spec, inputs, _original=dev.execute, _id=dev.id):
            calls[_id] += 1
            return _original(spec, inputs)

        monkeypatch.setattr(dev, "execute", counting)
    return calls


def n_ops(calls: Counter) -> int:
    return sum(v for k, v in calls.items() if isinstance(k, str))


def _forbidden(*args, **kwargs):
    raise AssertionError("a device ran work while only building a graph")


@pytest.fixture
def no_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    for dev in hm.devices():
        monkeypatch.setattr(dev, "execute", _forbidden)
        monkeypatch.setattr(dev, "from_host", _forbidden)


# --------------------------------------------------------------------------- nothing runs


def _build_many(shape):
    z = hm.zeros(shape)
    o = hm.ones(shape, dtype="float32")
    r = hm.Tensor.random(shape, seed=1)
    f = hm.full(shape, 3, dtype="int32")
    return (
        ((z + 1) * 2 - hm.exp(o)).sum(axis=0),
        z @ z,
        hm.where(z > 0, r, o),
        z.T[::2, 5:10],
        hm.gaussian_blur(o, kernel_size=5),
        hm.sobel_edge_detection(r),
        hm.concat([z, z], axis=1),
        f + 1,
    )


def test_huge_graph_builds_instantly_without_allocating(no_execution) -> None:
    _build_many((16, 16))  # warm up: imports and caches are not what this test measures
    tracemalloc.start()
    try:
        start = time.perf_counter()
        z = hm.zeros(HUGE)
        o = hm.ones(HUGE, dtype="float32")
        r = hm.Tensor.random(HUGE, seed=1)
        f = hm.full(HUGE, 3, dtype="int32")
        y = (z + 1) * 2 - hm.exp(o)
        s = y.sum(axis=0)
        m = z @ z
        w = hm.where(z > 0, r, o)
        t = z.T[::2, 5:10]
        g = hm.gaussian_blur(o, kernel_size=5)
        e = hm.sobel_edge_detection(r)
        c = hm.concat([z, z], axis=1)
        i = f + 1
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0
    assert peak < 50 * 2**20, f"building allocated {peak} bytes"
    assert z.shape == HUGE and z.dtype == np.float64
    assert o.dtype == np.float32 and r.dtype == np.float32
    assert f.dtype == np.int32 and i.dtype == np.int32
    assert y.shape == HUGE and y.dtype == np.float64
    assert s.shape == (10**6,) and s.dtype == np.float64
    assert m.shape == HUGE
    assert w.shape == HUGE and w.dtype == np.float32
    assert t.shape == (500_000, 5)
    assert g.shape == HUGE and g.dtype == np.float32
    assert e.shape == HUGE
    assert c.shape == (10**6, 2 * 10**6)
    assert z.size == 10**12 and z.ndim == 2


def test_no_execution_before_compute(executions: Counter) -> None:
    x = hm.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = hm.exp(x * 0.1) + x.sum(axis=0)
    z = hm.gaussian_blur(y, kernel_size=3) @ x.T
    _ = (repr(z), str(z), z.shape, z.dtype, z.ndim, z.size, z.device, z.T, z[0])
    assert n_ops(executions) == 0
    result = z.numpy()
    assert n_ops(executions) > 0
    assert result.shape == (3, 3)


def test_explain_does_not_execute(executions: Counter) -> None:
    x = hm.asarray(np.ones((4, 4), np.float32))
    pipe = hm.compose(hm.gaussian_blur(kernel_size=3), hm.sobel(axis=-1))
    pipe.explain()
    pipe(x).explain()
    (x @ x).explain()
    # small elementwise/movement work on constants: explain() describes it, never runs it
    (hm.exp(x * 0.1).T + 1.0).explain()
    assert n_ops(executions) == 0


def test_shared_subexpression_runs_once(executions: Counter) -> None:
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((16, 8)).astype(np.float32)
    b_np = rng.standard_normal((8, 12)).astype(np.float32)
    shared = hm.asarray(a_np) @ hm.asarray(b_np)
    out1 = hm.exp(shared * 0.1) + 1.0
    out2 = shared.sum(axis=0)
    r1, r2 = hm.compute(out1, out2)
    assert executions["matmul"] == 1
    repeated = {k: v for k, v in executions.items() if isinstance(k, tuple) and v > 1}
    assert not repeated, f"ops executed more than once in one compute: {repeated}"

    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
    np.testing.assert_allclose(r1.numpy(), np.exp(ref * 0.1) + 1.0, rtol=1e-4)
    np.testing.assert_allclose(r2.numpy(), ref.sum(axis=0), rtol=1e-4, atol=1e-4)


def test_compute_of_several_does_less_work_than_separately(executions: Counter) -> None:
    def build():
        x = hm.asarray(np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8))
        s = hm.gaussian_blur(x, kernel_size=3) @ x
        # a reduction and an elementwise op: computed apart, each graph fuses the matmul
        # into its own kernel, so the shared product shows as work saved only here
        return s.sum(axis=0), s * 2.0

    a, _ = build()
    a.numpy()
    _, b = build()  # a fresh graph, so no result of the first compute can be reused
    b.numpy()
    separately = n_ops(executions)
    executions.clear()
    a, b = build()
    hm.compute(a, b)
    together = n_ops(executions)
    assert together < separately


@pytest.mark.skipif(not any(d.id == "opencl:0" for d in hm.devices()), reason="no opencl:0 device")
def test_pinned_ops_run_on_the_pinned_device(executions_by_device: Counter) -> None:
    """``with hm.device("opencl:0")`` pins every op built inside, however small its input."""
    src = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    with hm.device("opencl:0"):
        y = hm.exp(hm.asarray(src) * 0.5).T + 1.0
    assert y.device == "opencl:0"
    np.testing.assert_allclose(y.numpy(), np.exp(src * 0.5).T + 1.0, rtol=1e-5)
    assert executions_by_device["opencl:0"] >= 1
    assert executions_by_device["cpu:0"] == 0, "ops pinned to opencl:0 ran on cpu:0"


# --------------------------------------------------------------------------- shape/dtype inference

I32 = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int32)
I64 = np.array([7, -8, 9], dtype=np.int64)
F32 = np.array([[0.5, -1.5, 2.25], [3.0, -0.125, 4.5]], dtype=np.float32)
F64 = np.array([[1.5], [-2.5]], dtype=np.float64)
B = np.array([[True, False, True], [False, False, True]])
V32 = np.array([1.0, 2.0, 3.0], dtype=np.float32)
M34 = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
BATCH = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 1, 3, 4) / 10
Z = np.zeros((0, 3), dtype=np.float32)
S = np.float32(2.5)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name -> builder, called with a namespace of NumPy (reference) or of Hermes
CASES = {
    "add_i32_f32": lambda m: m.add(m.I32, m.F32),
    "f32_times_py_float": lambda m: m.F32 * 2.0,
    "i32_plus_py_int": lambda m: m.I32 + 1,
    "i32_times_py_float": lambda m: m.I32 * 2.5,
    "py_int_minus_i32": lambda m: 3 - m.I32,
    "py_float_rdiv_f32": lambda m: 1.0 / (m.F32 + 10),
    "i32_truediv": lambda m: m.I32 / m.I32,
    "i32_floordiv": lambda m: m.I32 // 2,
    "i32_mod_neg": lambda m: m.I32 % -4,
    "f32_pow_py": lambda m: abs(m.F32) ** 0.5,
    "i32_pow_py_int": lambda m: m.I32**2,
    "neg_f64": lambda m: -m.F64,
    "i32_plus_i64": lambda m: m.I32 + m.I64,
    "f32_plus_f64_bcast": lambda m: m.F32 + m.F64,
    "exp_i32": lambda m: m.exp(m.I32 // 2),
    "exp_f32": lambda m: m.exp(m.F32),
    "log_f32": lambda m: m.log(abs(m.F32) + 1),
    "sqrt_i64": lambda m: m.sqrt(m.I64 * m.I64),
    "sin_cos_tanh": lambda m: m.sin(m.F32) + m.cos(m.F32) * m.tanh(m.F32),
    "floor_ceil_round": lambda m: m.floor(m.F32) + m.ceil(m.F32) - m.round(m.F32),
    "maximum_bcast": lambda m: m.maximum(m.F32, m.V32),
    "minimum_int": lambda m: m.minimum(m.I32, 2),
    "hypot": lambda m: m.hypot(m.F32, m.V32),
    "compare": lambda m: m.F32 > m.V32,
    "compare_int_float": lambda m: m.equal(m.I32, m.F32 * 0 + 4),
    "logical": lambda m: (m.B & ~m.B) | (m.F32 > 0),
    "where": lambda m: m.where(m.B, m.F32, m.F64),
    "where_scalar": lambda m: m.where(m.B, m.I32, 0),
    "clip": lambda m: m.clip(m.F32, -1.0, 1.0),
    "astype": lambda m: m.F32.astype("int32") + m.B.astype("int64"),
    "sum_i32": lambda m: m.I32.sum(),
    "sum_bool_axis": lambda m: m.B.sum(axis=0),
    "sum_f32_keepdims": lambda m: m.F32.sum(axis=1, keepdims=True),
    "prod_i32": lambda m: m.prod(m.I32, axis=(0, 1)),
    "mean_i32": lambda m: m.I32.mean(axis=-1),
    "mean_f32": lambda m: m.mean(m.F32, axis=0, keepdims=True),
    "max_min": lambda m: m.F32.max(axis=0) - m.F32.min(axis=0),
    "argmax": lambda m: m.argmax(m.F32),
    "argmin_axis": lambda m: m.argmin(m.I32, axis=1, keepdims=True),
    "var_std": lambda m: m.var(m.F32, axis=0) + m.std(m.F32, axis=0),
    "matmul_2d": lambda m: m.M34.T @ m.M34,
    "matmul_vec": lambda m: m.matmul(m.M34, m.M34[0]),
    "matmul_vec_mat": lambda m: m.matmul(m.M34[:, 0], m.M34),
    "matmul_batched_bcast": lambda m: m.matmul(m.BATCH, m.M34.T),
    "matmul_int": lambda m: m.I32 @ m.I32.T,
    "transpose": lambda m: m.BATCH.T,
    "permute": lambda m: m.permute_dims(m.BATCH, (2, 0, 3, 1)),
    "reshape": lambda m: m.BATCH.reshape(4, -1),
    "reshape_fn": lambda m: m.reshape(m.M34, (2, 2, 3)),
    "broadcast_to": lambda m: m.broadcast_to(m.V32, (2, 4, 3)),
    "concat": lambda m: m.concat([m.F32, m.F32 * 2, m.Z], axis=0),
    "stack": lambda m: m.stack([m.V32, m.V32 + 1], axis=1),
    "index_int_slice": lambda m: m.M34[1, ::-2],
    "index_none_ellipsis": lambda m: m.BATCH[..., None, 1:3, -1],
    "index_negative": lambda m: m.M34[-1:-4:-1, -2],
    "zero_size_ops": lambda m: (m.Z + 1).sum(axis=1),
    "numpy_scalar_arith": lambda m: m.F32 * m.S + m.S,
    "relu_sigmoid": lambda m: m.relu(m.F32) + m.sigmoid(m.F32 - 1),
    "ndarray_left": lambda m: V32 * 2 - m.F32,
    "ndarray_left_matmul": lambda m: M34.T @ m.M34,
    "ndarray_left_compare": lambda m: V32 >= m.F32,
}


class _NumpyNamespace:
    """Numpy with the names the Hermes API uses, plus the test inputs as attributes."""

    I32, I64, F32, F64, B, V32, M34, BATCH, Z, S = I32, I64, F32, F64, B, V32, M34, BATCH, Z, S

    relu = staticmethod(lambda x: np.maximum(x, 0))
    sigmoid = staticmethod(_sigmoid)

    def __getattr__(self, name):
        return getattr(np, name)


class _HermesNamespace:
    def __init__(self) -> None:
        for name in ("I32", "I64", "F32", "F64", "B", "V32", "M34", "BATCH", "Z"):
            setattr(self, name, hm.asarray(globals()[name]))
        self.S = S  # a NumPy scalar, as users write it

    def __getattr__(self, name):
        return getattr(hm, name)


_NP = _NumpyNamespace()


def _numpy_result(name):
    with np.errstate(all="ignore"):
        return np.asarray(CASES[name](_NP))


@pytest.mark.parametrize("name", list(CASES))
def test_shape_and_dtype_inference_matches_numpy(name: str, no_execution) -> None:
    expected = _numpy_result(name)
    got = CASES[name](_HermesNamespace())
    assert isinstance(got, hm.Tensor)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype, f"{got.dtype} != numpy's {expected.dtype}"
    assert got.ndim == expected.ndim
    assert got.size == expected.size


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_numpy(name: str) -> None:
    expected = _numpy_result(name)
    got = CASES[name](_HermesNamespace()).numpy()
    assert isinstance(got, np.ndarray)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    if expected.dtype.kind == "f":
        tol = 1e-5 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, expected)


def test_dtype_strings_and_objects_accepted() -> None:
    assert hm.zeros((2,), dtype="int32").dtype == np.int32
    assert hm.zeros((2,), dtype=hm.int64).dtype == np.int64
    assert hm.zeros((2,), dtype=np.float32).dtype == np.float32
    assert hm.ones((2,), dtype="bool").dtype == np.bool_
    assert hm.float32 == np.dtype(np.float32)
    assert hm.bool == np.dtype(np.bool_)


def test_default_dtypes_follow_numpy() -> None:
    assert hm.zeros((2,)).dtype == np.float64
    assert hm.ones((2,)).dtype == np.float64
    assert hm.arange(5).dtype == np.arange(5).dtype
    assert hm.arange(0.0, 1.0, 0.25).dtype == np.float64
    assert hm.arange(0.0, 1.0, 0.25).shape == (4,)
    assert hm.arange(2, 11, 3).shape == (3,)
    assert hm.asarray([1, 2]).dtype == np.int64
    assert hm.asarray([1.0, 2]).dtype == np.float64
    assert hm.asarray(True).shape == ()
    assert hm.Tensor.random((3,)).dtype == np.float32
    assert hm.random.normal((3,)).dtype == np.float32
    assert hm.random.uniform((3,), dtype="float64").dtype == np.float64


# --------------------------------------------------------------------------- repr


def test_repr_mentions_shape_dtype_and_lazy(executions: Counter) -> None:
    x = hm.ones((2, 3), dtype="float32") + 1
    text = repr(x)
    assert "lazy" in text.lower()
    assert "float32" in text
    assert re.search(r"2\s*[,x×]\s*3", text), text
    assert n_ops(executions) == 0
    text64 = repr(hm.zeros((7,), dtype="int64"))
    assert "int64" in text64
    assert "7" in text64


# --------------------------------------------------------------------------- compute


def test_hm_compute_returns_tensors_equal_to_individual_results() -> None:
    rng = np.random.default_rng(3)
    a_np = rng.standard_normal((6, 5)).astype(np.float32)
    a = hm.asarray(a_np)
    outs = (a * 2 + 1, a.max(axis=1), a @ a.T, (a > 0).sum(), a[::-1, 1])
    computed = hm.compute(*outs)
    assert isinstance(computed, tuple)
    assert len(computed) == len(outs)
    refs = (
        a_np * 2 + 1,
        a_np.max(axis=1),
        a_np.astype(np.float64) @ a_np.T.astype(np.float64),
        (a_np > 0).sum(),
        a_np[::-1, 1],
    )
    for lazy, done, ref in zip(outs, computed, refs, strict=True):
        assert isinstance(done, hm.Tensor)
        assert done.shape == lazy.shape and done.dtype == lazy.dtype
        individual = lazy.numpy()
        np.testing.assert_array_equal(done.numpy(), individual)
        np.testing.assert_allclose(individual, ref, rtol=1e-5, atol=1e-5)


def test_hm_compute_of_one() -> None:
    (one,) = hm.compute(hm.ones((2,)) * 3)
    np.testing.assert_array_equal(one.numpy(), [3.0, 3.0])


def test_compute_result_is_reused_without_recomputing(executions: Counter) -> None:
    rng = np.random.default_rng(4)
    a_np = rng.standard_normal((8, 8)).astype(np.float32)
    a = hm.asarray(a_np)
    c = (a @ a).compute()
    assert isinstance(c, hm.Tensor)
    assert c.shape == (8, 8) and c.dtype == np.float32
    assert executions["matmul"] == 1
    ref = a_np @ a_np
    d = c + 1.0
    e = c.sum(axis=0)
    np.testing.assert_allclose(d.numpy(), ref + 1.0, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(e.numpy(), ref.sum(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-4, atol=1e-4)
    assert executions["matmul"] == 1, "using a computed tensor re-ran its graph"


def test_numpy_and_asarray_and_python_scalars() -> None:
    a_np = np.arange(6, dtype=np.int32).reshape(2, 3)
    a = hm.asarray(a_np)
    np.testing.assert_array_equal(np.asarray(a), a_np)
    np.testing.assert_array_equal(a.numpy(), a.numpy())
    assert len(a) == 2
    total = a.sum()
    assert int(total) == 15
    assert float(a.mean()) == pytest.approx(2.5)
    assert bool(a[0, 1] == 1) is True
    assert bool(a.max() > 5) is False


def test_asarray_of_tensor_and_from_numpy_keep_values() -> None:
    src = np.array([[1.5, -2.0]], dtype=np.float64)
    a = hm.Tensor.from_numpy(src)
    b = hm.asarray(a)
    c = hm.asarray(a, dtype="float32")
    assert b.dtype == np.float64 and c.dtype == np.float32
    np.testing.assert_array_equal(b.numpy(), src)
    np.testing.assert_array_equal(c.numpy(), src.astype(np.float32))


def test_random_is_lazy_and_seeded(executions: Counter) -> None:
    r1 = hm.Tensor.random((50,), seed=7)
    r2 = hm.Tensor.random((50,), seed=7)
    r3 = hm.Tensor.random((50,), seed=8)
    assert n_ops(executions) == 0
    v1, v2, v3 = r1.numpy(), r2.numpy(), r3.numpy()
    np.testing.assert_array_equal(v1, v2)
    assert not np.array_equal(v1, v3)
    assert v1.min() >= 0.0 and v1.max() < 1.0
