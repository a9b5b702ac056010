"""``cpu:0``: NumPy and SciPy on the host (BLAS from NumPy's OpenBLAS)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.base import Device
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec
from hermes_nb.settings import env_int


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


class CPUDevice(Device):
    kind = "cpu"
    fused_ops = frozenset({"fused_elementwise", "fused_reduce", "fused_matmul", "fused_stencil"})

    def __init__(self) -> None:
        import platform

        name = platform.processor() or platform.machine() or "host CPU"
        super().__init__(
            0, name, memory_bytes=_memory_bytes(), compute_units=os.cpu_count() or 1, fp64=True
        )
        self._ops = ArrayOps(np, "scipy.ndimage")
        self.shares_host_cores = True

    def from_host(self, array: np.ndarray) -> np.ndarray:
        return np.array(array, order="C", copy=True)

    def to_host(self, buffer: Any) -> np.ndarray:
        return np.asarray(buffer)

    def runs_generated_kernel(self, spec: OpSpec) -> bool:
        """Numba runs fused kernels from ``JIT_MIN_ELEMENTS`` up; NumPy evaluates smaller
        ones op by op (as ``execute`` and ``cpu_fused`` decide)."""
        if spec.op == "fused_stencil":
            jit = _numba_stencil()
            return (_size(spec.shape) >= STENCIL_MIN_ELEMENTS and jit is not None
                    and jit.supports(spec.attrs["stencil"]))
        if spec.op == "fused_elementwise":
            jit = _numba_codegen()
            return (_size(spec.shape) >= JIT_MIN_ELEMENTS and jit is not None
                    and jit.supports(spec.attrs["program"]))
        if spec.op == "fused_reduce":
            from hermes_nb.backends.cpu.fused import _reduce_codegen

            jit = _reduce_codegen()
            return (_size(spec.attrs["in_shape"]) >= JIT_MIN_ELEMENTS and jit is not None
                    and jit.supports(spec.attrs))
        if spec.op == "fused_matmul":
            jit = _numba_codegen()
            return (_size(spec.shape) >= JIT_MIN_ELEMENTS and jit is not None
                    and jit.supports(spec.attrs["epilogue"]))
        return False

    def execute(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        if spec.op in ("fused_reduce", "fused_matmul"):
            from hermes_nb.backends.cpu import fused as cpu_fused  # Numba kernels + BLAS

            return cpu_fused.run(self._ops, spec, inputs)
        if spec.op == "fused_stencil" and self.runs_generated_kernel(spec):
            from hermes_nb.backends.cpu import stencil as cpu_stencil

            return cpu_stencil.run_stencil(spec.attrs["stencil"], inputs[0], spec.shape,
                                           spec.dtype)
        if spec.op == "fused_elementwise" and self.runs_generated_kernel(spec):
            return _numba_codegen().run_elementwise(spec.attrs["program"], inputs, spec.shape,
                                                    spec.dtype)
        return self._ops.run(spec, inputs)


# A new fused kernel costs Numba ~1.5 s to compile (then it is cached on disk); below
# this size NumPy evaluates the program faster than the compile pays back.
JIT_MIN_ELEMENTS = env_int("HERMES_JIT_MIN_ELEMENTS", 1 << 16, minimum=0)
# fused_stencil: the same trade-off (a module attribute, so tests can lower it)
STENCIL_MIN_ELEMENTS = JIT_MIN_ELEMENTS


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


@functools.cache
def _numba_codegen() -> Any:
    """The Numba code generator, imported on first use (importing numba takes ~0.6 s);
    ``None`` when numba is missing, so fused kernels fall back to NumPy."""
    try:
        from hermes_nb.codegen import numba_cpu
    except ImportError:
        return None
    return numba_cpu


@functools.cache
def _numba_stencil() -> Any:
    """The Numba stencil generator, or ``None`` without numba (the interpreter runs)."""
    try:
        from hermes_nb.codegen import numba_stencil
    except ImportError:
        return None
    return numba_stencil
