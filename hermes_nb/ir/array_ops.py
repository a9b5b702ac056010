"""Ops written once against a NumPy-compatible array module.

``cpu:0`` runs them with NumPy/SciPy and ``cuda:N`` with CuPy/cupyx, so the
code a GPU runs is the code the CPU tests exercise on every machine.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType, ModuleType
from typing import Any

import numpy as np

from hermes_nb.ir import windows
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.ops import ELEMENTWISE, OPS

# scipy.ndimage / cupyx.scipy.ndimage mode for each OpenCV border name.
NDIMAGE_MODES = {
    "reflect101": "mirror",
    "reflect": "reflect",
    "replicate": "nearest",
    "constant": "constant",
}


@functools.cache  # one table per array module, shared by every ArrayOps of it
def elementwise_functions(xp: ModuleType) -> Mapping[str, Callable[..., Any]]:
    """Every elementwise op as a function of ``xp`` arrays, from the op table's NumPy forms."""
    return MappingProxyType({name: OPS[name].array_function(xp) for name in ELEMENTWISE})


def convert(xp: ModuleType, array: Any, dtype: np.dtype) -> Any:
    """``array`` as ``dtype``; a complex value becomes a real one through its real part (to
    bool: nonzero in either part), as the array API says, without NumPy's ComplexWarning."""
    if array.dtype.kind == "c" and dtype.kind != "c":
        array = array != 0 if dtype.kind == "b" else xp.real(array)
    return array.astype(dtype, copy=False)


#: the reductions ``ArrayOps`` runs, and the NumPy ufunc whose ``reduce`` each is
REDUCTIONS = ("sum", "prod", "max", "min")
_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def ieee_quiet(launch: Callable[[Sequence[Any]], Any]) -> Callable[[Sequence[Any]], Any]:
    """``launch`` with NaN/Inf/overflow following IEEE/NumPy, silently: errstate as a
    decorator (1 us a call) rather than a with block (2 us), which a small op's launch would
    notice. Its ``unguarded`` attribute is ``launch`` itself, for a caller that runs many
    launches under one errstate of its own (a replay's run: one instead of one a kernel)."""
    guarded = np.errstate(all="ignore")(launch)
    guarded.unguarded = launch  # type: ignore[attr-defined]
    return guarded


def _first(inputs: Sequence[Any]) -> Any:
    return inputs[0]


def _passes_on(program: Any, in_shape: Sequence[int], in_dtype: np.dtype,
               shape: Sequence[int]) -> bool:
    """Whether a prologue ``program`` hands its one input on as it is (no instruction, the
    input already the reduced shape and dtype)."""
    return (program.n_inputs == 1 and not program.instrs and program.outputs == (0,)
            and tuple(in_shape) == tuple(shape)
            and np.dtype(program.dtype_of(0)) == np.dtype(in_dtype))


class ArrayOps:
    """Runs one op spec with array module ``xp`` and its ndimage module."""

    def __init__(self, xp: ModuleType, ndimage: ModuleType | str) -> None:
        self.xp = xp
        # a module name is imported on first use: scipy.ndimage alone costs ~0.15 s
        self._ndimage = ndimage
        self.elementwise = elementwise_functions(xp)

    @property
    def ndimage(self) -> ModuleType:
        if isinstance(self._ndimage, str):
            import importlib

            self._ndimage = importlib.import_module(self._ndimage)
        return self._ndimage

    def run(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        return self.launcher(spec)(inputs)

    def launcher(self, spec: OpSpec) -> Callable[[Sequence[Any]], Any]:
        """``run`` of ``spec`` as a function of its inputs, with what depends on ``spec``
        alone (the function to call, a program's steps and constants) decided once: a
        replay launches one spec at every run, where a small op's lookups cost more than
        its arithmetic."""
        xp, dtype, shape = self.xp, spec.dtype, tuple(spec.shape)
        compute = self._compute(spec)

        def launch(inputs: Sequence[Any]) -> Any:
            out = xp.asarray(compute(inputs))
            if out.dtype != dtype:
                out = convert(xp, out, dtype)  # astype: the op
            if out.shape != shape:
                out = xp.broadcast_to(out, shape)
            # not ascontiguousarray: it turns 0-d arrays into 1-d ones
            return out if out.flags.c_contiguous else out.copy(order="C")

        return ieee_quiet(launch)

    def _compute(self, spec: OpSpec) -> Callable[[Sequence[Any]], Any]:
        """``spec``'s value from its inputs, before ``launch`` fixes its dtype and shape."""
        op = spec.op
        if op in self.elementwise:
            function = self.elementwise[op]
            return lambda inputs: function(*inputs)
        if op == "fused_elementwise":
            return self._evaluator(spec.attrs["program"])
        if op == "fused_reduce":
            return self._reducer(spec)
        if op == "fused_softmax":
            return self._softmax(spec)
        if op in REDUCTIONS:
            reduce = self._reduction(op, spec.attrs["axes"], spec.attrs["keepdims"],
                                     len(spec.in_shapes[0]), spec.in_dtypes[0])
            return lambda inputs: reduce(inputs[0])
        method = getattr(self, f"_{op}")
        return lambda inputs: method(spec, *inputs)

    def _evaluator(self, program: Any) -> Callable[[Sequence[Any]], Any]:
        """``program``'s first output over its inputs, instruction by instruction; its
        constants converted once (read-only: they are shared by every call)."""
        result = program.outputs[0]
        if not program.instrs and result < program.n_inputs:
            return lambda inputs: inputs[result]  # a prologue that passes its input on
        xp, functions = self.xp, self.elementwise
        consts = [xp.asarray(v, dtype=d) for v, d in program.consts]
        if result < program.n_inputs + len(consts):  # a constant: a fresh array each time
            return lambda inputs: consts[result - program.n_inputs].copy()
        steps = [(functions[i.op], i.args, np.dtype(i.dtype)) for i in program.instrs]

        def evaluate(inputs: Sequence[Any]) -> Any:
            values = [*inputs, *consts]
            for function, args, dtype in steps:
                values.append(convert(xp, xp.asarray(function(*(values[a] for a in args))),
                                      dtype))
            return values[result]

        return evaluate

    def _evaluate(self, program: Any, inputs: Sequence[Any]) -> Any:
        return self._evaluator(program)(inputs)

    def _program_over(self, program: Any, shape: tuple[int, ...]
                      ) -> Callable[[Sequence[Any]], Any]:
        """``program`` over its inputs broadcast to ``shape`` (the interpreter above)."""
        xp, evaluate = self.xp, self._evaluator(program)
        dtype, shape = np.dtype(program.dtype_of(program.outputs[0])), tuple(shape)

        def over(inputs: Sequence[Any]) -> Any:
            out = xp.asarray(evaluate(inputs)).astype(dtype, copy=False)
            return out if out.shape == shape else xp.broadcast_to(out, shape)

        return over

    def _program(self, program: Any, shape: tuple[int, ...], inputs: Sequence[Any]) -> Any:
        return self._program_over(program, shape)(inputs)

    def _reducer(self, spec: OpSpec) -> Callable[[Sequence[Any]], Any]:
        """A ``fused_reduce`` with reference semantics: prologue, reduction, epilogue, each
        value materialised."""
        a, xp = spec.attrs, self.xp
        n, program = a["n_prologue"], a["prologue"]
        if _passes_on(program, spec.in_shapes[0], spec.in_dtypes[0], a["in_shape"]):
            prologue = _first  # the reduced input itself (a global pool's)
        else:
            prologue = self._program_over(program, a["in_shape"])
        reduce = self._reduction(a["reduce"], a["axes"], a["keepdims"], len(a["in_shape"]),
                                 np.dtype(program.dtype_of(program.outputs[0])))
        epilogue = (self._program_over(a["epilogue"], spec.shape)
                    if a["epilogue"] is not None else None)

        def compute(inputs: Sequence[Any]) -> Any:
            out = xp.asarray(reduce(prologue(inputs[:n])))
            return out if epilogue is None else epilogue([out, *inputs[n:]])

        return compute

    def _softmax(self, spec: OpSpec) -> Callable[[Sequence[Any]], Any]:
        """A ``fused_softmax``: the steps its unfused kernels take (the max, the shifted
        exponential, its sum, the division), with the same reductions, in one launch."""
        xp, axes, ndim, dtype = self.xp, spec.attrs["axes"], len(spec.shape), spec.dtype
        peak = self._reduction("max", axes, True, ndim, dtype)
        total = self._reduction("sum", axes, True, ndim, dtype)

        def softmax(inputs: Sequence[Any]) -> Any:
            (x,) = inputs
            shifted = xp.exp(x - peak(x))
            return xp.divide(shifted, total(shifted), out=shifted)

        return softmax

    def _fused_matmul(self, spec: OpSpec, a: Any, b: Any, *rest: Any) -> Any:
        """Reference semantics: the product, then the epilogue over it."""
        product = self.xp.matmul(a, b)
        return self._program(spec.attrs["epilogue"], spec.shape, [product, *rest])

    def _fused_conv(self, spec: OpSpec, x: Any, w: Any, *rest: Any) -> Any:
        """Reference semantics: the convolution, the epilogue over it, then the pool or the
        reduction of every plane (and its epilogue) if one joined it."""
        conv_shape = spec.attrs.get("conv_shape", spec.shape)
        product = windows.conv(self.xp, x, w, spec.attrs, conv_shape)
        value = self._program(spec.attrs["epilogue"], conv_shape, [product, *rest])
        pool, reduce = spec.attrs.get("pool"), spec.attrs.get("reduce")
        if pool is not None:
            return windows.pool(self.xp, value, pool, spec.shape)
        if reduce is None:
            return value
        ndim = len(conv_shape)
        reduced = self.xp.asarray(self._reduction(
            reduce["mode"], tuple(range(2, ndim)), reduce["keepdims"], ndim, value.dtype)(value))
        post = reduce["epilogue"]
        return reduced if post is None else self._program(post, spec.shape, [reduced])

    def _fused_stencil(self, spec: OpSpec, image: Any) -> Any:
        """Reference semantics: the stages one after another, each value materialised."""
        from hermes_nb.ir.stencil import ConvStage

        stencil = spec.attrs["stencil"]
        values = [image]
        for stage, dtype in zip(stencil.stages, stencil.value_dtypes[1:]):
            if isinstance(stage, ConvStage):
                conv = OpSpec("conv2d", spec.shape, np.dtype(dtype), (spec.shape,),
                              (np.dtype(dtype),), {"weights": stage.weights,
                              "border": stage.border, "separable": stage.separable}, spec.device)
                values.append(self._conv2d(conv, values[stage.source]))
            else:
                values.append(self._evaluate(stage.program, [values[i] for i in stage.sources]))
        return values[-1]

    # sources
    def _full(self, spec: OpSpec) -> Any:
        return self.xp.full(spec.shape, spec.attrs["fill_value"], dtype=spec.dtype)

    def _arange(self, spec: OpSpec) -> Any:
        start, step = spec.attrs["start"], spec.attrs["step"]
        # like NumPy, float ranges are computed in double, then converted
        work = np.float64 if spec.dtype.kind == "f" else spec.dtype
        return start + self.xp.arange(spec.shape[0], dtype=work) * step

    # reductions
    def _reduction(self, name: str, axes: Sequence[int], keepdims: bool, ndim: int,
                   dtype: np.dtype) -> Callable[[Any], Any]:
        """Reduction ``name`` over ``axes`` of an ``ndim``-D array of ``dtype``, as a function
        of the array, what depends on the spec alone decided once."""
        xp, axes = self.xp, tuple(axes)
        if name == "sum" and xp is np and dtype == np.float32 and ndim and ndim - 1 not in axes:
            # NumPy sums pairwise only along the innermost axis; across outer axes it adds
            # row after row, so float32 accumulates in float64 there (as accurate as pairwise)
            def wide_sum(x: Any) -> Any:
                return np.sum(x, axis=axes, keepdims=keepdims, dtype=np.float64).astype(np.float32)
            return wide_sum
        # NumPy's ufunc reduce itself: np.sum and the like only pass their arguments on
        reduce = _UFUNCS[name].reduce if xp is np else getattr(xp, name)
        inner = len(axes)
        if inner < 2 or axes != tuple(range(ndim - inner, ndim)):
            return lambda x: reduce(x, axis=axes, keepdims=keepdims)
        kept = (1,) * inner if keepdims else ()

        def innermost(x: Any) -> Any:
            if not x.flags.c_contiguous:
                return reduce(x, axis=axes, keepdims=keepdims)
            # the innermost axes as one (a view): NumPy reduces one long axis at vector
            # speed (a global pool's planes: twice as fast as over two axes)
            # (the length spelled out: -1 is ambiguous when an outer axis is empty)
            out = reduce(x.reshape(*x.shape[:-inner], math.prod(x.shape[-inner:])), axis=-1)
            return out.reshape(out.shape + kept) if keepdims else out

        return innermost

    def _argmax(self, spec: OpSpec, x: Any) -> Any:
        (axis,) = spec.attrs["axes"]
        return self.xp.argmax(x, axis=axis, keepdims=spec.attrs["keepdims"])

    def _argmin(self, spec: OpSpec, x: Any) -> Any:
        (axis,) = spec.attrs["axes"]
        return self.xp.argmin(x, axis=axis, keepdims=spec.attrs["keepdims"])

    # movement
    def _reshape(self, spec: OpSpec, x: Any) -> Any:
        return x.reshape(spec.shape)

    def _permute(self, spec: OpSpec, x: Any) -> Any:
        return self.xp.transpose(x, spec.attrs["axes"])

    def _broadcast_to(self, spec: OpSpec, x: Any) -> Any:
        return self.xp.broadcast_to(x, spec.shape)

    def _slice(self, spec: OpSpec, x: Any) -> Any:
        index: list[Any] = []
        for start, step, size, keep in zip(
            spec.attrs["starts"], spec.attrs["steps"], spec.attrs["sizes"], spec.attrs["keep"]
        ):
            if not keep:
                index.append(start)
                continue
            stop = start + step * size
            index.append(slice(start, None if stop < 0 else stop, step))
        return x[tuple(index)]

    def _concat(self, spec: OpSpec, *xs: Any) -> Any:
        return self.xp.concatenate(xs, axis=spec.attrs["axis"])

    # linear algebra and stencils
    def _matmul(self, spec: OpSpec, a: Any, b: Any) -> Any:
        return self.xp.matmul(a, b)

    # sliding windows
    def _conv(self, spec: OpSpec, x: Any, w: Any) -> Any:
        return windows.conv(self.xp, x, w, spec.attrs, spec.shape)

    def _pool(self, spec: OpSpec, x: Any) -> Any:
        return windows.pool(self.xp, x, spec.attrs, spec.shape)

    def _conv2d(self, spec: OpSpec, x: Any) -> Any:
        mode = NDIMAGE_MODES[spec.attrs["border"]]
        separable = spec.attrs.get("separable")
        # correlate over the last two axes only: size-1 weights along the batch axes
        lead = (1,) * (x.ndim - 2)
        if separable is not None:
            col, row = (self.xp.asarray(w, dtype=spec.dtype) for w in separable)
            tmp = self.ndimage.correlate1d(x, col, axis=-2, mode=mode, cval=0.0)
            return self.ndimage.correlate1d(tmp, row, axis=-1, mode=mode, cval=0.0)
        weights = self.xp.asarray(spec.attrs["weights"], dtype=spec.dtype).reshape(
            (*lead, len(spec.attrs["weights"]), -1)
        )
        return self.ndimage.correlate(x, weights, mode=mode, cval=0.0)
