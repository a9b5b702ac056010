"""Scalar constants are kernel arguments: a kernel's source and cache key hold no scalar's
value, so a changed gain, offset or threshold runs the kernel already built, on every
device, with NumPy's results (the scalar cast to the kernel's dtype exactly as before).
Only a ``pow`` exponent of 2 stays in the source (``x * x``)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.codegen import c_kernels, numba_cpu, stencil_c
from hermes_nb.compiler import optimize
from hermes_nb.ir.node import toposort
from hermes_nb.ir.program import Instr, Program
from hermes_nb.runtime.targets import compile_target

RNG = np.random.default_rng(11)
SHAPE = (512, 256)  # above cpu:0's JIT size: generated kernels there too


@contextlib.contextmanager
def _builds(device, caplog) -> Iterator[list[str]]:
    """What is built meanwhile: the compiler log's "building ..." records (Numba modules,
    OpenCL programs) and, on CUDA, each CuPy kernel made."""
    found: list[str] = []
    misses = 0
    if device.kind == "cuda":
        from hermes_nb.backends.cuda import kernels as cuda_kernels

        misses = cuda_kernels.built.cache_info().misses
    with caplog.at_level(logging.DEBUG, logger="hermes_nb.compiler"):
        caplog.clear()
        yield found
        found += [r.getMessage() for r in caplog.records
                  if r.name == "hermes_nb.compiler" and r.getMessage().startswith("building ")]
    if device.kind == "cuda":
        found += ["cupy kernel"] * (cuda_kernels.built.cache_info().misses - misses)


def _fused_programs(tensor: hm.Tensor) -> list[str]:
    (graph,) = optimize([tensor._node], compile_target())
    return [n.attrs["program"].signature for n in toposort([graph])
            if n.op == "fused_elementwise"]


def _sources(tensor: hm.Tensor) -> list[str | None]:
    return [k.source for k in tensor.explain().kernels]


def _run(device, fn, x):
    with hm.device(device):
        tensor = fn(hm.asarray(x))
    return tensor, tensor.numpy()


def test_changed_gain_and_offset_build_nothing(device, caplog):
    x = RNG.random(SHAPE, dtype=np.float32)
    first, got = _run(device, lambda t: t * 0.5 + 1, x)
    np.testing.assert_array_equal(got, x * np.float32(0.5) + np.float32(1))
    with _builds(device, caplog) as built:
        second, got = _run(device, lambda t: t * 0.25 + 3, x)
    np.testing.assert_array_equal(got, x * np.float32(0.25) + np.float32(3))
    assert not built, f"{device.id} built {built} for new scalars"
    assert _sources(first) == _sources(second)
    assert _fused_programs(first) == _fused_programs(second)


def test_changed_threshold_builds_nothing(device, caplog):
    x = RNG.random(SHAPE, dtype=np.float32)
    _, got = _run(device, lambda t: hm.where(t > 0.25, t, 0), x)
    np.testing.assert_array_equal(got, np.where(x > np.float32(0.25), x, np.float32(0)))
    with _builds(device, caplog) as built:
        _, got = _run(device, lambda t: hm.where(t > 0.75, t, -1.5), x)
    np.testing.assert_array_equal(got, np.where(x > np.float32(0.75), x, np.float32(-1.5)))
    assert not built, f"{device.id} built {built} for a new threshold"


def test_changed_stencil_threshold_builds_nothing(device, caplog):
    if "fused_stencil" not in device.fused_ops:
        pytest.skip(f"{device.id} runs no fused stencils")
    x = RNG.random(SHAPE, dtype=np.float32)

    def pipeline(t, thresh, gain):
        blurred = hm.gaussian_blur(t, kernel_size=5)
        return hm.where(blurred > thresh, blurred * gain, 0.0), blurred

    results = []
    for thresh, gain in ((0.4, 2.0), (0.6, 0.5)):
        with _builds(device, caplog) as built:
            with hm.device(device):
                out, blurred = pipeline(hm.asarray(x), thresh, gain)
            assert any(k.name.split("-")[1] == "fused_stencil" for k in out.explain().kernels)
            results.append((out.numpy(), built))
        b = blurred.numpy()  # the blur alone: the reference's input
        expected = np.where(b > np.float32(thresh), b * np.float32(gain), np.float32(0))
        np.testing.assert_array_equal(results[-1][0], expected)
    assert not results[1][1], f"{device.id} built {results[1][1]} for new stencil scalars"


@pytest.mark.parametrize("kind", ["fused_reduce", "fused_matmul"])
def test_changed_prologue_and_epilogue_scalars_build_nothing(device, kind, caplog):
    if kind not in device.fused_ops:
        pytest.skip(f"{device.id} runs no {kind} kernels")
    x = RNG.random((384, 384), dtype=np.float32)

    def build(t, c):
        if kind == "fused_reduce":
            return (t * c + 1.0).sum(axis=1) * (c + 2.0)
        return hm.relu(t @ t - c) * 0.5

    def expected(c):
        c32 = np.float32(c)
        if kind == "fused_reduce":
            return (x * c32 + np.float32(1)).sum(axis=1) * (c32 + np.float32(2))
        return np.maximum(x @ x - c32, 0) * np.float32(0.5)

    _, got = _run(device, lambda t: build(t, 0.75), x)
    np.testing.assert_allclose(got, expected(0.75), rtol=2e-5)
    with _builds(device, caplog) as built:
        _, got = _run(device, lambda t: build(t, -3.0), x)
    np.testing.assert_allclose(got, expected(-3.0), rtol=2e-5)
    # CuPy's ReductionKernel holds its prologue's scalars as literals
    if not (device.kind == "cuda" and kind == "fused_reduce"):
        assert not built, f"{device.id} built {built} for new scalars"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_results_keep_numpy_dtype_semantics(device, dtype):
    if dtype == "float64" and not device.fp64:
        pytest.skip(f"{device.id} has no float64")
    x = (RNG.random(SHAPE) * 20 - 10).astype(dtype)
    for a, b in ((0.1, 1), (3, -7), (0.25, 2.5)):
        if not device.fp64 and np.result_type(x, a, b) == np.float64:
            continue
        _, got = _run(device, lambda t, a=a, b=b: t * a + b, x)
        expected = x * a + b  # NumPy's rules for Python scalars
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    _, got = _run(device, lambda t: hm.maximum(hm.minimum(t, 4), -3), x)
    np.testing.assert_array_equal(got, np.maximum(np.minimum(x, 4), -3))


def _program(exponent: float, dtype: str = "float32") -> Program:
    return Program((dtype,), ((exponent, dtype), (1.5, dtype)),
                   (Instr("pow", (0, 1), dtype), Instr("add", (3, 2), dtype)), (4,))


def test_sources_and_signatures_hold_no_scalar_value():
    a, b = _program(3.0), Program(("float32",), ((7.25, "float32"), (-0.5, "float32")),
                                  _program(3.0).instrs, (4,))
    assert a.signature == b.signature and "7.25" not in b.signature
    assert a.arguments() == (np.float32(3.0), np.float32(1.5))
    for variant in (("flat", ("f",)), ("nd", ("i",))):
        assert numba_cpu.render(a, variant) == numba_cpu.render(b, variant)
    assert c_kernels.opencl_source(a, "f", 0, True) == c_kernels.opencl_source(b, "f", 0, True)
    assert c_kernels.cuda_kernel_source(a) == c_kernels.cuda_kernel_source(b)
    assert c_kernels.cuda_elementwise_parts(a) == c_kernels.cuda_elementwise_parts(b)
    assert "float32 c0, float32 c1" in c_kernels.cuda_elementwise_parts(a)[0]


def test_a_squaring_exponent_stays_in_the_source():
    square, cube = _program(2.0), _program(3.0)
    assert square.baked == frozenset({0}) and square.params == (1,)
    assert square.signature != cube.signature
    assert "2.0:float32" in square.signature
    assert "x0 * x0" in c_kernels.cuda_kernel_source(square)
    assert "v0 * v0" in numba_cpu.render(square, ("flat", ("f",)))


def test_stencil_sources_hold_no_point_stage_value():
    def stencil(thresh: float):
        with hm.device("cpu:0"):
            t = hm.gaussian_blur(hm.asarray(RNG.random((64, 64), dtype=np.float32)), 5)
            tensor = hm.where(t > thresh, t, 0.0)
        (graph,) = optimize([tensor._node], compile_target())
        (node,) = [n for n in toposort([graph]) if n.op == "fused_stencil"]
        return node.attrs["stencil"]

    a, b = stencil(0.25), stencil(0.625)
    assert a.signature == b.signature and a != b
    assert np.float32(0.625) in b.arguments()
    assert stencil_c.cuda_stencil_source(a) == stencil_c.cuda_stencil_source(b)
    assert stencil_c.render_source(a, "opencl:0") == stencil_c.render_source(b, "opencl:0")
