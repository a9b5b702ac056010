"""``cpu:0``'s ``conv``, ``pool`` and ``fused_conv``: the generated Numba kernels of
``codegen.numba_window`` over one or two spatial axes; NumPy (``ir.windows``) for more
axes, below the JIT size and without Numba. A ``fused_conv`` writes the convolution into
its result, then runs the epilogue over it in place (as ``fused_matmul`` does)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import jit
from hermes_nb.backends.cpu.matmul import numba_threads, numpy_epilogue
from hermes_nb.codegen.numba_support import KernelCache, build_kernel
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.windows import Window, lowest

__all__ = ["generates", "run_window", "work"]

_KERNELS = KernelCache()  # (op, mode, WindowShape) -> compiled kernel


def generates(spec: OpSpec, epilogue: Any = None) -> bool:
    """Whether a generated kernel runs ``spec``: one or two spatial axes, Numba present, and
    an epilogue (if any) the kernel can compute."""
    gen = _numba_window() if len(spec.shape) in (3, 4) else None
    return gen is not None and (epilogue is None or gen.supports_epilogue(epilogue))


def run_window(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``conv``, ``pool`` or ``fused_conv`` spec on NumPy arrays."""
    fused = spec.op == "fused_conv"
    core = spec.attrs.get("conv_dtype") if fused else None
    dtype = np.dtype(core) if core else spec.dtype
    if not generated:
        if not fused:
            return ops.run(spec, inputs)
        product = ops.run(OpSpec("conv", spec.shape, dtype, spec.in_shapes[:2],
                                 spec.in_dtypes[:2], spec.attrs, spec.device), inputs[:2])
        return numpy_epilogue(ops, spec, product, inputs[2:])
    out = np.empty(spec.shape, spec.dtype)
    if not out.size:
        return out
    if work(spec) >= PARALLEL_MIN_WORK:
        _launch(spec, inputs, out, dtype)
    else:
        with numba_threads(1):
            _launch(spec, inputs, out, dtype)
    return out


#: multiply-adds (or window reads) from which a kernel runs on every thread: below, the
#: wait for the sleeping threads of a parallel launch (0.1 ms to a scheduler time slice on
#: a shared machine) costs more than the work (a batch-8 layer: ~50 us on one core)
PARALLEL_MIN_WORK = 1 << 22


def work(spec: OpSpec) -> int:
    """A window spec's multiply-adds (a pool's window reads)."""
    taps = math.prod(spec.in_shapes[1][1:]) if spec.op != "pool" else \
        math.prod(spec.attrs["kernel"])
    return math.prod(spec.shape) * taps


def _launch(spec: OpSpec, inputs: Sequence[Any], out: np.ndarray, dtype: np.dtype) -> None:
    conv = spec.op != "pool"
    epilogue = spec.attrs.get("epilogue")
    x = inputs[0]
    kernel = inputs[1].shape[2:] if conv else spec.attrs["kernel"]
    g = Window.of(spec.attrs, kernel)
    if g.rank == 1:  # one spatial axis: a unit row above it
        g = Window((1, *g.kernel), (1, *g.strides), (1, *g.dilations),
                   (0, g.pads[0], 0, g.pads[1]))
        x = x.reshape(x.shape[0], x.shape[1], 1, -1)
        out = out.reshape(out.shape[0], out.shape[1], 1, -1)
    # the epilogue's other inputs, broadcast (no copy) to the output's 4-D shape
    others = [np.broadcast_to(e, spec.shape).reshape(out.shape) for e in inputs[2:]]
    planes = tuple(all(s == 0 for s in e.strides[2:]) for e in others)
    (sh, sw), (h, w) = g.strides, x.shape[2:]
    hq = -(-(h + g.pads[0] + g.pads[2]) // sh)
    wq = -(-(w + g.pads[1] + g.pads[3]) // sw)
    shape = _numba_window().WindowShape(g.kernel, g.strides, g.dilations, dtype.name)
    x = np.ascontiguousarray(x)
    if conv:
        weights = np.ascontiguousarray(inputs[1]).reshape(out.shape[1], -1, *g.kernel)
        params = epilogue.arguments() if epilogue is not None else ()
        _conv_kernel(shape, out.dtype.name, epilogue, planes)(
            x, weights, out, int(spec.attrs["groups"]), g.pads[0], g.pads[1], hq, wq,
            _block(hq, wq), *others, *params)
    else:
        _pool_kernel(shape, spec.attrs["mode"])(x, out, g.pads[0], g.pads[1])


#: elements a job's run covers at most: its accumulator stays in the core's L1/L2 cache
RUN_ELEMENTS = 4096


def _block(hq: int, wq: int) -> int:
    """How many images one job's run covers (each plane ``hq * wq + wq`` apart)."""
    return max(1, RUN_ELEMENTS // (hq * wq + wq))


def _conv_kernel(shape: Any, out_dtype: str, epilogue: Any, planes: tuple[bool, ...]) -> Any:
    template = epilogue.template if epilogue is not None else None

    def build() -> Any:
        import numba
        from numba.core import types

        array = _array_type(shape.dtype)
        signature = [array(True), array(True), _array_type(out_dtype)(False), *_INTS(6)]
        if template is not None:
            signature += [types.Array(numba.from_dtype(np.dtype(d)), 4, "A", readonly=True)
                          for d in template.input_dtypes[1:]]
            signature += [numba.from_dtype(np.dtype(template.consts[j][1]))
                          for j in template.params]
        source = _numba_window().render_conv(shape, template, planes)
        return build_kernel(source, "w", tuple(signature))

    key = ("conv", shape, out_dtype, template.signature if template is not None else None,
           planes)
    return _KERNELS.get_or_build(key, build, f"conv kernel {shape.kernel} for cpu:0")


def _pool_kernel(shape: Any, mode: str) -> Any:
    def build() -> Any:
        array = _array_type(shape.dtype)
        identity = repr(lowest(np.dtype(shape.dtype))) if mode == "max" else "0"
        source = _numba_window().render_pool(shape, mode, identity.replace("inf", "np.inf"))
        return build_kernel(source, "w", (array(True), array(False), *_INTS(2)))

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
