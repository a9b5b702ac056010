"""``explain()`` shows byte for byte the source that runs: on every device, each fused kernel
kind's source in the plan is the one the device builds (captured at build: OpenCL programs,
Numba modules, the arguments CuPy's kernel classes get), a kernel the device runs as library
calls (cpu:0 below its JIT size) shows none, and a device id not in this process shows its
kind's source."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.backends.base import PASS_SEPARATOR
from hermes_nb.backends.opencl import programs
from hermes_nb.codegen import numba_cpu, numba_reduce, numba_stencil
from hermes_nb.compiler import optimize
from hermes_nb.ir.node import toposort
from hermes_nb.runtime.explain import kernel_source
from hermes_nb.runtime.targets import compile_target

RNG = np.random.default_rng(3)
# above cpu:0's JIT size (2**16 elements), so every kind is generated code there too
IMAGE = RNG.random((300, 260), dtype=np.float32)
A = RNG.random((1 << 17,), dtype=np.float32)
M = RNG.random((330, 250), dtype=np.float32)
LONG = RNG.random((3, 50_000), dtype=np.float32)

# each case takes a constant; constants are kernel arguments, so a new one makes no kernel
# new: the tests empty the kernel caches instead (``_capture_builds``)
CASES = {
    "fused_elementwise": lambda c: hm.exp(-(hm.asarray(A) * c + 1.0) ** 2) + hm.asarray(A),
    "fused_elementwise broadcast": lambda c: hm.sqrt(hm.asarray(LONG) + hm.asarray(LONG[0])) * c,
    "fused_reduce": lambda c: (hm.asarray(A) * c + 1.0).sum(),
    "fused_reduce rows": lambda c: hm.exp(hm.asarray(LONG) * c).sum(axis=1) + 1.0,
    "fused_matmul": lambda c: hm.relu(hm.asarray(M) @ hm.asarray(M.T) + c),
    "fused_stencil": lambda c: hm.compose(hm.gaussian_blur(kernel_size=5),
                                          hm.sobel_edge_detection())(hm.asarray(IMAGE)) * c,
}


def _capture_builds(monkeypatch) -> list[str]:
    """Every source handed to a compiler from now on (OpenCL programs, Numba modules), with
    empty in-memory Numba caches so that every kernel is loaded again, and seen."""
    from hermes_nb.codegen.numba_support import KernelCache

    built: list[str] = []
    original = programs.ProgramCache.kernel

    def capture_cl(self, source, name):
        built.append(source)
        return original(self, source, name)

    monkeypatch.setattr(programs.ProgramCache, "kernel", capture_cl)
    for module in (numba_cpu, numba_reduce, numba_stencil):
        monkeypatch.setattr(module, "_KERNELS", KernelCache())
        build = module.build_kernel

        def capture_numba(source, prefix, signature, build=build):
            built.append(source)
            return build(source, prefix, signature)

        monkeypatch.setattr(module, "build_kernel", capture_numba)
    return built


def _capture_cupy(monkeypatch, built: list[str]) -> None:
    """Every CuPy kernel made from now on, as ``cuda.kernels.describe`` writes its arguments."""
    import cupy

    from hermes_nb.backends.cuda import kernels as cuda_kernels

    cuda_kernels.built.cache_clear()  # so that every kernel is made again, and seen
    for cls in ("ElementwiseKernel", "ReductionKernel", "RawKernel"):
        original = getattr(cupy, cls)

        def capture(*args, cls=cls, original=original, **kwargs):
            built.append(cuda_kernels.describe(cls, args, kwargs))
            return original(*args, **kwargs)

        monkeypatch.setattr(cupy, cls, capture)


@pytest.mark.parametrize("case", sorted(CASES))
def test_explained_source_is_the_built_source(device, case, monkeypatch):
    if case.split()[0] not in device.fused_ops:
        pytest.skip(f"{device.id} runs no {case.split()[0]} kernels (not in its fused_ops)")
    built = _capture_builds(monkeypatch)
    if device.kind == "cuda":
        _capture_cupy(monkeypatch, built)
    constant = float(np.float32(1.0 + uuid.uuid4().int % 100_000 / 100_003))
    with hm.device(device):
        tensor = CASES[case](constant)
    plan = tensor.explain()
    fused = [k for k in plan.kernels if k.name.split("-")[1].startswith("fused")]
    assert fused, f"{case}: nothing fused in\n{plan}"
    tensor.numpy()
    for kernel in fused:
        assert kernel.source is not None, f"{case}: no source for {kernel.name}"
        for part in kernel.source.split(PASS_SEPARATOR):
            assert part in built, f"{case}: explain() shows a source {device.id} never built"


def test_a_kernel_numpy_runs_shows_no_source():
    small = np.linspace(0, 1, 1000, dtype=np.float32)
    with hm.device("cpu:0"):
        tensor = hm.exp(hm.asarray(small) * 2.0) + hm.asarray(small)
    (kernel,) = tensor.explain().kernels
    assert kernel.name.split("-")[1] == "fused_elementwise" and kernel.source is None


@pytest.mark.parametrize("where", ["cpu:7", "opencl:99", "cuda:42"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_device_not_here_shows_its_kinds_source(where, case):
    """A simulated or remote device id: the source its kind's renderers give, no device
    needed (CUDA's is CuPy's arguments, as on a GPU)."""
    with hm.device("cpu:0"):
        tensor = CASES[case](1.5)
    (graph,) = optimize([tensor._node], compile_target())
    fused = [n for n in toposort([graph]) if n.op.startswith("fused")]
    assert fused, case
    for node in fused:
        source = kernel_source(node, where)
        assert isinstance(source, str) and source, f"{case}: no source on {where}"
