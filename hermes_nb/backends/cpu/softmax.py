"""``cpu:0``'s ``fused_softmax``: the Numba kernel of ``codegen.numba_softmax`` for small
softmaxes over the trailing axes of a float array (``SOFTMAX_JIT_MAX`` elements at most: a
classifier's head, 7 us through NumPy, takes 1 us); NumPy's steps (``ArrayOps``) for the
rest, and without Numba."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import jit
from hermes_nb.codegen.numba_support import KernelCache, build_kernel
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec

__all__ = ["SOFTMAX_JIT_MAX", "generates", "launcher", "run_softmax", "source"]

#: elements up to which the kernel runs a softmax: beyond, NumPy's vectorised exp is faster
#: (2048 elements: even; 6400: NumPy 1.6x faster, measured here)
SOFTMAX_JIT_MAX = 2048

_KERNELS = KernelCache()  # dtype -> kernel


def generates(spec: OpSpec) -> bool:
    """Whether the kernel runs ``spec``: Numba present, a float32 or float64 softmax of at
    most ``SOFTMAX_JIT_MAX`` elements over its last axes."""
    size, ndim = math.prod(spec.shape), len(spec.shape)
    axes = sorted(a % ndim for a in spec.attrs["axes"]) if ndim else []
    return (jit.numba_codegen() is not None and spec.dtype.name in ("float32", "float64")
            and 0 < size <= SOFTMAX_JIT_MAX and bool(axes)
            and axes == list(range(ndim - len(axes), ndim)))


def run_softmax(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``fused_softmax`` spec on NumPy arrays: the kernel where ``generated``."""
    return launcher(ops, spec, generated)(inputs)


def launcher(ops: ArrayOps, spec: OpSpec, generated: bool) -> Callable[[Sequence[Any]], Any]:
    """:func:`run_softmax` of ``spec`` as a function of its input, the kernel looked up once."""
    if not generated:
        return ops.launcher(spec)
    shape, dtype = tuple(spec.shape), spec.dtype
    ndim = len(shape)
    width = math.prod(shape[a % ndim] for a in spec.attrs["axes"])
    kernel = _kernel(dtype.name)

    def launch(inputs: Sequence[Any]) -> np.ndarray:
        x = np.ascontiguousarray(inputs[0])
        out = np.empty(shape, dtype)
        kernel(x.reshape(-1, width), out.reshape(-1, width))
        return out

    return launch


def source(spec: OpSpec) -> str:
    """The Numba module the kernel of ``spec`` is built from."""
    from hermes_nb.codegen import numba_softmax

    return numba_softmax.render(spec.dtype.name)


def _kernel(dtype: str) -> Any:
    def build() -> Any:
        import numba
        from numba.core import types

        from hermes_nb.codegen import numba_softmax

        array = types.Array(numba.from_dtype(np.dtype(dtype)), 2, "C")
        readonly = types.Array(numba.from_dtype(np.dtype(dtype)), 2, "C", readonly=True)
        return build_kernel(numba_softmax.render(dtype), "s", (readonly, array))

    return _KERNELS.get_or_build(dtype, build, f"softmax kernel ({dtype}) for cpu:0")
