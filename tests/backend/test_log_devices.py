"""On every device, a kernel's first run leaves its compile records in the run's profile
(OpenCL's with the driver's build log attached), and no compiler output reaches stderr."""

from __future__ import annotations

import random

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.runtime import last_profile

SIZE = 1 << 17  # above cpu:0's JIT size: Numba builds the kernel
_UNARY = {
    "sin": (hm.sin, np.sin),
    "cos": (hm.cos, np.cos),
    "tanh": (hm.tanh, np.tanh),
    "abs": (hm.abs, np.abs),
    "square": (lambda t: t * t, lambda a: a * a),
}


def _new_kernel(x, data):
    """A chain of ops in an order no other test compiled (a new kernel signature), and
    NumPy's result of it."""
    out, ref = x, data
    for name in [random.choice(sorted(_UNARY)) for _ in range(10)]:
        out, ref = _UNARY[name][0](out), _UNARY[name][1](ref)
    return out, ref


def _compiling(device) -> None:
    if device.kind not in ("cpu", "opencl", "cuda"):
        pytest.skip(f"{device.id} builds no kernels")
    if device.kind == "cpu":
        pytest.importorskip("numba")


def test_first_run_compile_records_are_in_the_profile(device, capfd):
    _compiling(device)
    data = np.linspace(-1, 1, SIZE, dtype=np.float32)
    with hm.device(device.id):
        out, ref = _new_kernel(hm.asarray(data), data)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
    log = last_profile().log
    compiles = log.filter(device=device.id, category="compile")
    assert compiles, repr(log)
    assert any(r.kernel for r in compiles)
    if device.kind == "opencl":
        built = [r for r in compiles if r.message.startswith("built OpenCL program")]
        assert built, repr(log)  # the driver's build log travels with it (possibly empty)
    err = capfd.readouterr().err
    assert "warnings generated" not in err and "warning:" not in err, err
    # a second run compiles nothing: no new compile records
    out.numpy()
    assert not last_profile().log.filter(category="compile")


def test_first_stencil_run_prints_no_compiler_output(device, capfd):
    _compiling(device)
    image = np.random.default_rng(random.randrange(1 << 30)).random((96, 131), np.float32)
    sigma = random.choice([0.8, 1.1, 1.3, 1.7])  # blur taps stay baked: a new kernel
    with hm.device(device.id):
        edges = hm.sobel(hm.gaussian_blur(hm.asarray(image), sigma=sigma))
    edges.numpy()
    err = capfd.readouterr().err
    assert "warnings generated" not in err and "warning:" not in err, err


def test_opencl_compiler_warnings_are_records_not_terminal_output(device, capfd):
    if device.kind != "opencl":
        pytest.skip(f"{device.id} is not an OpenCL device: this checks an OpenCL compiler's build output")
    tag = random.randrange(1 << 30)
    source = (f"#warning hermes test warning {tag}\n"
              f"__kernel void k{tag}(__global float* a) {{ int unused = 1; a[get_global_id(0)] = 2.0f; }}")
    device.programs.kernel(source, f"k{tag}")
    err = capfd.readouterr().err
    assert "warning" not in err, err
    found = hm.logs(kernel=f"k{tag}", category="compile")
    built = [r for r in found if r.message.startswith("built OpenCL program")]
    assert built and f"hermes test warning {tag}" in built[-1].detail  # the driver's build log
    assert all(r.device == device.id for r in found)
