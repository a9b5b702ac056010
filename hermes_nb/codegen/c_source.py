"""C-family code generation for fused elementwise programs: OpenCL C and CUDA C++.

A :class:`~hermes_nb.ir.program.Program` becomes one inline function
``hfused(x0, x1, ...)`` returning the output value, plus the helpers it needs;
``c_kernels`` wraps it in whole kernels (OpenCL: ``kernels/opencl/fused_elementwise.cl``;
CUDA: a ``cupy.ElementwiseKernel`` whose body is ``y = hfused(x0, ...)``). The dialects share
the op table and helper bodies and differ in a few class attributes (type names,
function qualifier, float math suffix, literal spellings), in the spirit of tinygrad's
``cstyle.py``.

Semantics follow the NumPy interpreter ``ArrayOps._fused_elementwise``: each
instruction computes in its input dtype and converts to its own dtype; integers wrap;
integer ``//`` and ``%`` by 0 give 0; ``maximum``/``minimum``/``relu`` propagate NaN;
``round`` is half to even; bools are bytes holding 0 or 1. Floating-point contraction
(a*b+c -> fma) is switched off so results round like NumPy's separate ops.

With ``params``, the program's scalar parameters (``Program.params``) are the function's
last arguments ``c<j>``, which the kernel takes as scalar arguments; otherwise (the kernels
of reductions and stencils) every constant is a literal.

OpenCL additionally gets ``hfused_vec``: the same program on ``floatN``/``doubleN``
vectors (bools as ``-1/0`` masks, ``select`` for branches), for contiguous inputs of a
single float dtype. PoCL vectorises ``exp`` & co. only on vector types, so this is the
fast path on CPUs.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hermes_nb.codegen import c_complex
from hermes_nb.codegen.c_complex import COMPLEX_FORMS, real_of
from hermes_nb.ir import dtypes
from hermes_nb.ir.ops import COMPARISONS, FLOAT_RESULTS, PREDICATES
from hermes_nb.ir.program import Instr, Program

__all__ = [
    "CUDA",
    "C_FORMS",
    "OPENCL",
    "VECTOR_WIDTH",
    "CForms",
    "CStyleRenderer",
    "CUDARenderer",
    "OpenCLRenderer",
    "vector_dtype",
    "vectorizable",
]

VECTOR_WIDTH = 8  # default OpenCL vector width; devices pass their native one

# ---------------------------------------------------------------------------------------------
# Op forms: one row per op, a form for each operand kind. Placeholders: {a} {b} {c} operands,
# {T} operand C type, {U} its unsigned twin, {s} dtype name (helper suffix); ``@name(`` is a
# math function the dialect may rename (CUDA: expf for float32). Operands are always variable
# names or literals, so repeating one in a form costs nothing.
# Vector forms (OpenCL only): {V} value vector type, {F} its scalar type, {M} mask vector
# type. Bool values are masks (-1 true, 0 false), what vector comparisons return. ``SCALAR``:
# the float form, on vectors. No vector form of sin, cos or pow: PoCL's are wrong
# (sin(0.001f) = 0.008 on float16 vectors; pow misplaces infinities in double vectors), so
# programs using them run scalar, except x ** 2.0, which is rendered as x * x.

SCALAR = "<the float form>"

# ---------------------------------------------------------------------------------------------
# C type names: one row per dtype, (OpenCL C, CUDA C++). OpenCL's char is signed by the spec.
C_TYPE_NAMES: dict[str, tuple[str, str]] = {
    "bool": ("uchar", "unsigned char"),
    "int8": ("char", "signed char"),
    "int16": ("short", "short"),
    "int32": ("int", "int"),
    "int64": ("long", "long long"),
    "uint8": ("uchar", "unsigned char"),
    "uint16": ("ushort", "unsigned short"),
    "uint32": ("uint", "unsigned int"),
    "uint64": ("ulong", "unsigned long long"),
    "float32": ("float", "float"),
    "float64": ("double", "double"),
    # (re, im) as NumPy lays them out; CuPy's complex<T> is thrust::complex<T> (c_complex)
    "complex64": ("float2", "thrust::complex<float>"),
    "complex128": ("double2", "thrust::complex<double>"),
}
FLOAT_DTYPES = frozenset(d for d in C_TYPE_NAMES if np.dtype(d).kind == "f")
INT_DTYPES = frozenset(d for d in C_TYPE_NAMES if np.dtype(d).kind in "iu")


def unsigned_twin(dtype: str) -> str:
    """The unsigned dtype wrapping arithmetic on ``dtype`` goes through: as wide as
    ``dtype`` (floats: for their bits) and at least 32 bits, since C promotes narrower
    operands to ``int``, whose overflow is undefined (uint16 * uint16).

    >>> unsigned_twin("int8"), unsigned_twin("int64"), unsigned_twin("float32")
    ('uint32', 'uint64', 'uint32')
    """
    if dtype == "bool":
        return "uint8"
    if dtype.startswith("complex"):  # unused by the complex forms: the components' twin
        dtype = real_of(dtype)
    return f"uint{max(32, np.dtype(dtype).itemsize * 8)}"


def type_table(column: int) -> dict[str, tuple[str, str]]:
    """dtype -> (C type, its unsigned twin) in one dialect (0: OpenCL C, 1: CUDA C++).

    >>> type_table(0)["int8"], type_table(1)["uint64"]
    (('char', 'uint'), ('unsigned long long', 'unsigned long long'))
    """
    return {d: (names[column], C_TYPE_NAMES[unsigned_twin(d)][column])
            for d, names in C_TYPE_NAMES.items()}



@dataclass(frozen=True)
class CForms:
    """An op's C forms by operand kind; None where the op is not defined (the tensor layer
    never asks for it there)."""

    floats: str | None
    ints: str | None = None
    bools: str | None = None
    vector: str | None = None  # OpenCL, on float vectors
    mask: str | None = None  # OpenCL, on bool mask vectors


def _forms(floats: str | None, ints: str | None = None, bools: str | None = None, *,
           vec: str | None = None, mask: str | None = None) -> CForms:
    """Forms on float, integer and bool operands; bool ones are the integer ones unless given."""
    return CForms(floats, ints, ints if bools is None else bools, vec, mask)


def _any(form: str, *, vec: str | None = None, mask: str | None = None) -> CForms:
    """The same form for every operand dtype."""
    return CForms(form, form, form, vec, mask)


def _wrap(op: str, b: str = "{b}") -> str:
    return f"({{T}})(({{U}}){{a}} {op} ({{U}}){b})"  # integers wrap like NumPy: unsigned arithmetic


_NEGATE = "({T})(({U})0 - ({U}){a})"
# NOTE: PoCL's scalar exp/tanh return finite numbers for NaN; guard them (vector forms handle NaN)
C_FORMS: dict[str, CForms] = {
    "negative": _forms("(-{a})", _NEGATE, "{a}", vec=SCALAR),
    "abs": _forms("@fabs({a})", f"({{a}} < ({{T}})0 ? {_NEGATE} : {{a}})", "{a}", vec=SCALAR),
    "exp": _forms("(isnan({a}) ? {a} : @exp({a}))", vec="exp({a})"),
    "log": _forms("@log({a})", vec=SCALAR),
    "sqrt": _forms("@sqrt({a})", vec=SCALAR),
    "sin": _forms("@sin({a})"),
    "cos": _forms("@cos({a})"),
    "tanh": _forms("(isnan({a}) ? {a} : @tanh({a}))", vec="tanh({a})"),
    "sigmoid": _forms("(isnan({a}) ? {a} : ({T})1 / (({T})1 + @exp(-{a})))",
                      vec="(({F})1 / (({F})1 + exp(-{a})))"),
    "relu": _forms("(({a} > ({T})0 || isnan({a})) ? {a} : ({T})0)", "({a} > ({T})0 ? {a} : ({T})0)",
                   "{a}", vec="select(({V})(({F})0), {a}, ({a} > ({F})0) | isnan({a}))"),
    "floor": _forms("@floor({a})", "{a}", vec=SCALAR),
    "ceil": _forms("@ceil({a})", "{a}", vec=SCALAR),
    "round": _forms("@rint({a})", "{a}", vec=SCALAR),  # rint rounds half to even, like np.round
    "logical_not": _any("({a} == ({T})0)", vec="({a} == ({F})0)", mask="(~{a})"),
    "expm1": _forms("@expm1({a})", vec=SCALAR),
    "log1p": _forms("@log1p({a})", vec=SCALAR),
    "log2": _forms("@log2({a})", vec=SCALAR),
    "log10": _forms("@log10({a})", vec=SCALAR),
    "sinh": _forms("@sinh({a})"),
    "cosh": _forms("@cosh({a})"),
    "tan": _forms("@tan({a})"),
    "asin": _forms("@asin({a})"),
    "acos": _forms("@acos({a})"),
    "atan": _forms("@atan({a})"),
    "asinh": _forms("@asinh({a})"),
    "acosh": _forms("@acosh({a})"),
    "atanh": _forms("@atanh({a})"),
    "reciprocal": _forms("(({T})1 / {a})", vec=SCALAR),
    "square": _forms("({a} * {a})", _wrap("*", "{a}"), vec=SCALAR),
    # NumPy: sign(+-0) is +0, sign(NaN) is NaN
    "sign": _forms("({a} > ({T})0 ? ({T})1 : {a} < ({T})0 ? ({T})-1 : {a} == ({T})0 ? ({T})0 : {a})",
                   "(({a} > ({T})0) - ({a} < ({T})0))",
                   vec="select(select(({V})(({F})0), {a}, isnan({a})), select(({V})(({F})-1), "
                       "({V})(({F})1), {a} > ({F})0), ({a} > ({F})0) | ({a} < ({F})0))"),
    "trunc": _forms("@trunc({a})", "{a}", vec=SCALAR),
    # vector predicates return masks (-1/0), the vector form's bool values
    "isnan": _forms("isnan({a})", "0", vec=SCALAR),
    "isinf": _forms("isinf({a})", "0", vec=SCALAR),
    "isfinite": _forms("isfinite({a})", "1", vec=SCALAR),
    # on real operands (complex ones: c_complex.COMPLEX_FORMS)
    "real": _forms("{a}", "{a}", vec=SCALAR),
    "imag": _forms("({T})0", "({T})0"),
    "conj": _forms("{a}", "{a}", vec=SCALAR),
    "bitwise_invert": _forms(None, "(~{a})", "(!{a})"),
    "astype": _any("{a}"),
    # NumPy's bool arithmetic: + is or, * is and, max/min are or/and
    "add": _forms("({a} + {b})", _wrap("+"), "({a} | {b})", vec=SCALAR),
    "subtract": _forms("({a} - {b})", _wrap("-"), "({a} ^ {b})", vec=SCALAR),
    "multiply": _forms("({a} * {b})", _wrap("*"), "({a} & {b})", vec=SCALAR),
    "divide": _forms("({a} / {b})", vec=SCALAR),
    "floor_divide": _forms("h_floordiv_{s}({a}, {b})", "h_floordiv_{s}({a}, {b})", "({a} & {b})"),
    "remainder": _forms("h_rem_{s}({a}, {b})", "h_rem_{s}({a}, {b})", "({T})0"),
    "pow": _forms("@pow({a}, {b})", "h_pow_{s}({a}, {b})", "({a} | !{b})"),
    # NaN-propagating; on ties (0.0 vs -0.0) the second operand wins, as in NumPy on x86
    "maximum": _forms("(({a} > {b} || isnan({a})) ? {a} : {b})", "({a} >= {b} ? {a} : {b})",
                      "({a} | {b})", vec="select({b}, {a}, ({a} > {b}) | isnan({a}))"),
    "minimum": _forms("(({a} < {b} || isnan({a})) ? {a} : {b})", "({a} <= {b} ? {a} : {b})",
                      "({a} & {b})", vec="select({b}, {a}, ({a} < {b}) | isnan({a}))"),
    "hypot": _forms("@hypot({a}, {b})", vec=SCALAR),
    "atan2": _forms("@atan2({a}, {b})"),
    # npy_logaddexp: equal operands (also both infinite) give x + log(2)
    "logaddexp": _forms("({a} == {b} ? {a} + ({T})0.693147180559945309417 : ({a} - {b}) > ({T})0 ? "
                        "{a} + @log1p(@exp({b} - {a})) : ({a} - {b}) <= ({T})0 ? "
                        "{b} + @log1p(@exp({a} - {b})) : ({a} - {b}))"),
    "copysign": _forms("@copysign({a}, {b})", vec=SCALAR),
    "bitwise_and": _forms(None, "({a} & {b})"),
    "bitwise_or": _forms(None, "({a} | {b})"),
    "bitwise_xor": _forms(None, "({a} ^ {b})"),
    "equal": _any("({a} == {b})", vec=SCALAR, mask="({a} == {b})"),
    "not_equal": _any("({a} != {b})", vec=SCALAR, mask="({a} != {b})"),
    "less": _any("({a} < {b})", vec=SCALAR),
    "less_equal": _any("({a} <= {b})", vec=SCALAR),
    "greater": _any("({a} > {b})", vec=SCALAR),
    "greater_equal": _any("({a} >= {b})", vec=SCALAR),
    "logical_and": _any("({a} && {b})", mask="({a} & {b})"),
    "logical_or": _any("({a} || {b})", mask="({a} | {b})"),
    "where": _any("({a} ? {b} : {c})", vec="select({c}, {b}, {a})", mask="select({c}, {b}, {a})"),
}


def _column(field: str) -> dict[str, str]:
    return {op: getattr(f, field) for op, f in C_FORMS.items() if getattr(f, field) is not None}


def _vector(op: str, form: str) -> str:
    scalar = C_FORMS[op].floats
    if form != SCALAR or scalar is None:
        return form
    return scalar.replace("@", "").replace("{T}", "{F}")


# the table by operand dtype kind, for lookups
SCALAR_FORMS: dict[str, dict[str, str]] = {
    "f": _column("floats"), "i": _column("ints"), "u": _column("ints"), "b": _column("bools"),
    "c": COMPLEX_FORMS,
}
_COMPLEX = dtypes.COMPLEX_NAMES
_INEXACT = (*FLOAT_DTYPES, *_COMPLEX)
# ops whose complex form returns a real value (of the components' dtype)
_COMPLEX_TO_REAL = frozenset({"abs", "real", "imag"})
VECTOR_FLOAT_FORMS: dict[str, str] = {op: _vector(op, v) for op, v in _column("vector").items()}
VECTOR_MASK_FORMS: dict[str, str] = _column("mask")

# Helpers, rendered once per dtype that needs them ({Q} is the dialect's qualifier).
FLOAT_HELPERS = {
    # Python/NumPy floor division and modulo (npy_divmod): the sign follows the divisor.
    "floor_divide": """\
{Q} {T} h_floordiv_{s}({T} a, {T} b) {{
    if (b == ({T})0) return a / b;
    {T} mod = @fmod(a, b);
    {T} div = (a - mod) / b;
    if (mod != ({T})0 && ((b < ({T})0) != (mod < ({T})0))) div -= ({T})1;
    if (div == ({T})0) return @copysign(({T})0, a / b);
    {T} fl = @floor(div);
    if (div - fl > ({T})0.5) fl += ({T})1;
    return fl;
}}""",
    "remainder": """\
{Q} {T} h_rem_{s}({T} a, {T} b) {{
    {T} mod = @fmod(a, b);
    if (b == ({T})0) return mod;
    if (mod != ({T})0) {{
        if ((b < ({T})0) != (mod < ({T})0)) mod += b;
    }} else {{
        mod = @copysign(({T})0, b);
    }}
    return mod;
}}""",
}
INT_HELPERS = {
    # never divide by 0 or compute MIN / -1 (both trap on x86); NumPy gives 0 / wraps
    "floor_divide": """\
{Q} {T} h_floordiv_{s}({T} a, {T} b) {{
    if (b == ({T})0) return ({T})0;
    if (b == ({T})-1) return ({T})(({U})0 - ({U})a);
    {T} q = a / b;
    if ((a % b != ({T})0) && ((a < ({T})0) != (b < ({T})0))) q -= ({T})1;
    return q;
}}""",
    "remainder": """\
{Q} {T} h_rem_{s}({T} a, {T} b) {{
    if (b == ({T})0 || b == ({T})-1) return ({T})0;
    {T} r = a % b;
    if (r != ({T})0 && ((r < ({T})0) != (b < ({T})0))) r += b;
    return r;
}}""",
    "pow": """\
{Q} {T} h_pow_{s}({T} a, {T} b) {{
    if (b < ({T})0) {{  // NumPy raises; give the exact result where it is an integer
        if (a == ({T})1) return ({T})1;
        if (a == ({T})-1) return (b & ({T})1) ? ({T})-1 : ({T})1;
        return ({T})0;
    }}
    {U} r = 1, base = ({U})a;
    while (b) {{
        if (b & ({T})1) r *= base;
        base *= base;
        b >>= 1;
    }}
    return ({T})r;
}}""",
}

# unsigned integers: no sign to correct, and -1 is the largest value, not a special case
UINT_HELPERS = {
    "floor_divide": """\
{Q} {T} h_floordiv_{s}({T} a, {T} b) {{
    return b == ({T})0 ? ({T})0 : ({T})(a / b);
}}""",
    "remainder": """\
{Q} {T} h_rem_{s}({T} a, {T} b) {{
    return b == ({T})0 ? ({T})0 : ({T})(a % b);
}}""",
    "pow": INT_HELPERS["pow"],
}
HELPERS_BY_KIND = {"f": FLOAT_HELPERS, "i": INT_HELPERS, "u": UINT_HELPERS, "b": {}, "c": {}}


def _squares(program: Program, instr: Instr) -> bool:
    """``instr`` is a float ``x ** 2.0`` with a literal exponent."""
    if instr.op != "pow" or instr.dtype not in FLOAT_DTYPES:
        return False
    return instr.args[1] - program.n_inputs in program.baked


class CStyleRenderer:
    """Renders a :class:`Program` as C; subclasses set the dialect's attributes."""

    dialect: ClassVar[str]
    types: ClassVar[dict[str, tuple[str, str]]]  # dtype -> (C type, unsigned twin)
    qualifier: ClassVar[str]  # for helpers and hfused
    float32_suffix: ClassVar[str] = ""  # appended to @math names for float32
    int64_suffix: ClassVar[str]
    uint64_suffix: ClassVar[str]
    infinity: ClassVar[dict[str, str]]
    nan: ClassVar[dict[str, str]]

    # ---- names and literals ---------------------------------------------------------------

    def ctype(self, dtype: str) -> str:
        return self.types[dtype][0]

    def math(self, text: str, dtype: str) -> str:
        suffix = self.float32_suffix if dtype == "float32" else ""
        return re.sub(r"@(\w+)\(", lambda m: f"{m.group(1)}{suffix}(", text)

    def literal(self, value: bool | int | float | complex, dtype: str) -> str:
        if dtype in _COMPLEX:
            v = complex(value)
            part = real_of(dtype)
            return f"hc_mk_{dtype}({self.literal(v.real, part)}, {self.literal(v.imag, part)})"
        if dtype == "bool":
            return f"(({self.ctype(dtype)}){int(bool(value))})"
        if dtype in INT_DTYPES:
            v = int(value)
            wide = np.dtype(dtype).itemsize == 8
            suffix = (self.uint64_suffix if v > 2**63 - 1 else self.int64_suffix) if wide else ""
            # -MIN is not a literal; write MIN as (-MAX - 1)
            text = f"({v + 1}{suffix} - 1)" if v < -(2**31 - 1) else f"{v}{suffix}"
            return f"(({self.ctype(dtype)}){text})"
        v = float(value)
        if math.isnan(v):
            return self.nan[dtype]
        if math.isinf(v):
            return self.infinity[dtype] if v > 0 else f"(-{self.infinity[dtype]})"
        return f"(({self.ctype(dtype)}){v.hex()}{'f' if dtype == 'float32' else ''})"

    # ---- the program as a function ----------------------------------------------------------

    def expression(self, instr: Instr, args: list[str], in_dtype: str) -> str:
        """``instr`` on operand names ``args`` (of ``in_dtype``), before conversion."""
        op = instr.op
        if op in FLOAT_RESULTS and in_dtype not in _INEXACT:
            # NumPy computes these in float64 for integer/bool operands (the tensor layer
            # casts first, so this only guards hand-built programs)
            args = [f"((double){a})" for a in args]
            in_dtype = "float64"
        form = SCALAR_FORMS[np.dtype(in_dtype).kind][op]  # KeyError: no form for this dtype
        t, u = self.types[in_dtype]
        names = dict(zip("abc", args))
        return self.math(form.format(T=t, U=u, s=in_dtype, **names), in_dtype)

    @staticmethod
    def value_dtype(op: str, in_dtype: str) -> str:
        """The dtype of ``op``'s expression on ``in_dtype`` operands ("int" for a C truth
        value), for the conversion that follows it."""
        if in_dtype not in _COMPLEX or op == "astype":
            return in_dtype
        if op in _COMPLEX_TO_REAL:
            return real_of(in_dtype)
        return "int" if op in PREDICATES or op in COMPARISONS else in_dtype

    def convert(self, expr: str, dtype: str, src: str | None = None) -> str:
        """``expr`` (of dtype ``src``; None: a real one) as ``dtype``: complex to real takes
        the real part, to bool is nonzero in either part; real to complex has imaginary 0."""
        if src in _COMPLEX:
            if dtype == src:
                return expr
            if dtype in _COMPLEX:
                return (f"hc_mk_{dtype}(({self.ctype(real_of(dtype))})hc_re_{src}({expr}), "
                        f"({self.ctype(real_of(dtype))})hc_im_{src}({expr}))")
            if dtype == "bool":
                return f"({self.ctype(dtype)})hc_nz_{src}({expr})"
            return f"({self.ctype(dtype)})(hc_re_{src}({expr}))"
        if dtype in _COMPLEX:
            part = self.ctype(real_of(dtype))
            return f"hc_mk_{dtype}(({part})({expr}), ({part})0)"
        if dtype == "bool":
            return f"({self.ctype(dtype)})(({expr}) != 0)"  # bools are always 0/1
        return f"({self.ctype(dtype)})({expr})"

    def complex_helpers(self, text: str) -> list[str]:
        """The complex helpers ``text`` calls (with those they call), in dependency order."""
        out = []
        for name, dt in c_complex.helper_names(text):
            real = real_of(dt)
            fields = {"Q": self.qualifier, "C": self.ctype(dt), "R": self.ctype(real), "s": dt,
                      "NAN": self.nan[real], "INF": self.infinity[real]}
            if name in ("re", "im", "mk"):
                re_, im_, mk = c_complex.PRIMITIVES[self.dialect]
                body, ret, decl = {"re": (re_, "{R}", "{C} a"), "im": (im_, "{R}", "{C} a"),
                                   "mk": (mk, "{C}", "{R} x, {R} y")}[name]
                text_ = f"{{Q}} {ret} hc_{name}_{{s}}({decl}) {{{{ {body} }}}}"
            else:
                text_ = c_complex.HELPERS[name]
            out.append(self.math(text_.format(**fields), real))
        return out

    def helpers(self, program: Program) -> list[str]:
        needed: dict[tuple[str, str], None] = {}
        for instr in program.instrs:
            dt = program.dtype_of(instr.args[0]) if instr.args else instr.dtype
            needed[(instr.op, dt)] = None
        out = []
        for op, dt in needed:
            table = HELPERS_BY_KIND[np.dtype(dt).kind]
            if op in table:
                t, u = self.types[dt]
                out.append(self.math(table[op].format(Q=self.qualifier, T=t, U=u, s=dt), dt))
        return out

    def param_decls(self, program: Program) -> list[str]:
        """``<type> c<j>`` for each scalar parameter: hfused's and the kernel's last ones."""
        return [f"{self.ctype(program.consts[j][1])} c{j}" for j in program.params]

    def const_names(self, program: Program, params: bool) -> list[str]:
        """How the function names each constant: ``c<j>`` for a parameter (with
        ``params``), else its literal."""
        return [f"c{j}" if params and j not in program.baked else self.literal(v, d)
                for j, (v, d) in enumerate(program.consts)]

    def function(self, program: Program, name: str = "hfused", params: bool = False) -> str:
        """``name(x0, x1, ..., c<j>, ...)``: the program's output value from its input
        values (and, with ``params``, its scalar parameters)."""
        names = [f"x{k}" for k in range(program.n_inputs)]
        names += self.const_names(program, params)
        decls = [f"{self.ctype(d)} x{k}" for k, d in enumerate(program.input_dtypes)]
        params_text = ", ".join(decls + (self.param_decls(program) if params else []))
        lines = []
        for instr in program.instrs:
            value = len(names)
            in_dtype = program.dtype_of(instr.args[1 if instr.op == "where" else 0])
            if _squares(program, instr):  # x**2: exact and cheap (pow may be 1 ulp off)
                expr = f"({names[instr.args[0]]} * {names[instr.args[0]]})"
            else:
                expr = self.expression(instr, [names[a] for a in instr.args], in_dtype)
            ctype = self.ctype(instr.dtype)
            src = self.value_dtype(instr.op, in_dtype)
            lines.append(f"    const {ctype} v{value} = {self.convert(expr, instr.dtype, src)};")
            names.append(f"v{value}")
        out = program.outputs[0]
        result = names[out]
        out_dtype = program.dtype_of(out)
        if out < program.n_inputs + len(program.consts):
            result = self.convert(result, out_dtype, out_dtype)
        body = "\n".join([*lines, f"    return {result};"])
        return (f"{self.qualifier} {self.ctype(out_dtype)} {name}({params_text or 'void'}) "
                f"{{\n{body}\n}}")

    def functions(self, program: Program, params: bool = False) -> str:
        main = self.function(program, params=params)
        return "\n\n".join([*self.helpers(program), *self.complex_helpers(main), main])


class OpenCLRenderer(CStyleRenderer):
    dialect = "opencl"
    types: ClassVar[dict[str, tuple[str, str]]] = type_table(0)
    qualifier = "inline"
    int64_suffix = "L"
    uint64_suffix = "UL"
    infinity: ClassVar[dict[str, str]] = {"float32": "INFINITY", "float64": "((double)INFINITY)"}
    nan: ClassVar[dict[str, str]] = {"float32": "NAN", "float64": "((double)NAN)"}

    # ---- vector form -----------------------------------------------------------------------

    @staticmethod
    def vector_float(program: Program) -> str | None:
        """The one float dtype of a vectorisable program, else None."""
        dtypes = {program.dtype_of(v) for v in range(program.n_inputs + len(program.consts))}
        dtypes |= {i.dtype for i in program.instrs}
        floats = dtypes - {"bool"}
        if len(floats) != 1 or not floats <= FLOAT_DTYPES:
            return None
        (f,) = floats
        for instr in program.instrs:
            in_dtype = program.dtype_of(instr.args[1 if instr.op == "where" else 0])
            if instr.op == "astype":
                continue  # bool <-> float and float -> same float are all expressible
            if instr.op == "where":
                if program.dtype_of(instr.args[0]) != "bool":
                    return None
                continue
            table = VECTOR_FLOAT_FORMS if in_dtype == f else VECTOR_MASK_FORMS
            if instr.op not in table and not _squares(program, instr):
                return None
            # bool-typed results of float ops other than comparisons would need 0/1 arithmetic
            if in_dtype == f and instr.dtype == "bool" and instr.op not in COMPARISONS \
                    and instr.op not in PREDICATES and instr.op != "logical_not":
                return None
        return f

    def vector_function(self, program: Program, width: int, name: str = "hfused_vec",
                        params: bool = False) -> str:
        """``name`` on ``width``-wide vectors; bool inputs and the bool output are uchar
        vectors of 0/1 (as stored), bool values inside are masks; scalar parameters (with
        ``params``) are scalars, broadcast here."""
        f = self.vector_float(program)
        assert f is not None, "program is not vectorisable"
        fs = self.ctype(f)
        mask = ("int" if f == "float32" else "long") + str(width)
        vec = f"{fs}{width}"
        byte = f"uchar{width}"

        def vtype(dtype: str) -> str:
            return mask if dtype == "bool" else vec

        decls, lines = [], []
        names: list[str] = []
        for k, d in enumerate(program.input_dtypes):
            if d == "bool":  # stored 0/1 bytes -> mask
                decls.append(f"{byte} b{k}")
                lines.append(f"    const {mask} x{k} = (convert_{mask}(b{k}) != ({mask})0);")
            else:
                decls.append(f"{vec} x{k}")
            names.append(f"x{k}")
        for j, (v, d) in enumerate(program.consts):
            if params and j not in program.baked:  # 0/1 byte -> mask, scalar -> vector
                names.append(f"(-(({mask})(c{j})))" if d == "bool" else f"(({vec})(c{j}))")
            else:
                names.append(f"(({mask})({-int(bool(v))}))" if d == "bool"
                             else f"(({vec}){self.literal(v, d)})")
        if params:
            decls.extend(self.param_decls(program))
        for instr in program.instrs:
            value = len(names)
            args = [names[a] for a in instr.args]
            in_dtype = program.dtype_of(instr.args[1 if instr.op == "where" else 0])
            if instr.op == "astype":
                if in_dtype == instr.dtype:
                    expr = args[0]
                elif instr.dtype == "bool":
                    expr = f"({args[0]} != ({fs})0)"
                else:
                    expr = f"select(({vec})(({fs})0), ({vec})(({fs})1), {args[0]})"
            elif _squares(program, instr):
                expr = f"({args[0]} * {args[0]})"
            else:
                table = VECTOR_FLOAT_FORMS if in_dtype == f else VECTOR_MASK_FORMS
                expr = table[instr.op].format(V=vec, F=fs, M=mask, **dict(zip("abc", args)))
            lines.append(f"    const {vtype(instr.dtype)} v{value} = {expr};")
            names.append(f"v{value}")
        out_dtype = program.dtype_of(program.outputs[0])
        result = names[program.outputs[0]]
        if out_dtype == "bool":
            result = f"convert_{byte}({result} & ({mask})1)"
        lines.append(f"    return {result};")
        ret = byte if out_dtype == "bool" else vec
        body = "\n".join(lines)
        return f"inline {ret} {name}({', '.join(decls) or 'void'}) {{\n{body}\n}}"


class CUDARenderer(CStyleRenderer):
    dialect = "cuda"
    types: ClassVar[dict[str, tuple[str, str]]] = type_table(1)
    qualifier = "__device__ __forceinline__"
    float32_suffix = "f"  # expf, not exp: no silent float -> double promotion
    int64_suffix = "LL"
    uint64_suffix = "ULL"
    infinity: ClassVar[dict[str, str]] = {"float32": "__int_as_float(0x7f800000)",
                "float64": "__longlong_as_double(0x7ff0000000000000LL)"}
    nan: ClassVar[dict[str, str]] = {"float32": "__int_as_float(0x7fc00000)",
           "float64": "__longlong_as_double(0x7ff8000000000000LL)"}


OPENCL = OpenCLRenderer()
CUDA = CUDARenderer()

# ---------------------------------------------------------------------------------------------
# The vector form's reach


@functools.lru_cache(maxsize=1024)
def vector_dtype(program: Program) -> str | None:
    """The float dtype the OpenCL vector form computes ``program`` in; None if it cannot."""
    return OpenCLRenderer.vector_float(program)


def vectorizable(program: Program) -> bool:
    """Whether the OpenCL vector form (``hfused_vec``) can express ``program``."""
    return vector_dtype(program) is not None
