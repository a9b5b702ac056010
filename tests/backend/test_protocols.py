"""NumPy's and DLPack's protocols on every device: ``np.array(t)`` never hands out a tensor's
memory writable, ``__array__`` follows NumPy 2's ``copy=``, DLPack round trips with NumPy
and PyTorch share memory on the host, NumPy calls on tensors stay lazy where Hermes has the
op and compute NumPy's result where it does not, and ``out=`` is refused."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import dask.base
import numpy as np
import pytest

import hermes_nb as hm

TORCH_REASON = ("the PyTorch exchange tests need torch (its CPU wheel: pip install torch "
                "--extra-index-url https://download.pytorch.org/whl/cpu, as .ci/run does); it "
                "is not in the test extra: PyPI's Linux wheel brings gigabytes of CUDA libraries")


def _data(shape: tuple[int, ...] = (6, 5), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 2.0, shape).astype(np.float32)


def _computed(device: Any, a: np.ndarray) -> hm.Tensor:
    """A tensor computed on ``device`` (its value lives there)."""
    with hm.device(device):
        return (hm.asarray(a) * 1.0).compute()


def _host_export(device: Any, t: hm.Tensor) -> np.ndarray:
    """``np.from_dlpack(t)``; from a GPU, NumPy asks for a host copy."""
    return np.from_dlpack(t, device="cpu") if device.kind == "cuda" else np.from_dlpack(t)


# ---- np.array(t) and __array__ ------------------------------------------------------------
@pytest.mark.parametrize("convert", [
    lambda t: np.asarray(t), lambda t: np.array(t, copy=False), lambda t: np.array(t, copy=None),
    lambda t: np.asarray(t, dtype=np.float32), lambda t: t.numpy(),
], ids=["asarray", "copy=False", "copy=None", "asarray-dtype", "numpy"])
def test_writing_into_a_view_raises_and_never_changes_the_tensor(device: Any, convert: Any
                                                                  ) -> None:
    a = _data()
    t = _computed(device, a)
    view = convert(t)
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = -7.0
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("convert", [
    lambda t: np.array(t), lambda t: np.array(t, copy=True), lambda t: t.__array__(copy=True),
    lambda t: np.array(t, dtype=np.float64),
], ids=["array", "copy=True", "__array__-copy", "array-dtype"])
def test_np_array_gives_a_writable_copy(device: Any, convert: Any) -> None:
    a = _data()
    t = _computed(device, a)
    copy = convert(t)
    assert copy.flags.writeable and not np.shares_memory(copy, t.numpy())
    copy[...] = -7.0
    np.testing.assert_array_equal(t.numpy(), a)


def test_array_copy_false_refuses_a_conversion(device: Any) -> None:
    t = _computed(device, _data())
    with pytest.raises(ValueError, match="copy"):
        t.__array__(dtype=np.float64, copy=False)
    with pytest.raises(ValueError):
        np.array(t, dtype=np.float64, copy=False)
    same = t.__array__(dtype=np.float32, copy=False)
    assert same.dtype == np.float32 and not same.flags.writeable
    converted = np.asarray(t, dtype=np.float64)
    assert converted.dtype == np.float64
    np.testing.assert_array_equal(converted, t.numpy().astype(np.float64))


# ---- DLPack with NumPy ---------------------------------------------------------------------
def test_dlpack_to_numpy_is_read_only_and_equal(device: Any) -> None:
    a = _data()
    t = _computed(device, a)
    kind = 2 if device.kind == "cuda" else 1
    assert t.__dlpack_device__() == (kind, device.index if kind == 2 else 0)
    out = _host_export(device, t)
    np.testing.assert_array_equal(out, a)
    assert not out.flags.writeable  # DLPack 1.0's read-only flag, honoured by NumPy >= 2.1
    lazy = hm.asarray(a) + 1.0  # a lazy tensor is computed on export
    np.testing.assert_allclose(np.from_dlpack(lazy), a + 1.0)


def test_dlpack_on_cpu_shares_the_computed_buffer() -> None:
    t = _computed(hm.get_device("cpu:0"), _data((1024, 64)))
    out = np.from_dlpack(t)
    assert out.ctypes.data == t.numpy().ctypes.data  # no copy: the tensor's own buffer
    assert not out.flags.writeable


def test_from_dlpack_reads_numpy_in_place(device: Any) -> None:
    a = _data()
    t = hm.from_dlpack(a, device=device)
    assert t.device == device.id and np.shares_memory(t.node.attrs["value"], a)
    np.testing.assert_allclose((t * 2).numpy(), a * 2)
    snapshot = hm.from_dlpack(a, copy=True)
    assert not np.shares_memory(snapshot.node.attrs["value"], a)
    with pytest.raises(ValueError, match="copy=False"):
        hm.from_dlpack(a.T, copy=False)  # strided: needs a copy
    np.testing.assert_array_equal(hm.from_dlpack(a.T).numpy(), a.T)
    with pytest.raises(TypeError, match="DLPack"):
        hm.from_dlpack([1, 2, 3])


def test_dlpack_round_trip(device: Any) -> None:
    a = _data()
    t = _computed(device, a)
    back = hm.from_dlpack(t)
    assert back is t
    again = hm.from_dlpack(_host_export(device, t))
    np.testing.assert_array_equal(again.numpy(), a)


class _OldConsumerView:
    """A producer wrapper as a DLPack < 1.0 consumer sees it: ``__dlpack__(stream)`` only."""

    def __init__(self, t: hm.Tensor, copy: bool | None = None) -> None:
        self.t, self.copy = t, copy

    def __dlpack__(self, stream: Any = None) -> Any:
        return self.t.__dlpack__(stream=stream, copy=self.copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.t.__dlpack_device__()


def test_older_dlpack_consumers_get_a_copy() -> None:
    a = _data()
    t = _computed(hm.get_device("cpu:0"), a)
    old = np.from_dlpack(_OldConsumerView(t))  # an unversioned capsule: no read-only flag
    assert not np.shares_memory(old, t.numpy())
    np.testing.assert_array_equal(old, a)
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__(copy=False)
    assert t.__dlpack__(max_version=(1, 0), copy=False) is not None
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=1, max_version=(1, 0))
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))


def test_dask_tokenize_is_the_node_key() -> None:
    t = hm.arange(4) + 1
    assert t.__dask_tokenize__() == t.node.key
    assert dask.base.tokenize(t) == dask.base.tokenize(t)
    assert dask.base.tokenize(t) != dask.base.tokenize(t + 1)


# ---- PyTorch -------------------------------------------------------------------------------
def _torch() -> Any:
    """torch, or a skip; with ``CI`` set (``.ci/run`` installs the CPU wheel) a failure."""
    if importlib.util.find_spec("torch") is None and \
            os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"CI runs the PyTorch exchange tests, but torch is missing: {TORCH_REASON}",
                    pytrace=False)
    return pytest.importorskip("torch", reason=TORCH_REASON)


def test_torch_from_dlpack_and_as_tensor(device: Any) -> None:
    torch = _torch()
    if device.kind == "cuda" and not torch.cuda.is_available():
        pytest.skip("this torch build has no CUDA; test_cupy_exchange covers cuda:N")
    a = _data()
    t = _computed(device, a)
    shared = torch.from_dlpack(t)
    np.testing.assert_array_equal(shared.cpu().numpy(), a)
    if device.id == "cpu:0":
        assert shared.data_ptr() == t.numpy().ctypes.data  # zero-copy
    lazy = hm.asarray(a) * 2.0
    np.testing.assert_allclose(torch.as_tensor(lazy).cpu().numpy(), a * 2)


def test_asarray_and_from_dlpack_read_torch_in_place(device: Any) -> None:
    torch = _torch()
    source = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for make in (hm.asarray, hm.from_dlpack):
        with hm.device(device):
            t = make(source)
        value = t.node.attrs["value"]
        assert value.ctypes.data == source.data_ptr() and not value.flags.writeable
        np.testing.assert_array_equal((t + 1).numpy(), source.numpy() + 1)
    np.testing.assert_array_equal(hm.asarray(source.T).numpy(), source.numpy().T)  # copied
    with pytest.raises(ValueError, match="copy=False"):
        hm.asarray(source.T, copy=False)
    assert hm.asarray(source, dtype="float64").dtype == np.float64
    with pytest.raises(TypeError, match="float16"):
        hm.asarray(source.half())
    with pytest.raises(BufferError, match="gradient"):
        hm.asarray(source.clone().requires_grad_())


def test_jax_arrays_go_both_ways(device: Any) -> None:
    jnp = pytest.importorskip("jax.numpy", reason="the JAX exchange test needs jax (in the "
                              "test extra: pip install -e '.[test]')")
    source = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    with hm.device(device):
        t = hm.asarray(source)
    assert t.node.attrs["value"].ctypes.data == source.unsafe_buffer_pointer()  # in place
    np.testing.assert_array_equal((t * 2).numpy(), np.asarray(source) * 2)
    if device.kind != "cuda":  # a CPU build of JAX reads host memory only
        back = jnp.from_dlpack(_computed(device, np.asarray(source)))
        np.testing.assert_array_equal(np.asarray(back), np.asarray(source))


# ---- NumPy calls on tensors ----------------------------------------------------------------
A = _data((4, 5), seed=1)
B = _data((4, 5), seed=2)
LAZY_CALLS = {
    "exp": lambda x, y: np.exp(x), "add-scalar": lambda x, y: np.add(x, 1),
    "ndarray+t": lambda x, y: B + x, "scalar*t": lambda x, y: np.float32(2) * x,
    "power": lambda x, y: np.power(x, 2), "maximum": lambda x, y: np.maximum(x, y),
    "greater": lambda x, y: np.greater(x, y), "sqrt": lambda x, y: np.sqrt(x),
    "sum-axis0": lambda x, y: np.sum(x, axis=0), "mean": lambda x, y: np.mean(x),
    "add.reduce": lambda x, y: np.add.reduce(x), "max-keepdims": lambda x, y: np.max(
        x, axis=1, keepdims=True), "std-ddof": lambda x, y: np.std(x, ddof=1),
    "argmin": lambda x, y: np.argmin(x, axis=1), "where": lambda x, y: np.where(x > 1, x, 0),
    "concatenate": lambda x, y: np.concatenate([x, y], axis=1),
    "stack": lambda x, y: np.stack([x, y]), "transpose": lambda x, y: np.transpose(x),
    "matmul": lambda x, y: np.matmul(x, np.transpose(y)), "clip": lambda x, y: np.clip(
        x, 0.8, 1.5), "reshape": lambda x, y: np.reshape(x, (5, 4)),
    "cumsum": lambda x, y: np.cumsum(x), "round": lambda x, y: np.round(x),
    "expand_dims": lambda x, y: np.expand_dims(x, 0), "flip": lambda x, y: np.flip(x, axis=1),
    "sum-dtype": lambda x, y: np.sum(x, dtype=np.float64),
}


@pytest.mark.parametrize("name", list(LAZY_CALLS))
def test_numpy_calls_stay_lazy(device: Any, name: str) -> None:
    call = LAZY_CALLS[name]
    with hm.device(device):
        x, y = hm.asarray(A), hm.asarray(B)
        out = call(x, y)
    assert isinstance(out, hm.Tensor) and not out.is_materialized
    expected = call(A, B)
    got = out.numpy()
    assert got.dtype == np.asarray(expected).dtype and got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda x: np.median(x, axis=0), lambda x: np.sort(x, axis=1), lambda x: np.where(x > 1),
    lambda x: np.percentile(x, 30), lambda x: np.add(x, 1, dtype=np.float64),
    lambda x: np.linalg.norm(x, axis=0), lambda x: np.round(x, 2),
    lambda x: np.add.outer(x[0], x[1]),
], ids=["median", "sort", "where-1", "percentile", "add-dtype", "linalg.norm", "round-2",
        "add.outer"])
def test_numpy_calls_without_a_hermes_op_compute_numpys_result(device: Any, call: Any) -> None:
    with hm.device(device):
        x = hm.asarray(A)
    out, expected = call(x), call(A)
    for got, want in zip(*(v if isinstance(v, tuple) else (v,) for v in (out, expected))):
        assert not isinstance(got, hm.Tensor)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_out_is_refused(device: Any) -> None:
    with hm.device(device):
        x = hm.asarray(A)
    target = np.empty_like(A)
    for call in (lambda: np.exp(x, out=target), lambda: np.add(x, 1, target),
                 lambda: np.sum(x, axis=0, out=target[0]), lambda: np.clip(x, 0, 1, out=target),
                 lambda: np.median(x, out=target[0, 0])):
        with pytest.raises(TypeError, match="out="):
            call()
    with pytest.raises(TypeError, match="immutable"):
        np.add.at(x, [0], 1)


def test_metadata_functions_compute_nothing() -> None:
    t = hm.asarray(A) * 2
    assert np.shape(t) == A.shape and np.ndim(t) == 2 and np.size(t) == A.size
    assert np.result_type(t, np.float64) == np.float64
    assert not t.is_materialized


# ---- CUDA (CuPy) -----------------------------------------------------------------------------
class _CudaProducer:
    """A DLPack producer that says its data is on CUDA device 7."""

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise AssertionError("Hermes must not read CUDA data without a cuda device")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 7)


def test_cuda_data_needs_a_cuda_device() -> None:
    if any(d.id == "cuda:7" for d in hm.devices()):
        pytest.skip("this machine has a cuda:7")
    for make in (hm.from_dlpack, hm.asarray):
        with pytest.raises(BufferError, match="cuda:7"):
            make(_CudaProducer())


@pytest.mark.gpu
def test_cupy_exchange_without_a_host_trip(cuda_device: Any) -> None:
    cupy = pytest.importorskip("cupy", reason="needs CuPy for the cuda exchange")
    source = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    t = hm.from_dlpack(source)
    assert t.device == cuda_device.id and t.is_materialized
    assert t.__dlpack_device__() == (2, cuda_device.index)
    back = cupy.from_dlpack(t)
    assert back.data.ptr == source.data.ptr  # the same device memory both ways
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        doubled = cupy.from_dlpack((t * 2).compute())  # the producer orders work on stream
        total = float(doubled.sum())
    assert total == float(source.sum()) * 2
    np.testing.assert_array_equal(hm.asarray(source.T).numpy(), cupy.asnumpy(source.T))
