"""The Numba forms of the complex ops (``numba_cpu``'s complex column).

Numba has complex64/complex128 natively; where its arithmetic differs from NumPy's loops
(division: Numba raises on a zero divisor, NumPy divides by Smith's algorithm and gives
inf/nan), a generated helper does what NumPy does. Ops without a form here (``expm1``,
``log1p``, ``log2``, ``pow``, ``sign``, ``round``) make the program run in the NumPy
interpreter.

Placeholders as in ``numba_cpu.NUMBA_FORMS``: ``{a}`` ``{b}`` operands, ``{T}`` the output
dtype's constructor, ``{Tk}`` it unless the operands already have it, ``{helper[name]}``
a helper of ``HELPERS``.
"""

from __future__ import annotations

__all__ = ["FORMS", "HELPERS", "cast"]

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


def cast(name: str, src: str, dtype: str, ctor: str) -> str:
    """``name`` (of dtype ``src``) converted to ``dtype`` as the array API says: a complex
    value to a real one through its real part, to bool by either part being nonzero."""
    if src.startswith("complex") and not dtype.startswith("complex"):
        return f"({name} != 0)" if dtype == "bool" else f"{ctor}({name}.real)"
    if dtype.startswith("complex") and src == "bool":
        return f"{ctor}(1 if {name} else 0)"
    return f"{ctor}({name})"
