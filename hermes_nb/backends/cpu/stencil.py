"""``cpu:0`` running a generated stencil kernel (``codegen.numba_stencil``) on its cores.

The kernel is a serial ``nogil`` function over a range of tasks (consecutive rows of one
image); the caller and a small thread pool (``numba.get_num_threads()`` in all) take tasks
from a shared queue, so a core busy elsewhere slows one thread rather than a static share.
Outputs of 4 MiB or more come from a small pool (:class:`_OutputPool`) of buffers nothing
else holds.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from hermes_nb.codegen.numba_stencil import border_maps, compile_stencil, layout_of
from hermes_nb.ir.stencil import StencilProgram

__all__ = ["launch", "run_stencil"]

# rows per task at least (the halo is recomputed per task), tasks per thread at most
_MIN_ROWS = 32
_TASKS_PER_THREAD = 8
# below this many pixels one thread does it all: handing work over costs ~50 µs
_PARALLEL_MIN_ELEMENTS = 1 << 17
_LOCK = threading.Lock()


def _nsplit(batch: int, height: int, threads: int) -> int:
    tasks = _TASKS_PER_THREAD * threads if threads > 1 else 1
    return max(1, min(math.ceil(tasks / max(batch, 1)), height // _MIN_ROWS))


_EXECUTOR: ThreadPoolExecutor | None = None


def _executor(workers: int) -> ThreadPoolExecutor:
    global _EXECUTOR
    with _LOCK:
        if _EXECUTOR is None or _EXECUTOR._max_workers < workers:
            _EXECUTOR = ThreadPoolExecutor(workers, thread_name_prefix="hermes-stencil")
        return _EXECUTOR


def _forget_executor() -> None:
    global _EXECUTOR
    _EXECUTOR = None  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_executor)


def launch(stencil: StencilProgram, image: np.ndarray, out: np.ndarray) -> None:
    """Run ``stencil`` on ``image`` (..., H, W) into the preallocated ``out``."""
    dts = stencil.value_dtypes
    if image.ndim < 2 or out.shape != image.shape:
        raise ValueError(f"image {image.shape} and out {out.shape} must be one (..., H, W) shape")
    if image.dtype != dts[0] or out.dtype != dts[-1]:
        raise TypeError(f"stencil maps {dts[0]} -> {dts[-1]}, got {image.dtype} -> {out.dtype}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be writable and C-contiguous")
    if out.size == 0:
        return
    kernel = compile_stencil(stencil)
    h, w = image.shape[-2:]
    img = (np.ascontiguousarray(image) if image.flags.aligned else image.copy()).reshape(-1, h, w)
    out3 = out.reshape(-1, h, w)
    modes, radius = layout_of(stencil)
    rmaps = border_maps(modes, radius, h)
    cmaps = border_maps(modes, radius, w)
    threads = numba.get_num_threads() if out.size >= _PARALLEL_MIN_ELEMENTS else 1
    nsplit = _nsplit(img.shape[0], h, threads)
    ntask = img.shape[0] * nsplit
    threads = min(threads, ntask)
    params = stencil.arguments()  # point stages' scalars: arguments, not in the kernel
    if threads <= 1:
        kernel(out3, img, nsplit, 0, ntask, rmaps, cmaps, *params)
        return
    # Tasks go to whichever thread is free (the caller works too): a core busy with
    # something else slows one thread, not the whole kernel. The kernel is nogil.
    # (Numba's parallel=True would cost ~2 s more compile time per kernel.)
    claim = threading.Lock()
    queue = iter(range(ntask))

    def work() -> None:
        while True:
            with claim:
                t = next(queue, -1)
            if t < 0:
                return
            kernel(out3, img, nsplit, t, t + 1, rmaps, cmaps, *params)

    pool = _executor(threads - 1)
    futures = [pool.submit(work) for _ in range(threads - 1)]
    try:
        work()
    finally:
        for f in futures:
            f.result()


def run_stencil(stencil: StencilProgram, image: np.ndarray, out_shape: Sequence[int],
                out_dtype: np.dtype | str) -> np.ndarray:
    """``stencil`` applied to ``image``, as an array that no one else references."""
    shape, dtype = tuple(out_shape), np.dtype(out_dtype)
    out = _POOL.take(shape, dtype)
    launch(stencil, image, out)
    return out


class _OutputPool:
    """Keeps recent large outputs, to hand one back once nothing references it.

    A fresh 64 MiB ``np.empty`` is a new mmap whose first writes page-fault, which
    costs as much as the kernel itself; a buffer only the pool still holds (its
    reference count says so; a result, a view or any other holder keeps it higher)
    is as good as new.
    """

    MIN_BYTES = 1 << 22
    MAX_BYTES = 1 << 28  # held in total, free or not

    def __init__(self) -> None:
        self._buffers: list[np.ndarray] = []
        self._lock = threading.Lock()
        probe = [np.empty(1)]
        self._free_refs = sys.getrefcount(probe[0])  # the list and getrefcount's argument

    def _free(self, i: int) -> bool:
        return sys.getrefcount(self._buffers[i]) == self._free_refs

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.MIN_BYTES:
            return np.empty(shape, dtype)
        with self._lock:
            for i in range(len(self._buffers)):
                buf = self._buffers[i]
                if buf.shape == shape and buf.dtype == dtype:
                    del buf
                    if self._free(i):
                        found = self._buffers.pop(i)
                        self._buffers.append(found)  # most recently used last
                        return found
            held = sum(b.nbytes for b in self._buffers)
            i = 0
            while held + nbytes > self.MAX_BYTES and i < len(self._buffers):
                if self._free(i):  # evict the least recently used free ones
                    held -= self._buffers.pop(i).nbytes
                else:
                    i += 1
            out = np.empty(shape, dtype)
            if held + nbytes <= self.MAX_BYTES:
                self._buffers.append(out)
            return out


_POOL = _OutputPool()
