"""The Numba forms of the complex ops (``numba_cpu``'s complex column).

Numba has complex64/complex128 natively; where its arithmetic differs from NumPy's loops
(division: Numba raises on a zero divisor, NumPy divides by Smith's algorithm and gives
inf/nan), a generated helper does what NumPy does, with the formulas of
``codegen.c_complex``.

Placeholders as in ``numba_cpu.NUMBA_FORMS``: ``{a}`` ``{b}`` operands, ``{T}`` the output
dtype's constructor, ``{Tk}`` it unless the operands already have it, ``{helper[name]}``
a helper of ``HELPERS``.
"""

from __future__ import annotations

__all__ = ["FORMS", "HELPERS", "HELPER_DEPS", "cast"]

FORMS: dict[str, str] = {
    "negative": "{Tk}(-{a})",
    "conj": "{a}.conjugate()",
    "real": "{T}({a}.real)",
    "imag": "{T}({a}.imag)",
    "abs": "{T}(math.hypot({a}.real, {a}.imag))",
    "square": "{Tk}({a} * {a})",
    "add": "{Tk}({a} + {b})",
    "subtract": "{Tk}({a} - {b})",
    "multiply": "{Tk}({a} * {b})",  # the naive formula, as NumPy's loop
    "divide": "{T}({helper[cdiv]}({a}, {b}))",
    "reciprocal": "{T}({helper[cdiv]}({T}(1), {a}))",
    "equal": "({a} == {b})",
    "not_equal": "({a} != {b})",
    "isnan": "(math.isnan({a}.real) or math.isnan({a}.imag))",
    "isinf": "(math.isinf({a}.real) or math.isinf({a}.imag))",
    "isfinite": "(math.isfinite({a}.real) and math.isfinite({a}.imag))",
    "exp": "{T}(cmath.exp({a}))",
    "log": "{T}(cmath.log({a}))",
    "sqrt": "{T}(cmath.sqrt({a}))",
    "log10": "{T}(cmath.log10({a}))",
    **{op: f"{{T}}(cmath.{op}({{a}}))" for op in (
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh",
        "atanh")},
    "astype": "{cast}",
    "log2": "{T}(cmath.log({a}) * 1.4426950408889634)",
    "round": "{T}(complex(rint_({a}.real), rint_({a}.imag)))",
    "expm1": "{T}({helper[cexpm1]}({a}))",
    "log1p": "{T}({helper[clog1p]}({a}))",
    "sign": "{T}({helper[csign]}({a}))",
    "pow": "{T}({helper[cpow]}({a}, {b}))",
}

HELPERS: dict[str, str] = {
    # Smith's algorithm exactly as NumPy's loop (a zero divisor gives inf/nan, no raise)
    "cdiv": '''
@njit
def cdiv_{t}(a, b):
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abr, abi = abs(br), abs(bi)
    if abr >= abi:
        if abr == 0 and abi == 0:
            return {T}(complex(ar / abr, ai / abr))
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return {T}(complex((ar + ai * rat) * scl, (ai - ar * rat) * scl))
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return {T}(complex((ar * rat + ai) * scl, (ai * rat - ar) * scl))
''',
}


HELPERS.update({
    # the formulas of codegen.c_complex, which follow NumPy's loops
    "cexpm1": '''
@njit
def cexpm1_{t}(a):
    h = math.sin(a.imag * 0.5)
    return {T}(complex(math.expm1(a.real) * math.cos(a.imag) - 2.0 * h * h,
                       math.exp(a.real) * math.sin(a.imag)))
''',
    "clog1p": '''
@njit
def clog1p_{t}(a):
    x, y = a.real, a.imag
    m = math.hypot(x + 1.0, y)
    re = math.log(m) if m < 0.5 or m > 2.0 else 0.5 * math.log1p(x * (2.0 + x) + y * y)
    return {T}(complex(re, math.atan2(y, x + 1.0)))
''',
    "csign": '''
@njit
def csign_{t}(a):
    x, y = a.real, a.imag
    r = math.hypot(x, y)
    if r == 0:
        return {T}(0)
    if math.isinf(r) and not (math.isinf(x) and math.isinf(y)):
        return {T}(complex(math.copysign(1.0 if math.isinf(x) else 0.0, x),
                           math.copysign(1.0 if math.isinf(y) else 0.0, y)))
    if math.isnan(r) or math.isinf(r):
        return {T}(complex(math.nan, math.nan))
    return {T}(complex(x / r, y / r))
''',
    # NumPy's nc_pow: z**0 = 1, small integer powers by repeated multiplication
    "cpow": '''
@njit
def cpow_{t}(a, b):
    br, bi = b.real, b.imag
    if br == 0 and bi == 0:
        return {T}(1)
    if a.real == 0 and a.imag == 0:
        if br > 0 and bi == 0:
            return {T}(0)
        return {T}(complex(math.nan, math.nan))
    if bi == 0 and br == math.floor(br) and abs(br) < 100:
        n = int(br)
        if n == 1:
            return a
        if n == 2:
            return {T}(a * a)
        if n == 3:
            return {T}(a * a * a)
        neg = n < 0
        n = -n if neg else n
        r = {T}(1)
        p = a
        mask = 1
        while mask <= n:
            if n & mask:
                r = {T}(r * p)
            p = {T}(p * p)
            mask <<= 1
        return cdiv_{t}({T}(1), r) if neg else r
    return {T}(cmath.exp(b * cmath.log(a)))
''',
})
HELPER_DEPS = {"cpow": ("cdiv",)}


def cast(name: str, src: str, dtype: str, ctor: str) -> str:
    """``name`` (of dtype ``src``) converted to ``dtype`` as the array API says: a complex
    value to a real one through its real part, to bool by either part being nonzero."""
    if src.startswith("complex") and not dtype.startswith("complex"):
        return f"({name} != 0)" if dtype == "bool" else f"{ctor}({name}.real)"
    if dtype.startswith("complex") and src == "bool":
        return f"{ctor}(1 if {name} else 0)"
    return f"{ctor}({name})"
