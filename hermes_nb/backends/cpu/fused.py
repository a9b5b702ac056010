"""``cpu:0`` kernels of the fused ops ``fused_reduce`` and ``fused_matmul``.

Reductions run as one generated Numba kernel (``codegen.numba_reduce``) from
``JIT_MIN_ELEMENTS`` reduced elements up, else through the NumPy interpreter. Matmuls
run BLAS through NumPy into a fresh buffer, then the epilogue over it in place: one
pass instead of NumPy's one per op (and no temporaries).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import device as cpu
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec


def run(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """Run a ``fused_reduce`` or ``fused_matmul`` spec on NumPy arrays."""
    if spec.op == "fused_reduce":
        return _fused_reduce(ops, spec, inputs)
    return _fused_matmul(ops, spec, inputs)


@functools.cache
def _reduce_codegen() -> Any:
    if cpu._numba_codegen() is None:  # numba missing
        return None
    from hermes_nb.codegen import numba_reduce

    return numba_reduce


def _fused_reduce(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    if math.prod(spec.attrs["in_shape"]) >= cpu.JIT_MIN_ELEMENTS:
        jit = _reduce_codegen()
        if jit is not None and jit.supports(spec.attrs):
            with np.errstate(all="ignore"):
                out = jit.run_reduce(spec.attrs, inputs, spec.shape, spec.dtype)
            if out is not None:
                return out
    return ops.run(spec, inputs)


def _fused_matmul(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    a, b, *rest = inputs
    epilogue = spec.attrs["epilogue"]
    product = np.empty(spec.shape, np.dtype(spec.attrs["matmul_dtype"]))
    np.matmul(a, b, out=product)  # BLAS for floats; NumPy's own loop for integers
    jit = cpu._numba_codegen() if product.size >= cpu.JIT_MIN_ELEMENTS else None
    if jit is not None and jit.supports(epilogue):
        # in place when the dtype allows: elementwise kernels read element i before
        # writing it, and the product is full-size (never a broadcast view)
        out = product if product.dtype == spec.dtype else np.empty(spec.shape, spec.dtype)
        jit.launch(epilogue, [product, *rest], [out])
        return out
    point = OpSpec("fused_elementwise", spec.shape, spec.dtype,
                   (product.shape, *(x.shape for x in rest)),
                   (product.dtype, *(x.dtype for x in rest)), {"program": epilogue}, spec.device)
    return ops.run(point, [product, *rest])
