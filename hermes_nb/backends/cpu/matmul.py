"""``cpu:0``'s ``fused_matmul``: BLAS straight into the result, then the epilogue over it
in place, in one pass on the calling thread.

The product is written once by ``np.matmul(a, b, out=...)`` (sgemm for floats, NumPy's own
loop for integers) into a fresh C-contiguous buffer; nothing is copied. The epilogue is
the Numba kernel ``sources.render`` shows, launched with one thread: the product is still
in cache after sgemm, so one core streams it in about a millisecond at 2048², while a
parallel launch waits for every thread of its team, and on a shared machine one of them
can wait a whole scheduler time slice (10 ms and more) for a core.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import jit
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec

__all__ = ["numba_threads", "run_matmul"]


def run_matmul(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``fused_matmul`` spec on NumPy arrays: BLAS, then the epilogue as a Numba kernel
    where ``generated`` (else NumPy op by op)."""
    a, b, *rest = inputs
    product = np.empty(spec.shape, np.dtype(spec.attrs["matmul_dtype"]))
    np.matmul(a, b, out=product)
    if not generated:
        return _numpy_epilogue(ops, spec, product, rest)
    # in place when the dtype allows: elementwise kernels read element i before writing
    # it, and the product is full-size (never a broadcast view)
    out = product if product.dtype == spec.dtype else np.empty(spec.shape, spec.dtype)
    codegen = jit.numba_codegen()
    with numba_threads(1):
        codegen.launch(spec.attrs["epilogue"], [product, *rest], [out])
    return out


def _numpy_epilogue(ops: ArrayOps, spec: OpSpec, product: np.ndarray,
                   rest: Sequence[Any]) -> Any:
    """The epilogue of a fused ``spec`` over its core op's ``product``, op by op in NumPy."""
    point = OpSpec("fused_elementwise", spec.shape, spec.dtype,
                   (product.shape, *(x.shape for x in rest)),
                   (product.dtype, *(x.dtype for x in rest)),
                   {"program": spec.attrs["epilogue"]}, spec.device)
    return ops.run(point, [product, *rest])


@contextlib.contextmanager
def numba_threads(count: int) -> Iterator[None]:
    """Numba's thread count for parallel launches from this thread (it is thread-local),
    restored after: the device's worker runs other kernels with every thread."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(min(count, before))
    try:
        yield
    finally:
        numba.set_num_threads(before)
