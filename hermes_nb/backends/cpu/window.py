"""``cpu:0``'s ``conv``, ``pool`` and ``fused_conv``: the generated Numba kernels of
``codegen.numba_window`` over one or two spatial axes; NumPy (``ir.windows``) for more
axes, below ``WINDOW_MIN_WORK`` and without Numba. A ``fused_conv`` kernel computes its
epilogue (and its joined pool) as it writes the result, so it is written once."""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import jit
from hermes_nb.backends.cpu.matmul import numba_thread_count, numba_threads
from hermes_nb.codegen.numba_support import KernelCache, build_kernel
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.windows import Window

__all__ = ["generates", "launcher", "run_window", "source", "work"]

_KERNELS = KernelCache()  # (op, window shape, dtype, epilogue, planes, pool) -> kernel


def generates(spec: OpSpec, epilogue: Any = None) -> bool:
    """Whether a generated kernel runs ``spec``: one or two spatial axes, Numba present, and
    an epilogue (if any) the kernel can compute."""
    rank = len(spec.attrs.get("conv_shape", spec.shape))
    gen = _numba_window() if rank in (3, 4) else None
    if gen is None or (epilogue is not None and not gen.supports_epilogue(epilogue)):
        return False
    reduce = spec.attrs.get("reduce")
    return reduce is None or (epilogue is not None and (
        reduce["epilogue"] is None or gen.supports_epilogue(reduce["epilogue"])))


def run_window(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``conv``, ``pool`` or ``fused_conv`` spec on NumPy arrays."""
    if not generated:  # ir.windows, through NumPy
        return ops.run(spec, inputs)
    return _Launch(spec)(inputs)


def launcher(ops: ArrayOps, spec: OpSpec, generated: bool) -> Callable[[Sequence[Any]], Any]:
    """:func:`run_window` of ``spec`` as a function of its inputs, its plan and kernel
    worked out once (a replay launches one spec at every run), with a scratch copy of its
    own."""
    if not generated:
        return functools.partial(ops.run, spec)
    return _Launch(spec, keeps_scratch=True)


#: elements from which a weight or epilogue input is not kept prepared between launches
_PREPARED_ELEMENTS = 1 << 20


class _Launch:
    """One generated window spec: its plan made when it is, its kernel looked up at the
    first launch (built then, if need be), both kept. A launcher launched again (a replay's)
    also keeps what it made of the same small inputs (their broadcast views, 3 us each) and,
    with ``keeps_scratch``, one scratch copy, which a concurrent launch leaves to the pool."""

    def __init__(self, spec: OpSpec, keeps_scratch: bool = False) -> None:
        self.spec, self.plan, self.kernel = spec, _plan(spec), None
        self.parallel = work(spec) >= PARALLEL_MIN_WORK
        plan = self.plan
        # what a conv launch takes besides its arrays, from the spec alone
        self.conv_shape = spec.attrs.get("conv_shape", spec.shape)
        self.params = plan.epilogue.arguments() if plan.epilogue is not None else ()
        if plan.reduce is not None and plan.reduce.epilogue is not None:
            self.params += plan.reduce.epilogue.arguments()
        self.sizes = ((math.prod(self.conv_shape[2:-1]), self.conv_shape[-1])
                      if plan.pool is not None or plan.reduce is not None else ())
        self._prepared: tuple[tuple[Any, ...], Any, list[np.ndarray]] | None = None
        self._scratch_lock = threading.Lock() if keeps_scratch else None
        self._kept_scratch: np.ndarray | None = None

    def __call__(self, inputs: Sequence[Any]) -> np.ndarray:
        spec = self.spec
        out = np.empty(spec.shape, spec.dtype)
        if not out.size:
            return out
        if self.parallel:
            self._launch(inputs, out)
        else:
            with numba_threads(1):
                self._launch(inputs, out)
        return out

    def _launch(self, inputs: Sequence[Any], out: np.ndarray) -> None:
        spec, plan, x = self.spec, self.plan, inputs[0]
        g = plan.window
        x = np.ascontiguousarray(x).reshape(*x.shape[:2], -1, x.shape[-1])
        # a joined reduction's result: one value a plane, kept dims or not
        out = out.reshape(*out.shape[:2], 1, 1) if plan.reduce is not None else \
            out.reshape(*out.shape[:2], -1, out.shape[-1])
        if spec.op == "pool":
            kernel = self.kernel or _pool_kernel(plan.shape, spec.attrs["mode"])
            self.kernel = kernel
            kernel(x, out, g.pads[0], g.pads[1])
            return
        weights, others = self._weights_and_others(inputs, out.shape[1])
        layout = (plan.shape, x.shape, g.pads[0], g.pads[1], plan.hq, plan.wq)
        kernel = self.kernel or _conv_kernel(plan, out.dtype.name)
        self.kernel = kernel
        args = (int(spec.attrs["groups"]), g.pads[0], g.pads[1], plan.hq, plan.wq,
                _block(plan.hq, plan.wq, x.shape[0], out.shape[1] // plan.shape.channels,
                       numba_thread_count()), *self.sizes, *others, *self.params)
        lock = self._scratch_lock
        if lock is not None and lock.acquire(blocking=False):
            try:
                if self._kept_scratch is None:
                    self._kept_scratch = _new_scratch(layout)
                kernel(x, weights, out, self._kept_scratch, *args)
            finally:
                lock.release()
            return
        with _scratch(layout) as xq:
            kernel(x, weights, out, xq, *args)

    def _weights_and_others(self, inputs: Sequence[Any], channels: int
                            ) -> tuple[Any, list[np.ndarray]]:
        """The weights as (M, Cg, KH, KW) and the epilogue's other inputs broadcast (no copy)
        to the convolution's 4-D shape; the same as the last launch's where its inputs
        are the same small C-contiguous arrays (views of them: their values are read anew)."""
        rest = tuple(inputs[1:])
        kept = self._prepared
        if kept is not None and len(kept[0]) == len(rest) and \
                all(a is b for a, b in zip(kept[0], rest)):
            return kept[1], kept[2]
        conv_shape = self.conv_shape
        conv4 = (*conv_shape[:2], -1, conv_shape[-1])
        others = [np.broadcast_to(e, conv_shape).reshape(conv4) for e in rest[1:]]
        weights = np.ascontiguousarray(rest[0]).reshape(channels, -1, *self.plan.window.kernel)
        views = all(np.may_share_memory(v, a) for v, a in zip((weights, *others), rest))
        if views and all(isinstance(a, np.ndarray) and a.flags.c_contiguous and
                         a.size <= _PREPARED_ELEMENTS for a in rest):
            self._prepared = (rest, weights, others)
        return weights, others


#: multiply-adds (or window reads) from which a kernel runs on every thread (~15 us of
#: work on one core): a launch while the team's threads still spin (~10 ms after the last
#: one, as between a model's layers and runs) costs a few us; below, the work is too small
#: to risk waiting on a thread that a busy machine has not scheduled. A batch-8 first layer
#: (1.8 M) runs 1.3-1.5x faster on 2 cores, measured after an idle pause as well; with its
#: second (0.29 M) on both cores too, the whole model runs 3-7% faster
PARALLEL_MIN_WORK = 1 << 18


def work(spec: OpSpec) -> int:
    """A window spec's multiply-adds (a pool's window reads)."""
    if spec.op == "pool":
        return math.prod(spec.shape) * math.prod(spec.attrs["kernel"])
    return math.prod(spec.attrs.get("conv_shape", spec.shape)) * math.prod(spec.in_shapes[1][1:])


@dataclass(frozen=True)
class _Plan:
    """What a window spec's kernel is, from its shapes alone (so ``explain()`` shows the
    source that runs): the window over two spatial axes, the phases' padded sizes, and for a
    ``fused_conv`` its epilogue and which of its inputs hold one value per plane."""

    shape: Any  # codegen.numba_window.WindowShape
    window: Window
    hq: int
    wq: int
    epilogue: Any
    planes: tuple[bool, ...]
    pool: Any  # codegen.numba_window.ConvPool of a pool joined to a fused_conv, or None
    reduce: Any  # codegen.numba_window.ConvReduce of a reduction joined to it, or None


def _plan(spec: OpSpec) -> _Plan:
    conv = spec.op != "pool"
    x_shape = spec.in_shapes[0]
    g = _two_axes(Window.of(spec.attrs, spec.in_shapes[1][2:] if conv else
                            spec.attrs["kernel"]))
    x_shape = (*x_shape[:2], 1, x_shape[-1]) if len(x_shape) == 3 else x_shape
    (sh, sw), (h, w) = g.strides, x_shape[2:]
    core = np.dtype(spec.attrs.get("conv_dtype", spec.dtype))  # the window's own dtype
    block = _channel_block(spec.in_shapes[1][0] // int(spec.attrs["groups"])) if conv else 1
    gen = _numba_window()
    # few input channels whose weights fit the registers: all of them in one loop
    in_channels = spec.in_shapes[1][1] if conv else 0
    in_channels = in_channels if in_channels and \
        gen.all_channels_fit(g.kernel, in_channels, block) else 0
    shape = gen.WindowShape(g.kernel, g.strides, g.dilations, core.name, block, in_channels)
    rank = len(spec.attrs.get("conv_shape", spec.shape))
    planes = tuple(all(d == 1 for d in ((1,) * (rank - len(e)) + tuple(e))[2:])
                   for e in spec.in_shapes[2:])
    reduce = spec.attrs.get("reduce")
    return _Plan(shape, g, -(-(h + g.pads[0] + g.pads[2]) // sh),
                 -(-(w + g.pads[1] + g.pads[3]) // sw), spec.attrs.get("epilogue"), planes,
                 _conv_pool(spec.attrs.get("pool"), core),
                 gen.ConvReduce(reduce["mode"], reduce["epilogue"]) if reduce else None)


#: output channels one conv job computes at most: each tap is loaded once for all of them
#: (its loop was bound by loads, one per tap and channel), 4 x 9 weights fit the registers
CHANNEL_BLOCK = 4


def _channel_block(per_group: int) -> int:
    """The output channels a job computes: the most up to ``CHANNEL_BLOCK`` that divide a
    group's (a job never spans two groups)."""
    return next(b for b in range(CHANNEL_BLOCK, 0, -1) if per_group % b == 0)


def _two_axes(g: Window) -> Window:
    """The window over two spatial axes: one axis runs with a unit row above it."""
    if g.rank == 2:
        return g
    return Window((1, *g.kernel), (1, *g.strides), (1, *g.dilations),
                  (0, g.pads[0], 0, g.pads[1]))


def _conv_pool(attrs: dict[str, Any] | None, dtype: np.dtype) -> Any:
    """A fused_conv's pool over two spatial axes (one: a unit row above it)."""
    if attrs is None:
        return None
    g = _two_axes(Window.of(attrs, attrs["kernel"]))
    gen = _numba_window()
    return gen.ConvPool(gen.WindowShape(g.kernel, g.strides, g.dilations, dtype.name),
                        attrs["mode"], (g.pads[0], g.pads[1]))


def source(spec: OpSpec) -> str:
    """The Numba module ``run_window`` builds for a generated ``spec``."""
    plan = _plan(spec)
    if spec.op == "pool":
        return _numba_window().render_pool(plan.shape, spec.attrs["mode"])
    template = plan.epilogue.template if plan.epilogue is not None else None
    return _numba_window().render_conv(plan.shape, template, plan.planes, plan.pool,
                                       plan.reduce)


#: scratch copies kept, of the layers run last (each its input's size, padded), and the
#: most bytes they may hold together
SCRATCH_KEPT = 8
SCRATCH_BYTES = 256 << 20
_scratches: OrderedDict[tuple[Any, ...], list[np.ndarray]] = OrderedDict()
_scratch_lock = threading.Lock()


@contextlib.contextmanager
def _scratch(layout: tuple[Any, ...]) -> Iterator[np.ndarray]:
    """A conv kernel's padded scratch copy for ``layout`` (window shape, input shape, pads,
    phase sizes), zero where the padding is. One is kept per layout and reused: the kernel
    writes only the input's positions, the same ones at every run, so the padding stays
    zero and neither the zeroing nor the fresh pages are paid again. A second call while
    one is in use gets its own."""
    with _scratch_lock:
        free = _scratches.pop(layout, [])
        xq = free.pop() if free else None
        if free:
            _scratches[layout] = free
    if xq is None:
        xq = _new_scratch(layout)
    try:
        yield xq
    finally:
        with _scratch_lock:
            _scratches.setdefault(layout, []).append(xq)
            _scratches.move_to_end(layout)
            while len(_scratches) > SCRATCH_KEPT or _kept_bytes() > SCRATCH_BYTES:
                _scratches.popitem(last=False)


def _new_scratch(layout: tuple[Any, ...]) -> np.ndarray:
    shape, x_shape, _, _, hq, wq = layout
    return np.zeros(_numba_window().scratch_size(shape, x_shape[1], x_shape[0], hq, wq),
                    shape.dtype)


def _kept_bytes() -> int:
    return sum(a.nbytes for kept in _scratches.values() for a in kept)


def _forget_scratches() -> None:
    """In a forked child: a new lock (a thread of the parent's may have held the old one)."""
    global _scratch_lock
    _scratch_lock = threading.Lock()
    _scratches.clear()


os.register_at_fork(after_in_child=_forget_scratches)


#: elements a job's run covers at most: its accumulator stays in the core's L1/L2 cache
RUN_ELEMENTS = 4096


@functools.lru_cache(maxsize=1024)  # worked out once for each layer and thread count
def _block(hq: int, wq: int, images: int, channel_jobs: int, threads: int) -> int:
    """How many images one job's run covers (each plane ``hq * wq + wq`` apart): at most
    ``RUN_ELEMENTS``' worth, and of those counts the largest that shares the work out
    most evenly. Numba hands each thread one run of consecutive jobs (``channel_jobs`` of
    them per block of images): a batch of 8 in blocks of 3 left one of two threads 9 images
    against the other's 7, and a batch-8 first layer ran 20% slower than in blocks of 2."""
    most = max(1, min(images, RUN_ELEMENTS // (hq * wq + wq)))
    # ties go to the first, the largest block: fewer, longer runs
    return min(range(most, 0, -1),
               key=lambda block: _busiest_thread(images, block, channel_jobs, threads))


def _busiest_thread(images: int, block: int, channel_jobs: int, threads: int) -> int:
    """The most images' work one thread gets with blocks of ``block`` images: Numba gives
    thread ``t`` the ``t``-th of ``threads`` runs of consecutive jobs, the first
    ``jobs % threads`` of them one job longer."""
    threads = max(1, threads)
    per, extra = divmod(channel_jobs * -(-images // block), threads)

    def done(jobs: int) -> int:  # the images' work of the first ``jobs`` jobs
        blocks, within = divmod(jobs, channel_jobs)
        before = min(blocks * block, images)
        return channel_jobs * before + within * min(block, images - before)

    ends = [t * per + min(t, extra) for t in range(threads + 1)]
    return max(done(b) - done(a) for a, b in itertools.pairwise(ends))


def _conv_kernel(plan: _Plan, out_dtype: str) -> Any:
    shape, planes, reduce = plan.shape, plan.planes, plan.reduce
    template = plan.epilogue.template if plan.epilogue is not None else None
    post = reduce.epilogue.template if reduce is not None and reduce.epilogue else None

    def build() -> Any:
        import numba
        from numba.core import types

        array = _array_type(shape.dtype)
        ints = 6 + (2 if plan.pool is not None or reduce is not None else 0)
        scratch = types.Array(numba.from_dtype(np.dtype(shape.dtype)), 1, "C")
        signature = [array(True), array(True), _array_type(out_dtype)(False), scratch,
                     *_INTS(ints)]
        if template is not None:
            signature += [types.Array(numba.from_dtype(np.dtype(d)), 4, "A", readonly=True)
                          for d in template.input_dtypes[1:]]
            signature += [numba.from_dtype(np.dtype(template.consts[j][1]))
                          for j in template.params]
        if post is not None:
            signature += [numba.from_dtype(np.dtype(post.consts[j][1])) for j in post.params]
        source = _numba_window().render_conv(shape, template, planes, plan.pool, reduce)
        return build_kernel(source, "w", tuple(signature))

    key = ("conv", shape, out_dtype, template.signature if template is not None else None,
           planes, plan.pool,
           reduce and (reduce.mode, post.signature if post is not None else None))
    return _KERNELS.get_or_build(key, build, f"conv kernel {shape.kernel} for cpu:0")


def _pool_kernel(shape: Any, mode: str) -> Any:
    def build() -> Any:
        array = _array_type(shape.dtype)
        text = _numba_window().render_pool(shape, mode)
        return build_kernel(text, "w", (array(True), array(False), *_INTS(2)))

    return _KERNELS.get_or_build(("pool", mode, shape), build,
                                 f"{mode} pool kernel {shape.kernel} for cpu:0")


def _array_type(dtype: str) -> Any:
    import numba
    from numba.core import types

    def array(readonly: bool) -> Any:
        return types.Array(numba.from_dtype(np.dtype(dtype)), 4, "C", readonly=readonly)

    return array


def _INTS(count: int) -> tuple[Any, ...]:
    from numba.core import types

    return (types.int64,) * count


def _numba_window() -> Any:
    if jit.numba_codegen() is None:
        return None
    from hermes_nb.codegen import numba_window

    return numba_window
