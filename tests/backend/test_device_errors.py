"""Run-time device failures reach the user as DeviceError naming op, device and shapes;
missing device capabilities are refused when the graph is built."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.errors import DeviceError


def test_out_of_memory_names_op_device_and_shape(device):
    huge = (2**22, 2**22)  # 64 TiB of float32: more than any device here holds
    with hm.device(device):
        t = hm.zeros(huge, dtype="float32") + 1
    with pytest.raises(DeviceError) as info:
        t.numpy()
    message = str(info.value)
    assert device.id in message
    assert "full" in message and "4194304, 4194304" in message
    assert info.value.device == device.id and info.value.op == "full"


def test_device_error_survives_pickling():
    err = DeviceError("add(float32[2]) failed on opencl:0", op="add", device="opencl:0")
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err) and copy.op == "add" and copy.device == "opencl:0"


def test_float64_on_device_without_fp64_is_refused_at_build_time(device, monkeypatch):
    monkeypatch.setattr(device, "fp64", False)
    x = np.ones(4)
    with pytest.raises(ValueError, match=rf"{device.id}.*float64"), hm.device(device):
        hm.asarray(x) * 2
    with pytest.raises(ValueError, match=rf"{device.id}.*float64"):
        hm.asarray(x).to(device)
    with hm.device(device):  # float32 still works there
        out = (hm.asarray(x.astype(np.float32)) * 2).numpy()
    np.testing.assert_array_equal(out, np.full(4, 2, np.float32))


def test_transfer_between_devices_keeps_values(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    on_device = hm.asarray(x).to(device)
    assert on_device.device == device.id
    back = (on_device * 2).to("cpu:0") + 1
    np.testing.assert_array_equal(back.numpy(), x * 2 + 1)
    assert back.device == "cpu:0"
