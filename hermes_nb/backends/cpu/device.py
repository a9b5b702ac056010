"""``cpu:0``: NumPy and SciPy on the host (BLAS from NumPy's OpenBLAS)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from hermes_nb.backends.base import Device
from hermes_nb.backends.cpu import jit, sources
from hermes_nb.backends.cpu import matmul as cpu_matmul
from hermes_nb.backends.cpu import reduce as cpu_reduce
from hermes_nb.backends.cpu import softmax as cpu_softmax
from hermes_nb.backends.cpu import window as cpu_window
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec
from hermes_nb.settings import env_int


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _run_stencil(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    if not generated:  # below the size threshold, or where Numba cannot compile it
        return ops.run(spec, inputs)
    from hermes_nb.backends.cpu import stencil as cpu_stencil  # imports numba (~0.6 s)

    return cpu_stencil.run_stencil(spec.attrs["stencil"], inputs[0], spec.shape, spec.dtype)


def _run_elementwise(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any],
                     generated: bool) -> Any:
    if not generated:
        return ops.run(spec, inputs)
    return jit.numba_codegen().run_elementwise(spec.attrs["program"], inputs, spec.shape,
                                               spec.dtype)


class CPUDevice(Device):
    kind = "cpu"
    fused_ops = frozenset({"fused_elementwise", "fused_reduce", "fused_matmul", "fused_stencil",
                           "fused_conv", "fused_softmax"})
    # NumPy and Numba's threading layer (tbb/omp) are safe from any thread
    runs_on_caller = True

    def __init__(self) -> None:
        import platform

        name = platform.processor() or platform.machine() or "host CPU"
        super().__init__(
            0, name, memory_bytes=_memory_bytes(), compute_units=os.cpu_count() or 1, fp64=True
        )
        self._ops = ArrayOps(np, "scipy.ndimage")
        self.shares_host_cores = True
        self.shares_host_memory = True

    def from_host(self, array: np.ndarray) -> np.ndarray:
        """A read-only view of ``array`` when kernels can read it as it is (C-contiguous,
        native byte order), else a C-contiguous copy. Nothing here writes an input."""
        array = np.asarray(array)
        if array.flags.c_contiguous and array.flags.aligned and array.dtype.isnative:
            view = array.view(np.ndarray)
            view.flags.writeable = False
            return view
        return np.array(array, dtype=array.dtype.newbyteorder("="), order="C", copy=True)

    def to_host(self, buffer: Any) -> np.ndarray:
        return np.asarray(buffer)

    def runs_generated_kernel(self, spec: OpSpec) -> bool:
        """Numba runs fused kernels from ``JIT_MIN_ELEMENTS`` up; NumPy evaluates smaller
        ones op by op (``execute`` and its runners decide by this alone)."""
        check = self._GENERATED.get(spec.op)
        return check is not None and check(spec)

    def kernel_source(self, spec: OpSpec) -> str | None:
        """The Numba module ``execute`` compiles for ``spec`` (None: NumPy/BLAS run it)."""
        return sources.render(spec) if self.runs_generated_kernel(spec) else None

    def execute(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        run = self._EXECUTORS.get(spec.op)
        if run is None:
            return self._ops.run(spec, inputs)
        return run(self._ops, spec, inputs, self.runs_generated_kernel(spec))

    def launcher(self, spec: OpSpec) -> Callable[[Sequence[Any]], Any]:
        """``execute`` of ``spec`` with the runner, whether Numba runs it and (for a window
        op) its plan and kernel decided once."""
        run = self._EXECUTORS.get(spec.op)
        generated = run is not None and self.runs_generated_kernel(spec)
        if run is None or (not generated and run in (cpu_reduce.run_reduce, _run_elementwise,
                                                      cpu_softmax.run_softmax)):
            return self._ops.launcher(spec)  # NumPy op by op, as execute runs it
        if run is cpu_window.run_window:
            return cpu_window.launcher(self._ops, spec, generated)
        if run is cpu_matmul.run_matmul:
            return cpu_matmul.launcher(self._ops, spec, generated)
        if run is cpu_softmax.run_softmax:
            return cpu_softmax.launcher(self._ops, spec, generated)
        ops = self._ops
        return lambda inputs: run(ops, spec, inputs, generated)

    # op -> how this device runs it, told whether a generated kernel does (any other op:
    # the NumPy interpreter)
    _EXECUTORS: ClassVar[Mapping[str, Callable[..., Any]]] = {
        "fused_reduce": cpu_reduce.run_reduce,
        # BLAS into the result, then the epilogue in place on this thread
        "fused_matmul": cpu_matmul.run_matmul,
        "fused_stencil": _run_stencil,
        "fused_elementwise": _run_elementwise,
        "fused_softmax": cpu_softmax.run_softmax,
        **dict.fromkeys(("conv", "pool", "fused_conv"), cpu_window.run_window),
    }
    # op -> whether a generated (Numba) kernel runs it
    _GENERATED: ClassVar[Mapping[str, Callable[[OpSpec], bool]]] = {
        "fused_stencil": lambda spec: _jit_runs(
            jit.numba_stencil(), spec.shape, spec.attrs["stencil"], STENCIL_MIN_ELEMENTS),
        "fused_elementwise": lambda spec: _jit_runs(
            jit.numba_codegen(), spec.shape, spec.attrs["program"], JIT_MIN_ELEMENTS),
        "fused_reduce": lambda spec: _jit_runs(
            jit.reduce_codegen(), spec.attrs["in_shape"], spec.attrs, JIT_MIN_ELEMENTS),
        "fused_matmul": lambda spec: _jit_runs(
            jit.numba_codegen(), spec.shape, spec.attrs["epilogue"], JIT_MIN_ELEMENTS),
        **dict.fromkeys(("conv", "pool"), lambda spec: _window_runs(spec, None)),
        "fused_conv": lambda spec: _window_runs(spec, spec.attrs["epilogue"]),
        # a fixed kernel (one a dtype, no compile per graph): small softmaxes only
        "fused_softmax": cpu_softmax.generates,
    }


def _jit_runs(codegen: Any, shape: tuple[int, ...], kernel: Any, min_elements: int) -> bool:
    # nothing to compute (size 0): the launchers return before building a kernel
    size = _size(shape)
    return size > 0 and min_elements <= size and codegen is not None and codegen.supports(kernel)


# A new fused kernel costs Numba ~1.5 s to compile (then it is cached on disk); below
# this size NumPy evaluates the program faster than the compile pays back.
JIT_MIN_ELEMENTS = env_int("HERMES_JIT_MIN_ELEMENTS", 1 << 16, minimum=0)
# fused_stencil: the same trade-off (a module attribute, so tests can lower it)
STENCIL_MIN_ELEMENTS = JIT_MIN_ELEMENTS
# conv and pool: in multiply-adds or window reads (a batch-8 layer of a small CNN: ~0.4M)
WINDOW_MIN_WORK = JIT_MIN_ELEMENTS


def _window_runs(spec: OpSpec, epilogue: Any) -> bool:
    # a window kernel compiles once per layer shape, and NumPy's im2col costs several passes
    # over the windows: worth it from WINDOW_MIN_WORK multiply-adds (or window reads)
    work = cpu_window.work(spec)
    return work > 0 and work >= WINDOW_MIN_WORK and cpu_window.generates(spec, epilogue)


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)  # NumPy's prod of a tuple costs ten times more
