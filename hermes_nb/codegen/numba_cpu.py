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
    Call: ``kernel(out0, ..., in0, ..., C<j>, ...)``, arrays 1-D, then the program's scalar
    parameters (``program.arguments()``).
``("nd", classes)``: after dropping size-1 dimensions and merging dimensions that
    every operand walks contiguously, there are ``k >= 2`` dimensions; each input
    is ``"i"`` (varies along the innermost one, contiguously) or ``"o"``
    (constant along it). ``prange`` over tasks of consecutive output elements,
    walked row segment by row segment; values that depend on ``"o"`` inputs only
    are computed once per segment.
    Call: ``kernel(out0, ..., shape, strides, in0, ..., C<j>, ...)`` with ``shape``
    uint64[k] and ``strides`` uint64[n_inputs, k] in elements (0 along broadcast
    dimensions), then the scalar parameters.

Scalar constants are kernel parameters typed with their dtype (``Program.params``), so a
changed value runs the compiled kernel; only ``Program.baked`` ones are module globals.

Semantics follow NumPy (the ``array_backend`` interpreter): IEEE NaN/Inf, no
fast-math flags; integer ``//`` and ``%`` by 0 give 0; integers wrap; ``round``
is half to even; ``maximum``/``minimum``/``relu`` propagate NaN. float32 ``exp``,
``log``, ``log2``, ``log10``, ``tanh`` (and ``sigmoid``) use vectorisable polynomials
(``numba_math``: within NumPy's own float32 error) because Numba's LLVM has no vector
math library; float64 keeps libm.

Kernels are cached in memory per ``(program.signature, variant)`` and on disk
(``numba_support.build_kernel``).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba.core import types

from hermes_nb.codegen import numba_complex, numba_math
from hermes_nb.codegen.numba_math import LIBM, MATH_HELPER_DEPS, MATH_HELPERS
from hermes_nb.codegen.numba_support import (
    KernelCache,
    build_kernel,
    codegen_hash,
    module_header,
    numba_array,
)
from hermes_nb.ir.program import Program

__all__ = ["NUMBA_FORMS", "compile_elementwise", "launch", "plan", "render", "run_elementwise",
           "serial", "supports"]

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
    **MATH_HELPERS,
    **numba_complex.HELPERS,
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
_HELPER_DEPS = {**MATH_HELPER_DEPS, **numba_complex.HELPER_DEPS, "floor_divide_f": ("fdivmod",),
                "remainder_f": ("fdivmod",)}


@dataclass(frozen=True)
class NumbaForms:
    """An op's Python forms by operand kind; None where Numba code has none (the program
    then runs in the interpreter)."""

    floats: str | None
    ints: str | None = None
    bools: str | None = None


def _any(form: str) -> NumbaForms:
    """The same form for every operand dtype."""
    return NumbaForms(form, form, form)


# Forms over value names {a} {b} {c}, the same as bool ({ab} {bb}: ``(x != 0)`` unless bool),
# the output dtype's constructor {T}, the operand dtype's {S}, {Tk}: {T} unless every operand
# already has the output dtype (Numba keeps a float's type through + - * / and negation, so no
# cast is needed), {cast}: {a} converted to the output dtype, and {helper[kind]}: the name of a
# generated helper (emitted once per dtype). Integer and float forms convert to the output dtype,
# bool forms (NumPy's bool arithmetic: add/maximum are or, multiply/minimum are and) need not.
_SIGN = "{T}({S}(1) if {a} > 0 else ({S}(-1) if {a} < 0 else ({S}(0) if {a} == 0 else {a})))"
NUMBA_FORMS: dict[str, NumbaForms] = {
    "negative": NumbaForms("{Tk}(-{a})", "{T}(-{a})"),
    "abs": NumbaForms("{T}(abs({a}))", "{T}(abs({a}))", "{a}"),
    "exp": NumbaForms("{T}({helper[exp]}({a}))"),
    "log": NumbaForms("{T}({helper[log]}({a}))"),
    "sqrt": NumbaForms("{T}(math.sqrt({a}))"),
    "sin": NumbaForms("{T}(math.sin({a}))"),
    "cos": NumbaForms("{T}(math.cos({a}))"),
    "tanh": NumbaForms("{T}({helper[tanh]}({a}))"),
    "sigmoid": NumbaForms("{T}({S}(1) / ({S}(1) + {helper[exp]}(-{a})))"),
    # NumPy: NaN in either operand of maximum/minimum wins; on ties the second (vmaxps)
    "relu": NumbaForms("{T}({a} if ({a} > {S}(0)) | ({a} != {a}) else {S}(0))",
                       "{T}({a} if ({a} > {S}(0)) else {S}(0))"),
    "floor": NumbaForms("floor_({a})", "{a}", "{a}"),
    "ceil": NumbaForms("ceil_({a})", "{a}", "{a}"),
    "round": NumbaForms("rint_({a})", "{a}", "{a}"),
    "logical_not": _any("(not {ab})"),
    "expm1": NumbaForms("{T}(math.expm1({a}))"),
    "log1p": NumbaForms("{T}(math.log1p({a}))"),
    "log2": NumbaForms("{T}({helper[log2]}({a}))"),
    "log10": NumbaForms("{T}({helper[log10]}({a}))"),
    "sinh": NumbaForms("{T}(math.sinh({a}))"),
    "cosh": NumbaForms("{T}(math.cosh({a}))"),
    "tan": NumbaForms("{T}(math.tan({a}))"),
    "asin": NumbaForms("{T}(math.asin({a}))"),
    "acos": NumbaForms("{T}(math.acos({a}))"),
    "atan": NumbaForms("{T}(math.atan({a}))"),
    "asinh": NumbaForms("{T}(math.asinh({a}))"),
    "acosh": NumbaForms("{T}(math.acosh({a}))"),
    "atanh": NumbaForms("{T}(math.atanh({a}))"),
    "reciprocal": NumbaForms("{T}({S}(1) / {a})"),
    "square": NumbaForms("{T}({a} * {a})", "{T}({a} * {a})"),
    # NumPy: sign(+-0) is +0, sign(NaN) is NaN
    "sign": NumbaForms(_SIGN, _SIGN),
    "trunc": NumbaForms("trunc_({a})", "{a}", "{a}"),
    # on integers and bool the predicates are constant
    "isnan": NumbaForms("math.isnan({a})", "False", "False"),
    "isinf": NumbaForms("math.isinf({a})", "False", "False"),
    "isfinite": NumbaForms("math.isfinite({a})", "True", "True"),
    # on real operands; complex programs run in the NumPy interpreter (no complex column)
    "real": NumbaForms("{a}", "{a}", "{a}"),
    "imag": NumbaForms("{T}(0)", "{T}(0)", "False"),
    "conj": NumbaForms("{a}", "{a}"),
    "bitwise_invert": NumbaForms(None, "{T}(~{a})", "(not {a})"),
    "astype": _any("{cast}"),
    "add": NumbaForms("{Tk}({a} + {b})", "{T}({a} + {b})", "({a} | {b})"),
    "subtract": NumbaForms("{Tk}({a} - {b})", "{T}({a} - {b})"),
    "multiply": NumbaForms("{Tk}({a} * {b})", "{T}({a} * {b})", "({a} & {b})"),
    "divide": NumbaForms("{Tk}({a} / {b})"),
    "floor_divide": NumbaForms("{T}({helper[floor_divide_f]}({a}, {b}))",
                               "{T}({helper[floor_divide_i]}({a}, {b}))"),
    "remainder": NumbaForms("{T}({helper[remainder_f]}({a}, {b}))",
                            "{T}({helper[remainder_i]}({a}, {b}))"),
    "pow": NumbaForms("{T}(pow_({a}, {b}))", "{T}({helper[pow_i]}({a}, {b}))"),
    "maximum": NumbaForms("{T}({a} if ({a} > {b}) | ({a} != {a}) else {b})",
                          "{T}({a} if ({a} > {b}) else {b})", "({a} | {b})"),
    "minimum": NumbaForms("{T}({a} if ({a} < {b}) | ({a} != {a}) else {b})",
                          "{T}({a} if ({a} < {b}) else {b})", "({a} & {b})"),
    "hypot": NumbaForms("{T}(math.hypot({a}, {b}))"),
    "atan2": NumbaForms("{T}(math.atan2({a}, {b}))"),
    # npy_logaddexp: equal operands (also both infinite) give x + log(2)
    "logaddexp": NumbaForms("{T}(({a} + {S}(0.6931471805599453) if {a} == {b} else "
                            "({a} + math.log1p(math.exp({b} - {a})) if {a} - {b} > 0 else "
                            "({b} + math.log1p(math.exp({a} - {b})) if {a} - {b} <= 0 else "
                            "{a} - {b}))))"),
    "copysign": NumbaForms("{T}(math.copysign({a}, {b}))"),
    "bitwise_and": NumbaForms(None, "{T}({a} & {b})", "({a} & {b})"),
    "bitwise_or": NumbaForms(None, "{T}({a} | {b})", "({a} | {b})"),
    "bitwise_xor": NumbaForms(None, "{T}({a} ^ {b})", "({a} ^ {b})"),
    "equal": _any("({a} == {b})"),
    "not_equal": _any("({a} != {b})"),
    "less": _any("({a} < {b})"),
    "less_equal": _any("({a} <= {b})"),
    "greater": _any("({a} > {b})"),
    "greater_equal": _any("({a} >= {b})"),
    "logical_and": _any("({ab} & {bb})"),
    "logical_or": _any("({ab} | {bb})"),
    "where": _any("{Tk}({b} if {ab} else {c})"),
}


def _ctor(dtype: str) -> str:
    return "np.bool_" if dtype == "bool" else f"np.{dtype}"


def _literal(value: bool | int | float | complex, dtype: str) -> str:
    if dtype.startswith("complex"):
        v = complex(value)
        return f"np.{dtype}(complex({_literal(v.real, 'float64')}, {_literal(v.imag, 'float64')}))"
    if dtype == "bool":
        return f"np.bool_({bool(value)})"
    if np.dtype(dtype).kind in "iu":
        return f"np.{dtype}({int(value)})"
    return f"np.{dtype}(float.fromhex({float(value).hex()!r}))"  # exact, and nan/inf safe


def _as_bool(name: str, dtype: str) -> str:
    return name if dtype == "bool" else f"({name} != 0)"


def _column(dtype: str) -> str | None:
    """The NumbaForms field for operands of ``dtype``."""
    return _COLUMNS.get(np.dtype(dtype).kind)


# unsigned integers share the signed forms: Numba's integer ops and the wrapping casts to
# the output dtype ({T}) give NumPy's results for both; complex: numba_complex.FORMS
_COLUMNS = {"b": "bools", "i": "ints", "u": "ints", "f": "floats", "c": "complex"}


class _HelperNames:
    """``{helper[kind]}`` in a form: the helper's name, emitted on first use."""

    def __init__(self, emitter: _Emitter, dtype: str) -> None:
        self.emitter = emitter
        self.dtype = dtype

    def __getitem__(self, kind: str) -> str:
        if kind in LIBM and self.dtype != "float32":
            return LIBM[kind]
        return self.emitter.helper(kind, self.dtype)


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
        """A baked constant's value (a parameter's is not known when the kernel compiles)."""
        k = value - self.program.n_inputs
        if k in self.program.baked:
            return self.program.consts[k][0]
        return None

    def expr(self, op: str, args: Sequence[str], arg_ids: Sequence[int], dtype: str) -> str:
        in_dtypes = [self.program.dtype_of(a) for a in arg_ids]
        src = in_dtypes[0] if in_dtypes else dtype
        form = self._form(op, arg_ids, src)
        if form is None:
            raise NotImplementedError(f"numba codegen: {op} on {','.join(in_dtypes)} -> {dtype}")
        a, b, c = [*args, "", "", ""][:3]
        T = _ctor(dtype)
        ab = _as_bool(a, src)
        return form.format(
            a=a, b=b, c=c, ab=ab, bb=_as_bool(b, in_dtypes[1]) if len(args) > 1 else "",
            T=T, S=_ctor(src), Tk="" if all(d == dtype for d in in_dtypes) else T,
            cast=numba_complex.cast(a, src, dtype, T) if "complex" in src + dtype else
            ab if dtype == "bool" else f"{T}({a})", helper=_HelperNames(self, src))

    def _form(self, op: str, arg_ids: Sequence[int], src: str) -> str | None:
        if op == "pow" and self.const_value(arg_ids[1]) == 2:
            op = "square"  # what NumPy's power does for a scalar 2, and exact
        forms, column = NUMBA_FORMS.get(op), _column(src)
        if column == "complex":
            return numba_complex.FORMS.get(op)
        return getattr(forms, column) if forms is not None and column is not None else None


_CODEGEN_HASH = codegen_hash(__file__, numba_math.__file__, numba_complex.__file__)


def render(program: Program, variant: Variant) -> str:
    """The Python source of one kernel variant (a module defining ``kernel``)."""
    kind, classes = variant
    if len(classes) != program.n_inputs or kind not in ("flat", "nd"):
        raise ValueError(f"bad variant {variant!r} for {program.n_inputs} inputs")
    # the template: a scalar parameter's value cannot reach the source
    return _KernelSource(program.template, variant).text()


class _KernelSource:
    """One kernel variant's module, written phase by phase: the values each loop level
    computes, the module header, then the flat or nd loop nest."""

    def __init__(self, program: Program, variant: Variant) -> None:
        self.program = program
        self.kind, self.classes = variant
        self.emitter = _Emitter(program)
        self.names: dict[int, str] = {}
        self.stages = self._stages()  # before the header: it emits the helpers they call
        self.outs = [f"out{k}" for k in range(len(program.outputs))]
        self.ins = [f"in{m}" for m in range(program.n_inputs)]
        self.params = [f"C{j}" for j in program.params]

    def text(self) -> str:
        body = self._flat() if self.kind == "flat" else self._nd()
        return "\n".join(self._header() + body) + "\n"

    def _live(self) -> set[int]:
        """The values the outputs read."""
        program = self.program
        first = program.n_inputs + len(program.consts)
        live: set[int] = set(program.outputs)
        for k in range(len(program.instrs) - 1, -1, -1):
            if first + k in live:
                live.update(program.instrs[k].args)
        return live

    def _stages(self) -> list[list[str]]:
        """Assignments by loop level: 0 per kernel, 1 per nd task (row segment), 2 per element."""
        program, n_in = self.program, self.program.n_inputs
        level: dict[int, int] = {}
        for m, cls in enumerate(self.classes):
            level[m] = {"s": 0, "o": 1}.get(cls, 2)
            self.names[m] = f"v{m}"
        for j in range(len(program.consts)):
            level[n_in + j] = 0
            self.names[n_in + j] = f"C{j}"
        live = self._live()
        stages: list[list[str]] = [[], [], []]
        for value, instr in enumerate(program.instrs, start=n_in + len(program.consts)):
            if value not in live:
                continue
            self.names[value] = f"v{value}"
            level[value] = max((level[a] for a in instr.args), default=0)
            code = self.emitter.expr(instr.op, [self.names[a] for a in instr.args], instr.args,
                                     instr.dtype)
            stages[level[value]].append(f"v{value} = {code}")
        return stages

    def _header(self) -> list[str]:
        program = self.program
        lines = module_header("numba_cpu", _CODEGEN_HASH,
                              [f"program: {program.signature}",
                               f"variant: {(self.kind, self.classes)!r}"])
        lines += [f"C{j} = {_literal(*program.consts[j])}" for j in sorted(program.baked)]
        lines += [src.rstrip() + "\n" for src in self.emitter.helpers.values()]
        if self.kind == "nd":
            lines += ["U0 = np.uint64(0)", "U1 = np.uint64(1)", f"CHUNK = np.uint64({_CHUNK})"]
        parallel = "parallel=True, " if not serial(program) else ""
        lines.append(f'\n@njit({parallel}cache=True, nogil=True, error_model="numpy")')
        return lines

    def _reads(self, cls: str, indent: str, index: str) -> list[str]:
        return [f"{indent}v{m} = in{m}[{index.format(m=m)}]"
                for m, c in enumerate(self.classes) if c == cls]

    def _stores(self, indent: str, index: str) -> list[str]:
        return [f"{indent}{o}[{index}] = {self.names[v]}"
                for o, v in zip(self.outs, self.program.outputs)]

    def _flat(self) -> list[str]:
        body = [f"def kernel({', '.join(self.outs + self.ins + self.params)}):"]
        body += self._reads("s", "    ", "0")
        body += [f"    {s}" for s in self.stages[0] + self.stages[1]]
        body.append(f"    for i in prange({self.outs[0]}.shape[0]):")
        body += self._reads("f", "        ", "i")
        body += [f"        {s}" for s in self.stages[2]]
        return body + self._stores("        ", "i")

    # Index arithmetic is uint64 (shape and strides arrive as uint64): Numba then skips its
    # negative-index wraparound, which would block vectorisation. Each task covers CHUNK
    # consecutive output elements, row segment by row segment, so short rows cost no
    # per-row division.
    def _nd(self) -> list[str]:
        body = [
            f"def kernel({', '.join([*self.outs, 'shape', 'strides', *self.ins, *self.params])}):",
            "    nd = shape.shape[0]",
            "    inner = shape[nd - 1]",
            f"    total = np.uint64({self.outs[0]}.shape[0])",
            "    ntask = np.int64((total + CHUNK - U1) // CHUNK)",
        ]
        body += [f"    {s}" for s in self.stages[0]]
        return body + self._nd_task_start() + self._nd_segments()

    def _nd_task_start(self) -> list[str]:
        """A task's first element: its row, column and each input's offset there."""
        n_in = self.program.n_inputs
        body = [
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
        return body + [f"            b{m} += idx[d] * strides[{m}, d]" for m in range(n_in)]

    def _nd_segments(self) -> list[str]:
        """The task's row segments, then the step to the next row."""
        n_in = self.program.n_inputs
        body = [
            "        while pos < stop:",
            "            m = min(inner - j, stop - pos)",
        ]
        body += self._reads("o", "            ", "b{m}")
        body += [f"            {s}" for s in self.stages[1]]
        body.append("            for jj in range(m):")
        body += self._reads("i", "                ", "b{m} + j + jj")
        body += [f"                {s}" for s in self.stages[2]]
        body += self._stores("                ", "pos + jj")
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
        return [*body, "                idx[d] = U0", "                d -= 1"]


def serial(program: Program) -> bool:
    """Whether ``program``'s kernels are compiled without Numba's ``parallel=True``."""
    return len(program.instrs) > PARALLEL_MAX_INSTRS


@functools.lru_cache(maxsize=1024)  # asked at each compute; rendering costs ~0.1 ms
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
        params = [numba.from_dtype(np.dtype(program.consts[j][1])) for j in program.params]
        return build_kernel(render(program, variant), "", tuple(outs + extra + ins + params))

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
def _dtypes(program: Program) -> tuple[str, tuple[np.dtype, ...], tuple[np.dtype, ...],
                                       tuple[np.generic, ...]]:
    # per-call work kept off the hot path: signature strings and dtype names are slow
    return (program.signature, tuple(np.dtype(d) for d in program.input_dtypes),
            tuple(np.dtype(program.dtype_of(v)) for v in program.outputs), program.arguments())


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
    signature, in_dtypes, out_dtypes, params = _dtypes(program)
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
        _sliced(kernel, variant[1], flat_outs, flat_ins, params)
        return
    kernel(*flat_outs, *extra, *flat_ins, *params)


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
            ins: list[np.ndarray], params: Sequence[np.generic]) -> None:
    """A serial flat kernel over consecutive slices, on the caller and the pool's threads."""
    n = outs[0].shape[0]
    parts = max(1, min(numba.get_num_threads(), n // _SLICE_MIN))
    bounds = [n * k // parts for k in range(parts + 1)]

    def part(k: int) -> None:
        lo, hi = bounds[k], bounds[k + 1]
        kernel(*(o[lo:hi] for o in outs),
               *(x if c == "s" else x[lo:hi] for x, c in zip(ins, classes)), *params)

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
