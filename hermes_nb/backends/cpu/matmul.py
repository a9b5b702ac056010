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

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import jit
from hermes_nb.ir.array_ops import ArrayOps, ieee_quiet
from hermes_nb.ir.node import OpSpec

__all__ = ["launcher", "numba_thread_count", "numba_threads", "run_matmul"]


def run_matmul(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``fused_matmul`` spec on NumPy arrays: BLAS, then the epilogue as a Numba kernel
    where ``generated`` (else NumPy op by op)."""
    return launcher(ops, spec, generated)(inputs)


def launcher(ops: ArrayOps, spec: OpSpec, generated: bool) -> Callable[[Sequence[Any]], Any]:
    """:func:`run_matmul` of ``spec`` as a function of its inputs (the epilogue's runner
    made once: a replay launches one spec at every run)."""
    shape, product_dtype = tuple(spec.shape), np.dtype(spec.attrs["matmul_dtype"])
    epilogue = spec.attrs["epilogue"]
    # NumPy's epilogue under the launch's own error state (below), not one of its own
    numpy_epilogue = (None if generated else
                      ops.launcher(_epilogue_spec(spec, product_dtype)).unguarded)

    def launch(inputs: Sequence[Any]) -> Any:
        a, b, *rest = inputs
        product = np.empty(shape, product_dtype)
        np.matmul(a, b, out=product)
        if numpy_epilogue is not None:
            return numpy_epilogue([product, *rest])
        # in place when the dtype allows: elementwise kernels read element i before
        # writing it, and the product is full-size (never a broadcast view)
        out = product if product.dtype == spec.dtype else np.empty(shape, spec.dtype)
        with numba_threads(1):
            jit.numba_codegen().launch(epilogue, [product, *rest], [out])
        return out

    return ieee_quiet(launch)


def _epilogue_spec(spec: OpSpec, product_dtype: np.dtype) -> OpSpec:
    """The epilogue of a fused ``spec`` over its core op's product, as an op of its own."""
    return OpSpec("fused_elementwise", spec.shape, spec.dtype,
                  (tuple(spec.shape), *spec.in_shapes[2:]),
                  (product_dtype, *spec.in_dtypes[2:]),
                  {"program": spec.attrs["epilogue"]}, spec.device)


class numba_threads:  # a context manager used like a function
    """Numba's thread count for parallel launches from this thread (it is thread-local),
    lowered to ``count`` and restored after: the device's worker runs other kernels with
    every thread. Entered at every small kernel's launch, so it reads and sets the count
    through Numba's threading-layer functions directly (1 us, where the checked public
    functions and a generator cost 4 us)."""

    __slots__ = ("before", "count")

    def __init__(self, count: int) -> None:
        self.count = count
        self.before = 0

    def __enter__(self) -> None:
        get, put = _thread_count_access()
        self.before = get()
        if self.count < self.before:
            put(self.count)

    def __exit__(self, *exc: object) -> None:
        if self.count < self.before:
            _thread_count_access()[1](self.before)


def numba_thread_count() -> int:
    """Numba's thread count for parallel launches from this thread, now (1 us)."""
    return _thread_count_access()[0]()


@functools.cache
def _thread_count_access() -> tuple[Callable[[], int], Callable[[int], None]]:
    """Numba's thread-count getter and setter, its threads launched (as the public
    functions do at each call); the public functions where a Numba lacks the raw ones."""
    import numba
    from numba.np.ufunc import parallel

    numba.get_num_threads()  # launches the threading layer once
    get, put = getattr(parallel, "_get_num_threads", None), getattr(parallel, "_set_num_threads", None)
    if get is None or put is None:
        return numba.get_num_threads, numba.set_num_threads
    return get, put
