"""``cpu:0`` kernels of the fused ops ``fused_reduce`` and ``fused_matmul``.

Reductions run as one generated Numba kernel (``codegen.numba_reduce``) where the
device says a generated kernel runs (``CPUDevice.runs_generated_kernel``: from
``JIT_MIN_ELEMENTS`` reduced elements up), else through the NumPy interpreter. Matmuls
run BLAS through NumPy into a fresh buffer, then the epilogue over it in place: one
pass instead of NumPy's one per op (and no temporaries).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import jit
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec


def run_reduce(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``fused_reduce`` spec on NumPy arrays: the Numba kernel where ``generated``."""
    if generated:
        with np.errstate(all="ignore"):
            out = jit.reduce_codegen().run_reduce(spec.attrs, inputs, spec.shape, spec.dtype)
        if out is not None:
            return out
    return ops.run(spec, inputs)


def run_matmul(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``fused_matmul`` spec on NumPy arrays: BLAS, then the epilogue as a Numba kernel
    where ``generated``."""
    a, b, *rest = inputs
    epilogue = spec.attrs["epilogue"]
    product = np.empty(spec.shape, np.dtype(spec.attrs["matmul_dtype"]))
    np.matmul(a, b, out=product)  # BLAS for floats; NumPy's own loop for integers
    if generated:
        # in place when the dtype allows: elementwise kernels read element i before
        # writing it, and the product is full-size (never a broadcast view)
        out = product if product.dtype == spec.dtype else np.empty(spec.shape, spec.dtype)
        jit.numba_codegen().launch(epilogue, [product, *rest], [out])
        return out
    point = OpSpec("fused_elementwise", spec.shape, spec.dtype,
                   (product.shape, *(x.shape for x in rest)),
                   (product.dtype, *(x.dtype for x in rest)), {"program": epilogue}, spec.device)
    return ops.run(point, [product, *rest])
