"""The Numba code generators of ``cpu:0``, imported on first use (importing numba takes
~0.6 s); each is ``None`` when numba is missing, so fused kernels fall back to NumPy."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def numba_codegen() -> Any:
    """Fused elementwise kernels and matmul epilogues."""
    try:
        from hermes_nb.codegen import numba_cpu
    except ImportError:
        return None
    return numba_cpu


@functools.cache
def numba_stencil() -> Any:
    """Fused stencils (without numba the interpreter runs them)."""
    try:
        from hermes_nb.codegen import numba_stencil
    except ImportError:
        return None
    return numba_stencil


@functools.cache
def reduce_codegen() -> Any:
    """Fused reductions."""
    if numba_codegen() is None:
        return None
    from hermes_nb.codegen import numba_reduce

    return numba_reduce
