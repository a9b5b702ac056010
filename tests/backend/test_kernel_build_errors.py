"""A kernel that fails to build reports the compiler's log and the saved source, is not
cached, and leaves other kernels working."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.errors import DeviceError, KernelBuildError


def _opencl_device():
    for d in hm.devices():
        if d.kind == "opencl":
            return d
    pytest.skip("no OpenCL device: install pyopencl and an OpenCL platform (e.g. PoCL)")


def test_opencl_build_failure_names_log_and_source(monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    device = _opencl_device()
    from hermes_nb.codegen import c_kernels

    real = c_kernels.opencl_source

    def broken(*args, **kwargs):
        return real(*args, **kwargs) + "\nkernel void broken(void) { undefined_symbol_x = 1; }\n"

    monkeypatch.setattr(c_kernels, "opencl_source", broken)
    x = np.linspace(0, 1, 32, dtype=np.float32)
    with hm.device(device):
        bad = hm.exp(hm.asarray(x)) * 3 + 1
    with pytest.raises(DeviceError) as info:
        bad.numpy()
    cause = info.value.__cause__
    assert isinstance(cause, KernelBuildError)
    assert device.id in str(info.value) and "fused_elementwise" in str(info.value)
    saved = Path(cause.source_path)
    assert saved.is_file() and "undefined_symbol_x" in saved.read_text()
    assert "undefined_symbol_x" in cause.log and str(saved) in str(info.value)

    # nothing broken was cached: with the generator fixed, the same graph builds and runs
    monkeypatch.setattr(c_kernels, "opencl_source", real)
    np.testing.assert_allclose(bad.numpy(), np.exp(x) * 3 + 1, rtol=1e-6)


def test_other_kernels_keep_working_after_a_failed_build(monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    device = _opencl_device()
    from hermes_nb.codegen import c_kernels

    real = c_kernels.opencl_source

    def broken_when_fused(program, *args, **kwargs):  # single-op programs still build
        source = real(program, *args, **kwargs)
        return source + "\n#error deliberately broken\n" if len(program.instrs) > 1 else source

    monkeypatch.setattr(c_kernels, "opencl_source", broken_when_fused)
    x = np.arange(16, dtype=np.float32)
    with hm.device(device):
        with pytest.raises(DeviceError, match="deliberately broken"):
            (hm.asarray(x) * 2 + 1).numpy()
        # the same device still builds and runs other kernels
        with hm.options(fuse=False):
            np.testing.assert_array_equal((hm.asarray(x) * 2 + 1).numpy(), x * 2 + 1)
        np.testing.assert_array_equal(hm.asarray(x).sum().numpy(), x.sum())


def test_numba_build_failure_names_error_and_source(monkeypatch, tmp_path):
    pytest.importorskip("numba", reason="the cpu device compiles fused kernels with Numba")
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    from hermes_nb.backends.cpu import device as cpu
    from hermes_nb.codegen import numba_cpu

    real = numba_cpu.render
    monkeypatch.setattr(numba_cpu, "render", lambda *a, **k: real(*a, **k).replace(
        "def kernel(", "def kernel_unused(", 1) + "\n\n@njit\ndef kernel(out):\n    return"
                                                   " out[0] + undefined_name_y\n")
    monkeypatch.setattr(cpu, "JIT_MIN_ELEMENTS", 1)
    x = np.linspace(0, 1, 64, dtype=np.float32)
    with hm.device("cpu:0"):
        bad = hm.sqrt(hm.asarray(x)) * 5 - 2
    with pytest.raises(DeviceError) as info:
        bad.numpy()
    cause = info.value.__cause__
    assert isinstance(cause, KernelBuildError)
    assert "cpu:0" in str(info.value) and cause.source_path in str(info.value)
    assert "undefined_name_y" in Path(cause.source_path).read_text()

    monkeypatch.setattr(numba_cpu, "render", real)
    np.testing.assert_allclose(bad.numpy(), np.sqrt(x) * 5 - 2, rtol=1e-6)
