"""Ops written once against a NumPy-compatible array module.

``cpu:0`` runs them with NumPy/SciPy and ``cuda:N`` with CuPy/cupyx, so the
code a GPU runs is the code the CPU tests exercise on every machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from hermes_nb.ir.node import OpSpec

# scipy.ndimage / cupyx.scipy.ndimage mode for each OpenCV border name.
NDIMAGE_MODES = {
    "reflect101": "mirror",
    "reflect": "reflect",
    "replicate": "nearest",
    "constant": "constant",
}


def _unary(xp: ModuleType) -> dict[str, Callable[[Any], Any]]:
    def sigmoid(x: Any) -> Any:
        return 1 / (1 + xp.exp(-x))

    def relu(x: Any) -> Any:
        return xp.maximum(x, x.dtype.type(0))

    def keep_int(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        # floor/ceil/round of an integer is the integer itself (array API)
        return lambda x: fn(x) if x.dtype.kind == "f" else x.copy()

    return {
        "negative": xp.negative,
        "abs": xp.abs,
        "exp": xp.exp,
        "log": xp.log,
        "sqrt": xp.sqrt,
        "sin": xp.sin,
        "cos": xp.cos,
        "tanh": xp.tanh,
        "sigmoid": sigmoid,
        "relu": relu,
        "floor": keep_int(xp.floor),
        "ceil": keep_int(xp.ceil),
        "round": keep_int(xp.round),
        "logical_not": xp.logical_not,
        "expm1": xp.expm1,
        "log1p": xp.log1p,
        "log2": xp.log2,
        "log10": xp.log10,
        "sinh": xp.sinh,
        "cosh": xp.cosh,
        "tan": xp.tan,
        "asin": xp.arcsin,
        "acos": xp.arccos,
        "atan": xp.arctan,
        "asinh": xp.arcsinh,
        "acosh": xp.arccosh,
        "atanh": xp.arctanh,
        "reciprocal": xp.reciprocal,
        "square": xp.square,
        "sign": xp.sign,
        "trunc": keep_int(xp.trunc),
        "isnan": xp.isnan,
        "isinf": xp.isinf,
        "isfinite": xp.isfinite,
        "bitwise_invert": xp.invert,
    }


def _binary(xp: ModuleType) -> dict[str, Callable[[Any, Any], Any]]:
    return {
        "add": xp.add,
        "subtract": xp.subtract,
        "multiply": xp.multiply,
        "divide": xp.true_divide,
        "floor_divide": xp.floor_divide,
        "remainder": xp.remainder,
        "pow": xp.power,
        "maximum": xp.maximum,
        "minimum": xp.minimum,
        "hypot": xp.hypot,
        "atan2": xp.arctan2,
        "logaddexp": xp.logaddexp,
        "copysign": xp.copysign,
        "bitwise_and": xp.bitwise_and,
        "bitwise_or": xp.bitwise_or,
        "bitwise_xor": xp.bitwise_xor,
        "equal": xp.equal,
        "not_equal": xp.not_equal,
        "less": xp.less,
        "less_equal": xp.less_equal,
        "greater": xp.greater,
        "greater_equal": xp.greater_equal,
        "logical_and": xp.logical_and,
        "logical_or": xp.logical_or,
    }


class ArrayOps:
    """Runs one op spec with array module ``xp`` and its ndimage module."""

    def __init__(self, xp: ModuleType, ndimage: ModuleType | str) -> None:
        self.xp = xp
        # a module name is imported on first use: scipy.ndimage alone costs ~0.15 s
        self._ndimage = ndimage
        self.unary = _unary(xp)
        self.binary = _binary(xp)

    @property
    def ndimage(self) -> ModuleType:
        if isinstance(self._ndimage, str):
            import importlib

            self._ndimage = importlib.import_module(self._ndimage)
        return self._ndimage

    def run(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        xp = self.xp
        op = spec.op
        with np.errstate(all="ignore"):  # NaN/Inf/overflow follow IEEE/NumPy, silently
            if op in self.unary:
                out = self.unary[op](inputs[0])
            elif op in self.binary:
                out = self.binary[op](inputs[0], inputs[1])
            else:
                out = getattr(self, f"_{op}")(spec, *inputs)
        out = xp.asarray(out)
        if out.dtype != spec.dtype:
            out = out.astype(spec.dtype)
        if out.shape != spec.shape:
            out = xp.broadcast_to(out, spec.shape)
        # not ascontiguousarray: it turns 0-d arrays into 1-d ones
        return out if out.flags.c_contiguous else out.copy(order="C")

    # elementwise ops that need the spec
    def _astype(self, spec: OpSpec, x: Any) -> Any:
        return x.astype(spec.dtype)

    def _to_device(self, spec: OpSpec, x: Any) -> Any:
        return x

    def _where(self, spec: OpSpec, cond: Any, a: Any, b: Any) -> Any:
        return self.xp.where(cond, a, b)

    def _fused_elementwise(self, spec: OpSpec, *inputs: Any) -> Any:
        program = spec.attrs["program"]
        values: list[Any] = list(inputs)
        values += [self.xp.asarray(v, dtype=d) for v, d in program.consts]
        for instr in program.instrs:
            args = [values[a] for a in instr.args]
            if instr.op in self.unary:
                out = self.unary[instr.op](args[0])
            elif instr.op in self.binary:
                out = self.binary[instr.op](*args)
            elif instr.op == "where":
                out = self.xp.where(*args)
            else:  # astype
                out = args[0]
            values.append(self.xp.asarray(out).astype(instr.dtype, copy=False))
        return values[program.outputs[0]]

    def _program(self, program: Any, shape: tuple[int, ...], inputs: Sequence[Any]) -> Any:
        """``program`` over ``inputs`` broadcast to ``shape`` (the interpreter above)."""
        out_dtype = np.dtype(program.dtype_of(program.outputs[0]))
        point = OpSpec("fused_elementwise", shape, out_dtype, tuple(x.shape for x in inputs),
                       tuple(x.dtype for x in inputs), {"program": program}, "")
        out = self.xp.asarray(self._fused_elementwise(point, *inputs))
        return self.xp.broadcast_to(out.astype(out_dtype, copy=False), shape)

    def _fused_reduce(self, spec: OpSpec, *inputs: Any) -> Any:
        """Reference semantics: prologue, reduction, epilogue, each value materialised."""
        a = spec.attrs
        n = a["n_prologue"]
        value = self._program(a["prologue"], a["in_shape"], inputs[:n])
        red = OpSpec(a["reduce"], (), np.dtype(a["reduce_dtype"]), (), (),
                     {"axes": a["axes"], "keepdims": a["keepdims"]}, "")
        out = self.xp.asarray(getattr(self, f"_{a['reduce']}")(red, value))
        if a["epilogue"] is None:
            return out
        return self._program(a["epilogue"], spec.shape, [out, *inputs[n:]])

    def _fused_matmul(self, spec: OpSpec, a: Any, b: Any, *rest: Any) -> Any:
        """Reference semantics: the product, then the epilogue over it."""
        product = self.xp.matmul(a, b)
        return self._program(spec.attrs["epilogue"], spec.shape, [product, *rest])

    def _fused_stencil(self, spec: OpSpec, image: Any) -> Any:
        """Reference semantics: the stages one after another, each value materialised."""
        from hermes_nb.compiler.stencil_program import ConvStage

        stencil = spec.attrs["stencil"]
        values = [image]
        for stage, dtype in zip(stencil.stages, stencil.value_dtypes[1:]):
            if isinstance(stage, ConvStage):
                conv = OpSpec("conv2d", spec.shape, np.dtype(dtype), (spec.shape,),
                              (np.dtype(dtype),), {"weights": stage.weights,
                              "border": stage.border, "separable": stage.separable}, spec.device)
                values.append(self._conv2d(conv, values[stage.source]))
            else:
                point = OpSpec("fused_elementwise", spec.shape, np.dtype(dtype),
                               tuple(spec.shape for _ in stage.sources),
                               tuple(values[i].dtype for i in stage.sources),
                               {"program": stage.program}, spec.device)
                values.append(self._fused_elementwise(point, *(values[i] for i in stage.sources)))
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
    def _reduce(self, name: str, spec: OpSpec, x: Any) -> Any:
        axes = spec.attrs["axes"]
        return getattr(self.xp, name)(x, axis=axes, keepdims=spec.attrs["keepdims"])

    def _sum(self, spec: OpSpec, x: Any) -> Any:
        axes = tuple(spec.attrs["axes"])
        if self.xp is np and x.dtype == np.float32 and x.ndim and x.ndim - 1 not in axes:
            # NumPy sums pairwise only along the innermost axis; across outer axes it adds
            # row after row, so float32 accumulates in float64 there (as accurate as pairwise)
            total = np.sum(x, axis=axes, keepdims=spec.attrs["keepdims"], dtype=np.float64)
            return total.astype(np.float32)
        return self._reduce("sum", spec, x)

    def _prod(self, spec: OpSpec, x: Any) -> Any:
        return self._reduce("prod", spec, x)

    def _max(self, spec: OpSpec, x: Any) -> Any:
        return self._reduce("max", spec, x)

    def _min(self, spec: OpSpec, x: Any) -> Any:
        return self._reduce("min", spec, x)

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
