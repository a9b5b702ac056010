"""Zero-copy transfers where a device computes in host memory (cpu:0, OpenCL devices with
host-unified memory such as PoCL): inputs are read in place, results come back without a
device copy, and the transfer model counts such moves as free.

Whatever a device does, results equal NumPy, a result handed out is never overwritten by
a later compute, and the caller's input is never written (nor made read-only).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.backends import devices, get_device
from hermes_nb.scheduler.model import Link, TransferModel

N = 1 << 16  # 256 KiB of float32: cpu:0 runs its Numba kernel, OpenCL its vector kernel


def _data(n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, n).astype(np.float32)


def _w2(x: hm.Tensor, y: hm.Tensor, z: hm.Tensor) -> hm.Tensor:
    return hm.exp(-((x * y + z) ** 2) * 0.5) + x


def _w2_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.exp(-((a * b + c) ** 2) * np.float32(0.5)) + a


def _on(device: Any, fn: Any, *arrays: np.ndarray) -> np.ndarray:
    with hm.device(str(device.id)):
        return fn(*(hm.asarray(a) for a in arrays)).numpy()


def _unified_opencl() -> list[Any]:
    return [d for d in devices() if d.kind == "opencl" and d.shares_host_memory]


unified = pytest.mark.skipif(not _unified_opencl(), reason="no host-unified OpenCL device")


@pytest.fixture
def cl_device() -> Any:
    return _unified_opencl()[0]


def _host_pointer(buffer: Any) -> int:
    """Where a mapped view of an OpenCL buffer lives in host memory."""
    import pyopencl as cl

    dev_queue = buffer.queue
    mapped, _ = cl.enqueue_map_buffer(dev_queue, buffer.base_data, cl.map_flags.READ,
                                      buffer.offset, (buffer.nbytes,), np.uint8)
    pointer = mapped.ctypes.data
    mapped.base.release(dev_queue).wait()
    return int(pointer)


# ---- every device --------------------------------------------------------------------------


def test_results_equal_numpy(device: Any) -> None:
    a, b, c = _data(seed=0), _data(seed=1), _data(seed=2)
    got = _on(device, _w2, a, b, c)
    np.testing.assert_allclose(got, _w2_numpy(a, b, c), rtol=1e-5, atol=1e-6)


def test_a_result_handed_out_is_not_overwritten_by_a_later_compute(device: Any) -> None:
    a, b, c = _data(seed=0), _data(seed=1), _data(seed=2)
    first = _on(device, _w2, a, b, c)
    kept = first.copy()
    for seed in range(3, 6):  # same sizes: a pool would hand the same memory out again
        _on(device, _w2, _data(seed=seed), b, c)
    np.testing.assert_array_equal(first, kept)


def test_input_is_unchanged_and_still_writeable(device: Any) -> None:
    a, b = _data(seed=0), _data(seed=1)
    before = a.copy()
    for fn in (lambda x, y: x * y + 1, lambda x, y: hm.exp(x) - y, lambda x, y: x.reshape(256, 256)):
        _on(device, fn, a, b)
    np.testing.assert_array_equal(a, before)
    assert a.flags.writeable and b.flags.writeable
    a[0] = 5.0  # the caller may still write its array


def test_a_view_of_the_input_is_a_snapshot(device: Any) -> None:
    """A result that is a plain reshape of an input must not change when the input does."""
    a = _data(seed=0)
    with hm.device(str(device.id)):
        t = hm.asarray(a).reshape(256, 256).compute()
    before = a.reshape(256, 256).copy()
    a[:] = 7.0
    np.testing.assert_array_equal(t.numpy(), before)


def test_shares_host_memory_matches_the_transfer_model(device: Any) -> None:
    dev = get_device(str(device.id))
    model = TransferModel(None, default=Link(1e-3, 1e9, 1e-3, 1e9))
    model.set_shares_host_memory(dev.id, dev.shares_host_memory)
    estimate = model.seconds("host", dev.id, 128 << 20)
    if dev.shares_host_memory:
        assert estimate == 0.0
    else:
        assert estimate > 0.1


# ---- the host device -----------------------------------------------------------------------


def test_cpu_from_host_reads_in_place_and_copies_what_it_must() -> None:
    cpu = get_device("cpu:0")
    a = _data()
    view = cpu.from_host(a)
    assert np.shares_memory(view, a) and not view.flags.writeable and a.flags.writeable
    strided = a[::2]
    assert not np.shares_memory(cpu.from_host(strided), a)
    swapped = a.astype(">f4")
    got = cpu.from_host(swapped)
    assert got.dtype.isnative and np.array_equal(got, a)


# ---- OpenCL with host-unified memory ---------------------------------------------------------


@unified
def test_from_host_wraps_a_contiguous_array(cl_device: Any) -> None:
    a = _data()
    buf = cl_device.from_host(a)
    assert _host_pointer(buf) == a.ctypes.data
    assert buf.base_data.hostbuf is a  # the buffer keeps the array alive
    assert a.flags.writeable


@unified
@pytest.mark.parametrize("make", [
    lambda a: a[::2],  # not contiguous
    lambda a: _misaligned(a),
    lambda a: a.astype(">f4"),  # not native byte order
], ids=["strided", "misaligned", "byteswapped"])
def test_from_host_copies_what_it_cannot_wrap(cl_device: Any, make: Any) -> None:
    a = _data()
    src = make(a)
    buf = cl_device.from_host(src)
    pointer = _host_pointer(buf)
    assert not (src.ctypes.data <= pointer < src.ctypes.data + src.nbytes)
    np.testing.assert_array_equal(cl_device.to_host(buf), src.astype(src.dtype.newbyteorder("=")))


@unified
def test_to_host_of_a_result_is_its_own_host_memory(cl_device: Any, monkeypatch: Any) -> None:
    import pyopencl as cl

    def no_device_copy(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("to_host copied through the driver")

    a = _data()
    buf = cl_device.execute(*_square(cl_device, a))
    monkeypatch.setattr(type(buf), "get", no_device_copy)
    monkeypatch.setattr(cl, "enqueue_copy", no_device_copy)
    host = cl_device.to_host(buf)
    assert host.ctypes.data == _host_pointer(buf)
    np.testing.assert_array_equal(host, a * a)


@unified
def test_to_host_of_a_wrapped_input_is_a_copy(cl_device: Any) -> None:
    a = _data()
    host = cl_device.to_host(cl_device.from_host(a))
    assert not np.shares_memory(host, a) and np.array_equal(host, a)


@unified
def test_a_handed_out_array_never_returns_to_the_pool(cl_device: Any) -> None:
    a = _data()
    host = cl_device.to_host(cl_device.execute(*_square(cl_device, a)))
    kept = host.copy()
    for _ in range(3):  # the dead buffer's memory would be the pool's first pick
        cl_device.to_host(cl_device.execute(*_square(cl_device, a + 1)))
    np.testing.assert_array_equal(host, kept)


@unified
def test_the_scheduler_charges_no_copy_to_a_shared_memory_device(cl_device: Any) -> None:
    from hermes_nb.runtime import placement
    from hermes_nb.scheduler import default_scheduler

    a = hm.asarray(_data())
    placement.place([(a * 2)._node], commit=False)
    transfers = default_scheduler().transfers
    assert transfers.seconds("host", cl_device.id, 128 << 20) == 0.0
    assert transfers.seconds(cl_device.id, "cpu:0", 128 << 20) == 0.0


def _misaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` one byte past an aligned address (NumPy flags it unaligned)."""
    raw = np.empty(a.nbytes + 1, np.uint8)
    out = raw[1:].view(np.float32)
    out[...] = a
    assert not out.flags.aligned
    return out


def _square(dev: Any, a: np.ndarray) -> tuple[Any, list[Any]]:
    """A ``multiply`` spec and its inputs on ``dev``: the result is a buffer the device made."""
    from hermes_nb.ir.node import OpSpec

    x = dev.from_host(a)
    spec = OpSpec(op="multiply", attrs={}, shape=a.shape, dtype=a.dtype,
                  in_shapes=(a.shape, a.shape), in_dtypes=(a.dtype, a.dtype),
                  device=dev.id, key="square")
    return spec, [x, x]
