"""CPU code generator: a fused elementwise :class:`Program` as a parallel Numba kernel.

API
---
``run_elementwise(program, inputs, out_shape, out_dtype) -> np.ndarray``
    Allocate the output, pick the variant, run. Inputs are NumPy arrays of the
    program's input dtypes that broadcast to ``out_shape`` (C-contiguous ones
    are used in place, others are copied).
``launch(program, inputs, outputs) -> None``
    The same into preallocated C-contiguous outputs, one per ``program.outputs``
    (all of one shape; extra outputs let one kernel compute several values).
``compile_elementwise(program, variant) -> kernel``
    The compiled Numba dispatcher of one variant; ``plan`` says which variant and
    which call arguments an input/output shape combination needs.
``supports(program) -> bool``
    Whether every instruction has a rendering here (else use the interpreter).

Variants (never specialised on sizes, so at most ``2**n_inputs`` per kind):

``("flat", classes)``: the output and the inputs collapse to one dimension; each
    input is ``"f"`` (full size, read at ``i``) or ``"s"`` (one element, read once).
    One ``prange`` loop over the elements, which LLVM vectorises. Programs of more
    than ``PARALLEL_MAX_INSTRS`` instructions compile serial (Numba's parallel pass
    would dominate their compile time) and ``launch`` runs them over slices on a few
    threads; their ``nd`` variant runs on one thread.
    Call: ``kernel(out0, ..., in0, ...)``, all 1-D.
``("nd", classes)``: after dropping size-1 dimensions and merging dimensions that
    every operand walks contiguously, there are ``k >= 2`` dimensions; each input
    is ``"i"`` (varies along the innermost one, contiguously) or ``"o"``
    (constant along it). ``prange`` over tasks of consecutive output elements,
    walked row segment by row segment; values that depend on ``"o"`` inputs only
    are computed once per segment.
    Call: ``kernel(out0, ..., shape, strides, in0, ...)`` with ``shape`` uint64[k]
    and ``strides`` uint64[n_inputs, k] in elements (0 along broadcast dimensions).

Semantics follow NumPy (the ``array_backend`` interpreter): IEEE NaN/Inf, no
fast-math flags; integer ``//`` and ``%`` by 0 give 0; integers wrap; ``round``
is half to even; ``maximum``/``minimum``/``relu`` propagate NaN. float32 ``exp``
(and ``sigmoid``) use a vectorisable polynomial (<= 1.02 ulp, NumPy's own is
2.5 ulp) because Numba's LLVM has no vector math library; float64 keeps libm.

Kernels are cached in memory per ``(program.signature, variant)`` and on disk
(``numba_support.build_kernel``).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np
from numba.core import types

from hermes_nb.codegen.numba_support import (
    KernelCache,
    build_kernel,
    codegen_hash,
    module_header,
    numba_array,
)
from hermes_nb.compiler.program import Program

__all__ = ["compile_elementwise", "launch", "plan", "render", "run_elementwise", "serial",
           "supports"]

Variant = tuple[str, tuple[str, ...]]

# output elements per task of the nd kernels: big enough to amortise the per-task
# index arithmetic, small enough to balance the threads
_CHUNK = 16384
# Numba's parfor pass costs more than the rest of a compile and grows faster than the
# program: longer programs compile serial (``nogil``), and ``launch`` runs flat ones
# over slices on a few threads.
PARALLEL_MAX_INSTRS = 64
_SLICE_MIN = 1 << 16  # elements per thread's slice at least


# ---- helpers emitted into the generated source, per dtype ------------------------------
_HELPERS: dict[str, str] = {
    # Cephes expf: Cody-Waite reduction, degree-6 polynomial with fma, 2**n in two
    # factors so that results down to the subnormals round once. <= 1.02 ulp.
    "exp": '''
@njit
def exp_{t}(x):
    xc = min(max(x, np.float32(-104.0)), np.float32(89.0))
    fx = floor_(fma_(xc, np.float32(1.44269504088896341), np.float32(0.5)))
    r = fma_(fx, np.float32(-0.693359375), xc)
    r = fma_(fx, np.float32(2.12194440e-4), r)
    p = np.float32(1.9875691500e-4)
    p = fma_(p, r, np.float32(1.3981999507e-3))
    p = fma_(p, r, np.float32(8.3334519073e-3))
    p = fma_(p, r, np.float32(4.1665795894e-2))
    p = fma_(p, r, np.float32(1.6666665459e-1))
    p = fma_(p, r, np.float32(5.0000001201e-1))
    p = fma_(p * r, r, r) + np.float32(1.0)
    h = floor_(fx * np.float32(0.5))
    y = p * pow2_f32_(h) * pow2_f32_(fx - h)
    y = np.float32(np.inf) if x > np.float32(88.72283935546875) else y
    y = np.float32(0.0) if x < np.float32(-103.972076416) else y
    return x if x != x else y
''',
    # npy_divmod: Python-style floor division and remainder, exactly as NumPy's loops
    "fdivmod": '''
@njit
def fdivmod_{t}(a, b):
    mod = {T}(np.fmod(a, b))
    div = {T}((a - mod) / b)
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod = {T}(mod + b)
            div = {T}(div - {T}(1))
    else:
        mod = {T}(np.copysign({T}(0), b))
    if div != 0:
        floordiv = floor_(div)
        if div - floordiv > {T}(0.5):
            floordiv = {T}(floordiv + {T}(1))
    else:
        floordiv = {T}(np.copysign({T}(0), a / b))
    return floordiv, mod
''',
    "floor_divide_f": '''
@njit
def floor_divide_{t}(a, b):
    if b == 0:
        return {T}(a / b)
    return fdivmod_{t}(a, b)[0]
''',
    "remainder_f": '''
@njit
def remainder_{t}(a, b):
    if b == 0:
        return {T}(np.fmod(a, b))
    return fdivmod_{t}(a, b)[1]
''',
    # NumPy: x // 0 == 0 and MIN // -1 wraps to MIN, where LLVM's sdiv would trap
    "floor_divide_i": '''
@njit
def floor_divide_{t}(a, b):
    if b == 0:
        return {T}(0)
    if b == -1:
        return {T}(0 - a)
    return {T}(a // b)
''',
    "remainder_i": '''
@njit
def remainder_{t}(a, b):
    if b == 0 or b == -1:
        return {T}(0)
    return {T}(a % b)
''',
    # square-and-multiply wraps like NumPy's loop; NumPy raises for b < 0 on arrays,
    # here it is the truncated 1 / a**-b
    "pow_i": '''
@njit
def pow_{t}(a, b):
    if b < 0:
        if a == 1:
            return {T}(1)
        if a == -1:
            return {T}(1) if b % 2 == 0 else {T}(-1)
        return {T}(0)
    result = {T}(1)
    base = a
    while b > 0:
        if b & 1:
            result = {T}(result * base)
        base = {T}(base * base)
        b >>= 1
    return result
''',
}
_HELPER_DEPS = {"floor_divide_f": ("fdivmod",), "remainder_f": ("fdivmod",)}


def _ctor(dtype: str) -> str:
    return "np.bool_" if dtype == "bool" else f"np.{dtype}"


def _literal(value: bool | int | float, dtype: str) -> str:
    if dtype == "bool":
        return f"np.bool_({bool(value)})"
    if dtype.startswith("int"):
        return f"np.{dtype}({int(value)})"
    return f"np.{dtype}(float.fromhex({float(value).hex()!r}))"  # exact, and nan/inf safe


class _Emitter:
    """Renders one instruction as a Python expression over value names."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.helpers: dict[str, str] = {}

    def helper(self, kind: str, dtype: str) -> str:
        for dep in _HELPER_DEPS.get(kind, ()):
            self.helper(dep, dtype)
        # floor_divide_f/_i etc. are float/int flavours of one helper name
        name = f"{kind[:-2] if kind.endswith(('_f', '_i')) else kind}_{dtype}"
        self.helpers.setdefault(name, _HELPERS[kind].format(t=dtype, T=_ctor(dtype)))
        return name

    def const_value(self, value: int) -> bool | int | float | None:
        k = value - self.program.n_inputs
        if 0 <= k < len(self.program.consts):
            return self.program.consts[k][0]
        return None

    def expr(self, op: str, args: Sequence[str], arg_ids: Sequence[int], dtype: str) -> str:
        in_dtypes = [self.program.dtype_of(a) for a in arg_ids]
        src = in_dtypes[0] if in_dtypes else dtype
        T = _ctor(dtype)
        a = args[0]
        b = args[1] if len(args) > 1 else ""
        is_float = src.startswith("float")
        is_int = src.startswith("int")
        is_bool = src == "bool"

        def need(cond: bool) -> None:
            if not cond:
                raise NotImplementedError(f"numba codegen: {op} on {','.join(in_dtypes)} -> {dtype}")

        if op == "astype":
            if dtype == "bool":
                return a if is_bool else f"({a} != 0)"
            return f"{T}({a})"
        if op == "where":
            cond = a if in_dtypes[0] == "bool" else f"({a} != 0)"
            return f"{T}({b} if {cond} else {args[2]})" if dtype != "bool" else \
                f"({b} if {cond} else {args[2]})"
        if op in _COMPARE:
            return f"({a} {_COMPARE[op]} {b})"
        if op in ("logical_and", "logical_or", "logical_not"):
            x, y = (v if d == "bool" else f"({v} != 0)"
                    for v, d in zip([*args, ""][:2], [*in_dtypes, "bool"][:2]))
            return {"logical_and": f"({x} & {y})", "logical_or": f"({x} | {y})",
                    "logical_not": f"(not {x})"}[op]
        if op in _PREDICATE_FORMS:
            return _PREDICATE_FORMS[op][0 if is_float else 1].format(a=a)
        if is_bool:
            need(op in _BOOL_FORMS)
            return _BOOL_FORMS[op].format(a=a, b=b)
        need(is_float or is_int)
        if op in _ROUNDING:
            return _ROUNDING[op].format(a=a) if is_float else a
        if is_float and op in (*_ARITH, "negative") and all(d == dtype for d in in_dtypes):
            # Numba keeps a float's type through + - * / and negation: no cast to type
            return f"({self._numeric(op, args, arg_ids, src, is_float)})"
        return f"{T}({self._numeric(op, args, arg_ids, src, is_float)})"

    def _numeric(self, op: str, args: Sequence[str], arg_ids: Sequence[int], dtype: str,
                 is_float: bool) -> str:
        a = args[0]
        b = args[1] if len(args) > 1 else ""
        if op in ("floor_divide", "remainder"):
            return f"{self.helper(op + ('_f' if is_float else '_i'), dtype)}({a}, {b})"
        if op == "pow":
            if self.const_value(arg_ids[1]) == 2:
                return f"{a} * {a}"  # what NumPy's power does for a scalar 2, and exact
            return f"pow_({a}, {b})" if is_float else f"{self.helper('pow_i', dtype)}({a}, {b})"
        form = _NUMERIC_FORMS.get(op) or (_FLOAT_FORMS if is_float else _INT_FORMS).get(op)
        if form is None:
            raise NotImplementedError(f"numba codegen: {op} on {dtype}")
        exp = ""
        if "{exp}" in form:  # float32 exp: the vectorisable polynomial helper
            exp = self.helper("exp", dtype) if dtype == "float32" else "math.exp"
        # NumPy: NaN in either operand of maximum/minimum wins; on ties the second (vmaxps)
        nan = f" | ({a} != {a})" if is_float else ""
        return form.format(a=a, b=b, T=_ctor(dtype), exp=exp, nan=nan)


# Forms over value names {a} {b}, the dtype's constructor {T}, a NaN test of {a} ({nan},
# empty for integers) and the exp function {exp}.
_NUMERIC_FORMS = {  # float and integer operands
    "add": "{a} + {b}",
    "subtract": "{a} - {b}",
    "multiply": "{a} * {b}",
    "negative": "-{a}",
    "abs": "abs({a})",
    "maximum": "{a} if ({a} > {b}){nan} else {b}",
    "minimum": "{a} if ({a} < {b}){nan} else {b}",
    "relu": "{a} if ({a} > {T}(0)){nan} else {T}(0)",
    "square": "{a} * {a}",
    # NumPy: sign(+-0) is +0, sign(NaN) is NaN
    "sign": "{T}(1) if {a} > 0 else ({T}(-1) if {a} < 0 else ({T}(0) if {a} == 0 else {a}))",
}
_FLOAT_FORMS = {
    "divide": "{a} / {b}",
    "hypot": "math.hypot({a}, {b})",
    "exp": "{exp}({a})",
    "sigmoid": "{T}(1) / ({T}(1) + {exp}(-{a}))",
    **{op: f"math.{op}({{a}})" for op in (
        "log", "sqrt", "sin", "cos", "tanh", "expm1", "log1p", "log2", "log10", "sinh", "cosh",
        "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh")},
    "atan2": "math.atan2({a}, {b})",
    "copysign": "math.copysign({a}, {b})",
    "reciprocal": "{T}(1) / {a}",
    # npy_logaddexp: equal operands (also both infinite) give x + log(2)
    "logaddexp": "({a} + {T}(0.6931471805599453) if {a} == {b} else "
                 "({a} + math.log1p(math.exp({b} - {a})) if {a} - {b} > 0 else "
                 "({b} + math.log1p(math.exp({a} - {b})) if {a} - {b} <= 0 else {a} - {b})))",
}
_INT_FORMS = {
    "bitwise_and": "{a} & {b}",
    "bitwise_or": "{a} | {b}",
    "bitwise_xor": "{a} ^ {b}",
    "bitwise_invert": "~{a}",
}
# predicates on floats; on integers and bool their value is constant
_PREDICATE_FORMS = {
    "isnan": ("math.isnan({a})", "False"),
    "isinf": ("math.isinf({a})", "False"),
    "isfinite": ("math.isfinite({a})", "True"),
}
_BOOL_FORMS = {  # NumPy's bool arithmetic: add/maximum are or, multiply/minimum are and
    "add": "({a} | {b})",
    "maximum": "({a} | {b})",
    "bitwise_or": "({a} | {b})",
    "multiply": "({a} & {b})",
    "minimum": "({a} & {b})",
    "bitwise_and": "({a} & {b})",
    "bitwise_xor": "({a} ^ {b})",
    "bitwise_invert": "(not {a})",
    **{op: "{a}" for op in ("abs", "floor", "ceil", "round", "trunc")},
}
_ROUNDING = {"floor": "floor_({a})", "ceil": "ceil_({a})", "round": "rint_({a})",
             "trunc": "trunc_({a})"}


_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_ARITH = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}


_CODEGEN_HASH = codegen_hash(__file__)


def render(program: Program, variant: Variant) -> str:
    """The Python source of one kernel variant (a module defining ``kernel``)."""
    kind, classes = variant
    n_in = program.n_inputs
    if len(classes) != n_in or kind not in ("flat", "nd"):
        raise ValueError(f"bad variant {variant!r} for {n_in} inputs")
    emitter = _Emitter(program)
    n_const = len(program.consts)

    # only what the outputs read
    live: set[int] = set(program.outputs)
    for k in range(len(program.instrs) - 1, -1, -1):
        if n_in + n_const + k in live:
            live.update(program.instrs[k].args)

    # loop level of each value: 0 per kernel, 1 per nd task, 2 per element
    level: dict[int, int] = {}
    names: dict[int, str] = {}
    for m, cls in enumerate(classes):
        level[m] = {"s": 0, "o": 1}.get(cls, 2)
        names[m] = f"v{m}"
    for j in range(n_const):
        level[n_in + j] = 0
        names[n_in + j] = f"C{j}"
    stages: list[list[str]] = [[], [], []]
    for k, instr in enumerate(program.instrs):
        value = n_in + n_const + k
        if value not in live:
            continue
        names[value] = f"v{value}"
        level[value] = max((level[a] for a in instr.args), default=0)
        code = emitter.expr(instr.op, [names[a] for a in instr.args], instr.args, instr.dtype)
        stages[level[value]].append(f"v{value} = {code}")

    outs = [f"out{k}" for k in range(len(program.outputs))]
    ins = [f"in{m}" for m in range(n_in)]
    lines = module_header("numba_cpu", _CODEGEN_HASH,
                          [f"program: {program.signature}", f"variant: {variant!r}"])
    lines += [f"C{j} = {_literal(v, d)}" for j, (v, d) in enumerate(program.consts)]
    lines += [src.rstrip() + "\n" for src in emitter.helpers.values()]
    parallel = "parallel=True, " if not serial(program) else ""
    lines.append(f'\n@njit({parallel}cache=True, nogil=True, error_model="numpy")')
    if kind == "flat":
        lines.append(f"def kernel({', '.join(outs + ins)}):")
        body = [f"    v{m} = in{m}[0]" for m, c in enumerate(classes) if c == "s"]
        body += [f"    {s}" for s in stages[0] + stages[1]]
        body.append(f"    for i in prange({outs[0]}.shape[0]):")
        body += [f"        v{m} = in{m}[i]" for m, c in enumerate(classes) if c == "f"]
        body += [f"        {s}" for s in stages[2]]
        body += [f"        {o}[i] = {names[v]}" for o, v in zip(outs, program.outputs)]
    else:
        lines[-1:-1] = ["U0 = np.uint64(0)", "U1 = np.uint64(1)", f"CHUNK = np.uint64({_CHUNK})"]
        lines.append(f"def kernel({', '.join([*outs, 'shape', 'strides', *ins])}):")
        # Index arithmetic is uint64 (shape and strides arrive as uint64): Numba then
        # skips its negative-index wraparound, which would block vectorisation.
        # Each task covers CHUNK consecutive output elements, row segment by row
        # segment, so short rows cost no per-row division.
        body = [
            "    nd = shape.shape[0]",
            "    inner = shape[nd - 1]",
            f"    total = np.uint64({outs[0]}.shape[0])",
            "    ntask = np.int64((total + CHUNK - U1) // CHUNK)",
        ]
        body += [f"    {s}" for s in stages[0]]
        body += [
            "    for t in prange(ntask):",
            "        pos = np.uint64(t) * CHUNK",
            "        stop = min(pos + CHUNK, total)",
            "        row = pos // inner",
            "        j = pos - row * inner",
            "        idx = np.empty(nd, np.uint64)",
        ]
        body += [f"        b{m} = U0" for m in range(n_in)]
        body += [
            "        rem = row",
            "        for d in range(nd - 2, -1, -1):",
            "            q = rem // shape[d]",
            "            idx[d] = rem - q * shape[d]",
            "            rem = q",
        ]
        body += [f"            b{m} += idx[d] * strides[{m}, d]" for m in range(n_in)]
        body += [
            "        while pos < stop:",
            "            m = min(inner - j, stop - pos)",
        ]
        body += [f"            v{m} = in{m}[b{m}]" for m, c in enumerate(classes) if c == "o"]
        body += [f"            {s}" for s in stages[1]]
        body.append("            for jj in range(m):")
        body += [f"                v{m} = in{m}[b{m} + j + jj]" for m, c in enumerate(classes) if c == "i"]
        body += [f"                {s}" for s in stages[2]]
        body += [f"                {o}[pos + jj] = {names[v]}" for o, v in zip(outs, program.outputs)]
        body += [
            "            pos += m",
            "            j = U0",
            "            d = nd - 2",  # next row: odometer over the outer dimensions
            "            while d >= 0:",
            "                idx[d] += U1",
        ]
        body += [f"                b{m} += strides[{m}, d]" for m in range(n_in)]
        body += [
            "                if idx[d] < shape[d]:",
            "                    break",
        ]
        body += [f"                b{m} -= strides[{m}, d] * shape[d]" for m in range(n_in)]
        body += [
            "                idx[d] = U0",
            "                d -= 1",
        ]
    return "\n".join(lines + body) + "\n"


def serial(program: Program) -> bool:
    """Whether ``program``'s kernels are compiled without Numba's ``parallel=True``."""
    return len(program.instrs) > PARALLEL_MAX_INSTRS


def supports(program: Program) -> bool:
    """Whether this generator renders every instruction of ``program``."""
    try:
        render(program, ("flat", ("f",) * program.n_inputs))
    except NotImplementedError:
        return False
    return True


_KERNELS = KernelCache()  # (program signature, variant) -> compiled kernel


def compile_elementwise(program: Program, variant: Variant) -> Any:
    """The compiled kernel of ``variant`` (see the module docstring for its arguments).

    Compiles eagerly for 1-D C-contiguous arrays (inputs typed read-only so that
    writable and read-only arrays share one compilation), or loads Numba's disk cache.
    """
    def build() -> Any:
        outs = [numba_array(program.dtype_of(v), False) for v in program.outputs]
        ins = [numba_array(d, True) for d in program.input_dtypes]
        extra = [types.Array(types.uint64, 1, "C", readonly=True),
                 types.Array(types.uint64, 2, "C", readonly=True)] if variant[0] == "nd" else []
        return build_kernel(render(program, variant), "", tuple(outs + extra + ins))

    return _KERNELS.get_or_build((program.signature, variant), build,
                                 f"fused_elementwise kernel ({len(program.instrs)} ops) for cpu:0")


def plan(out_shape: Sequence[int], in_shapes: Sequence[Sequence[int]]
         ) -> tuple[Variant, tuple[int, ...], np.ndarray]:
    """Variant, collapsed output shape and per-input element strides for these shapes."""
    nd = len(out_shape)
    strides: list[list[int]] = []
    for s in in_shapes:
        if len(s) > nd:
            raise ValueError(f"input of shape {tuple(s)} does not broadcast to {tuple(out_shape)}")
        padded = (1,) * (nd - len(s)) + tuple(s)
        st, acc = [0] * nd, 1
        for d in range(nd - 1, -1, -1):
            if padded[d] == out_shape[d]:
                st[d] = acc
            elif padded[d] != 1:
                raise ValueError(f"input of shape {tuple(s)} does not broadcast to {tuple(out_shape)}")
            acc *= padded[d]
        strides.append(st)
    # drop size-1 dimensions; merge neighbours that every input walks contiguously
    shape: list[int] = []
    cols: list[list[int]] = [[] for _ in strides]
    for d in range(nd):
        if out_shape[d] == 1:
            continue
        if shape and all(c[-1] == st[d] * out_shape[d] for c, st in zip(cols, strides)):
            shape[-1] *= out_shape[d]
            for c, st in zip(cols, strides):
                c[-1] = st[d]
            continue
        shape.append(out_shape[d])
        for c, st in zip(cols, strides):
            c.append(st[d])
    if len(shape) <= 1:
        classes = tuple("s" if c and c[0] == 0 else "f" for c in cols)
        return ("flat", classes), tuple(shape), np.zeros((len(cols), 0), np.int64)
    classes = tuple("i" if c[-1] == 1 else "o" for c in cols)
    return ("nd", classes), tuple(shape), np.array(cols, np.int64).reshape(len(cols), len(shape))


@functools.lru_cache(maxsize=1024)
def _dtypes(program: Program) -> tuple[str, tuple[np.dtype, ...], tuple[np.dtype, ...]]:
    # per-call work kept off the hot path: signature strings and dtype names are slow
    return (program.signature, tuple(np.dtype(d) for d in program.input_dtypes),
            tuple(np.dtype(program.dtype_of(v)) for v in program.outputs))


@functools.lru_cache(maxsize=4096)
def _plan_args(out_shape: tuple[int, ...], in_shapes: tuple[tuple[int, ...], ...]
               ) -> tuple[Variant, tuple[np.ndarray, ...]]:
    variant, shape, strides = plan(out_shape, in_shapes)
    if variant[0] == "flat":
        return variant, ()
    extra = (np.array(shape, np.uint64), strides.astype(np.uint64))
    for array in extra:
        array.flags.writeable = False  # shared between calls
    return variant, extra


def launch(program: Program, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> None:
    """Compute ``program`` into preallocated C-contiguous ``outputs`` (one per program output)."""
    signature, in_dtypes, out_dtypes = _dtypes(program)
    if len(inputs) != len(in_dtypes) or len(outputs) != len(out_dtypes):
        raise ValueError(f"program takes {len(in_dtypes)} inputs and {len(out_dtypes)} outputs, "
                         f"got {len(inputs)} and {len(outputs)}")
    out_shape = outputs[0].shape
    for out, dtype in zip(outputs, out_dtypes):
        if out.shape != out_shape or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("outputs must be writable, C-contiguous and of one shape")
        if out.dtype != dtype:
            raise TypeError(f"output dtype {out.dtype}, program computes {dtype}")
    for x, dtype in zip(inputs, in_dtypes):
        if x.dtype != dtype:
            raise TypeError(f"input dtype {x.dtype}, program expects {dtype}")
    if 0 in out_shape:
        return
    variant, extra = _plan_args(out_shape, tuple(x.shape for x in inputs))
    kernel = _KERNELS.get((signature, variant)) or compile_elementwise(program, variant)
    # numba's array types are C-contiguous and aligned; copy the rare other inputs
    flat_ins = [(np.ascontiguousarray(x) if x.flags.aligned else x.copy()).reshape(-1) for x in inputs]
    flat_outs = [o.reshape(-1) for o in outputs]
    if variant[0] == "flat" and serial(program):
        _sliced(kernel, variant[1], flat_outs, flat_ins)
        return
    kernel(*flat_outs, *extra, *flat_ins)


_POOL_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max(1, numba.get_num_threads() - 1),
                                       thread_name_prefix="hermes-elementwise")
        return _POOL


def _forget_pool() -> None:
    global _POOL
    _POOL = None  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_pool)


def _sliced(kernel: Any, classes: tuple[str, ...], outs: list[np.ndarray],
            ins: list[np.ndarray]) -> None:
    """A serial flat kernel over consecutive slices, on the caller and the pool's threads."""
    n = outs[0].shape[0]
    parts = max(1, min(numba.get_num_threads(), n // _SLICE_MIN))
    bounds = [n * k // parts for k in range(parts + 1)]

    def part(k: int) -> None:
        lo, hi = bounds[k], bounds[k + 1]
        kernel(*(o[lo:hi] for o in outs),
               *(x if c == "s" else x[lo:hi] for x, c in zip(ins, classes)))

    futures = [_pool().submit(part, k) for k in range(1, parts)]
    try:
        part(0)
    finally:
        for f in futures:
            f.result()


def run_elementwise(program: Program, inputs: Sequence[np.ndarray], out_shape: Sequence[int],
                    out_dtype: np.dtype | str) -> np.ndarray:
    """``program.outputs[0]`` over ``inputs`` broadcast to ``out_shape``, as a new array."""
    dtype = np.dtype(out_dtype)
    if dtype.name != program.dtype_of(program.outputs[0]):
        raise TypeError(f"out_dtype {dtype.name}, program computes {program.dtype_of(program.outputs[0])}")
    shape = tuple(out_shape)
    outputs = [np.empty(shape, dtype)] + [np.empty(shape, program.dtype_of(v)) for v in program.outputs[1:]]
    launch(program, inputs, outputs)
    return outputs[0]
