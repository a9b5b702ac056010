"""No silently wrong number: aliasing, task keys, float32 sums, integer powers and inputs
that Hermes cannot represent, on every device, compared with NumPy."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm

# ---- a computed tensor is immutable ------------------------------------------------


def _computed(device: Any) -> tuple[hm.Tensor, np.ndarray]:
    source = np.arange(6, dtype=np.float32)
    with hm.device(device):
        c = (hm.asarray(source) * 2).compute()
    return c, source


@pytest.mark.parametrize("get", ["numpy", "asarray"])
def test_writing_into_a_result_never_changes_the_tensor(device: Any, get: str) -> None:
    c, _ = _computed(device)
    out = c.numpy() if get == "numpy" else np.asarray(c)
    try:
        out[0] = -1
    except ValueError as exc:
        assert "read-only" in str(exc)
    np.testing.assert_array_equal((c + 0).numpy(), np.arange(6, dtype=np.float32) * 2)
    np.testing.assert_array_equal(c.numpy(), np.arange(6, dtype=np.float32) * 2)


def test_np_array_copies_and_is_writable(device: Any) -> None:
    c, _ = _computed(device)
    out = np.array(c)
    out[0] = -1
    assert out.flags.writeable and out[0] == -1
    np.testing.assert_array_equal((c + 0).numpy(), np.arange(6, dtype=np.float32) * 2)


def test_array_protocol_honours_copy(device: Any) -> None:
    c, _ = _computed(device)
    assert np.asarray(c, copy=True).flags.writeable
    converted = np.asarray(c, dtype=np.float64)
    assert converted.dtype == np.float64
    np.testing.assert_array_equal(converted, np.arange(6) * 2.0)
    with pytest.raises(ValueError, match=r"Unable to avoid copy.*float32.*float64"):
        np.asarray(c, dtype=np.float64, copy=False)
    np.testing.assert_array_equal(np.asarray(c, copy=False), np.arange(6, dtype=np.float32) * 2)


def test_input_array_is_never_changed(device: Any) -> None:
    c, source = _computed(device)
    np.testing.assert_array_equal(source, np.arange(6, dtype=np.float32))
    source[0] = 100  # and changing it afterwards does not leak into the tensor
    np.testing.assert_array_equal(c.numpy(), np.arange(6, dtype=np.float32) * 2)


# ---- task keys come from content (of copied constants: a borrowed array's key is unique) -


def _graph(data: np.ndarray) -> hm.Tensor:
    x = hm.asarray(data, copy=True)
    return hm.tanh(x * 0.5 + 1.0).sum(axis=0)


def test_same_graph_gives_same_key_and_different_data_different_keys() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    k1, k2 = _graph(a).node.key, _graph(a.copy()).node.key
    assert k1 == k2 and k1.startswith("hermes-sum-")
    assert _graph(a + 1).node.key != k1
    assert hm.from_numpy(a).node.key != hm.from_numpy(a.astype(np.float64)).node.key
    assert (hm.from_numpy(a) * 2).node.key != (hm.from_numpy(a) * 3).node.key
    # computed buffers never share a key, even when their values are equal
    b1, b2 = _graph(a).compute(), _graph(a).compute()
    assert b1.node.key != b2.node.key


_KEYS_SCRIPT = """
import json, sys
import numpy as np
import hermes_nb as hm
from hermes_nb.ir.node import toposort
data = np.full((3, 4), float(sys.argv[1]), dtype=np.float32)
x = hm.asarray(data, copy=True)
out = hm.tanh(x * 0.5 + 1.0).sum(axis=0)
print(json.dumps([n.key for n in toposort([out.node])]))
"""


def _keys_in_new_process(value: float) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _KEYS_SCRIPT, str(value)], check=True,
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keys_agree_across_processes_and_differ_with_data() -> None:
    a1, a2, b = _keys_in_new_process(1.0), _keys_in_new_process(1.0), _keys_in_new_process(2.0)
    assert a1 == a2
    # every node downstream of the data differs; the scalar constants (0.5, 1.0) are shared
    assert len(set(a1) & set(b)) == 2
    assert {k.split("-")[1] for k in a1} >= {"constant", "tanh", "sum"}


def test_two_clients_on_one_cluster_get_their_own_results(device: Any) -> None:
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(5)
    images = [rng.uniform(0, 1, (24, 20)).astype(np.float32) for _ in range(2)]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  host="127.0.0.1", protocol="tcp://",
                                  # no HTTP server (None still binds 8787, and a busy 8787
                                  # leaks a socket that the warnings filter turns into an error)
                                  dashboard_address="127.0.0.1:0",
                                  scheduler_kwargs={"dashboard": False}) as cluster, \
            distributed.Client(cluster, set_as_default=False) as c1, \
            distributed.Client(cluster, set_as_default=False) as c2:
        for client, img in zip((c1, c2), images):
            with client.as_current(), hm.device(device):
                got = (hm.asarray(img) * 3.0 + 1.0).sum(axis=1).numpy()
            expected = (img * np.float32(3) + np.float32(1)).sum(axis=1)
            np.testing.assert_allclose(got, expected, rtol=1e-5)


# ---- integers to negative integer powers raise, as in NumPy -----------------------

NEGATIVE_POWER = "pow: Integers to negative integer powers are not allowed"
BASE = np.array([2, 3, -1, 5], dtype=np.int64)


def test_numpy_refuses_negative_integer_powers() -> None:
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        np.power(BASE, np.array([-1, 0, -1, -2]))


@pytest.mark.parametrize("exponent", [-2, np.int32(-1), np.array([-1, 0, -1, -2])])
def test_negative_constant_exponent_raises_at_build(device: Any, exponent) -> None:
    with hm.device(device):
        x = hm.asarray(BASE)
        with pytest.raises(ValueError, match=NEGATIVE_POWER) as info:
            x ** exponent
        assert "int64 base" in str(info.value) and "astype('float64')" in str(info.value)


@pytest.mark.parametrize("form", ["plain", "fused", "scalar_base", "computed"])
def test_negative_array_exponent_raises_at_compute(device: Any, form: str) -> None:
    with hm.device(device):
        x, e = hm.asarray(BASE), hm.arange(-2, 2)
        graph = {
            "plain": lambda: x ** e,
            "fused": lambda: (x * 1) ** (e + 0) + 1,
            "scalar_base": lambda: 2 ** e,
            "computed": lambda: x ** (e * 1).compute(),
        }[form]()
    with pytest.raises(ValueError, match=NEGATIVE_POWER):
        graph.numpy()


def test_non_negative_integer_exponent_still_computes(device: Any) -> None:
    with hm.device(device):
        out = ((hm.asarray(BASE) * 1) ** hm.arange(0, 4)).numpy()
    np.testing.assert_array_equal(out, np.power(BASE, np.arange(4)))


# ---- float32 sums as accurate as NumPy's pairwise summation -----------------------

N_SUM = 2**24 + 3  # past float32's 24-bit mantissa: a running float32 sum drifts here
REL = 4e-6


@pytest.fixture(scope="module")
def tenths() -> np.ndarray:
    return np.full(N_SUM, 0.1, dtype=np.float32)


@pytest.fixture(scope="module")
def rows() -> np.ndarray:
    return np.full((3, (N_SUM + 2) // 3), 0.1, dtype=np.float32)


FLAT = {  # generic reductions, and reductions fused with their producers / epilogues
    "hm.mean": (lambda x: hm.mean(x), np.mean),
    "sum": (lambda x: x.sum(), np.sum),
    "fused sum": (lambda x: (x * 1).sum(), np.sum),
    "fused mean": (lambda x: (x * 1).mean(), np.mean),
}


@pytest.mark.parametrize("form", list(FLAT))
def test_float32_reduction_of_many_values_matches_numpy(device: Any, tenths, form: str) -> None:
    build, reference = FLAT[form]
    with hm.device(device):
        got = build(hm.asarray(tenths)).numpy()
    expected = reference(tenths)
    assert got.dtype == np.float32
    assert abs(float(got) - float(expected)) <= REL * abs(float(expected)), (got, expected)


AXIS = {
    "sum(axis=1)": lambda x: x.sum(axis=1),
    "fused sum(axis=1)": lambda x: (x * 1).sum(axis=1),
    "fused mean(axis=1)": lambda x: (x * 1).mean(axis=1) * x.shape[1],
    "transposed sum(axis=0)": lambda x: x.T.sum(axis=0),
    "fused transposed sum(axis=0)": lambda x: (x.T * 1).sum(axis=0),
}


@pytest.mark.parametrize("form", list(AXIS))
def test_float32_sum_over_an_axis_matches_numpy(device: Any, rows, form: str) -> None:
    with hm.device(device):
        got = AXIS[form](hm.asarray(rows)).numpy()
    expected = rows.sum(axis=1)  # NumPy's pairwise sum along the contiguous axis
    assert got.dtype == np.float32 and got.shape == (3,)
    np.testing.assert_allclose(got, expected, rtol=REL)


# ---- inputs are taken as they are, or refused ---------------------------------------


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">i4", ">i8"])
def test_big_endian_input_gives_native_values(device: Any, dtype: str) -> None:
    source = np.arange(-3, 9, dtype=dtype).reshape(3, 4)
    with hm.device(device):
        t = hm.asarray(source)
        got = (t * 2).numpy()
    assert t.dtype == source.dtype.newbyteorder("=") and t.dtype.isnative
    np.testing.assert_array_equal(got, source.astype(source.dtype.newbyteorder("=")) * 2)
    assert got.dtype.isnative


@pytest.mark.parametrize("op", ["var", "std"])
def test_nan_correction_gives_nan_like_numpy(device: Any, op: str) -> None:
    data = np.array([[1.0, 2.0, 4.0], [0.5, 3.0, 3.5]])
    with hm.device(device):
        got = getattr(hm, op)(hm.asarray(data), axis=1, correction=float("nan")).numpy()
    with np.errstate(invalid="ignore"):
        expected = getattr(np, op)(data, axis=1, ddof=float("nan"))
    assert np.isnan(expected).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))


def test_refused_inputs_raise_on_every_device(device: Any) -> None:
    with hm.device(device):
        with pytest.raises(TypeError, match="conv2d: kernel holds complex values"):
            hm.conv2d(np.ones((5, 5), np.float32), np.array([[0, 1j, 0]] * 3))
        with pytest.raises(TypeError, match="asarray: input is a masked array"):
            hm.asarray(np.ma.masked_invalid([1.0, np.nan]))
        with pytest.raises(OverflowError, match="full: fill_value 1099511627776 is out of bounds"):
            hm.full((2,), 2**40, dtype="int32")


def test_opencl_buffer_over_the_device_limit_is_a_clear_memory_error(device: Any) -> None:
    from hermes_nb.backends import get_device

    dev = get_device(device.id)
    if dev.kind != "opencl":
        pytest.skip("CL_DEVICE_MAX_MEM_ALLOC_SIZE is an OpenCL device's limit")
    limit = int(dev.cl_device.max_mem_alloc_size)
    with hm.device(device):
        too_big = hm.zeros((limit // 4 + 1,), dtype="float32") + 1
    with pytest.raises(MemoryError) as info:
        too_big.numpy()
    message = str(info.value)
    assert f"needs one buffer of {(limit // 4 + 1) * 4} bytes" in message
    assert f"CL_DEVICE_MAX_MEM_ALLOC_SIZE = {limit} bytes" in message and dev.id in message
