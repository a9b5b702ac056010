"""Complex arithmetic for the C dialects (OpenCL C has no complex type).

A complex64 value is an OpenCL ``float2`` / CUDA ``thrust::complex<float>`` (complex128:
``double2`` / ``thrust::complex<double>``), the same 8 / 16 bytes as NumPy's. Every complex
op is a helper ``hc_<name>_<dtype>`` written once here over three primitives each dialect
defines (``hc_re``, ``hc_im``: the components; ``hc_mk``: a value from them), so OpenCL and
CUDA compute with the same formulas, which follow NumPy's loops where precision depends on
the algorithm (Smith's division, integer powers by repeated multiplication).

Placeholders in the bodies: ``{Q}`` the dialect's qualifier, ``{C}`` the complex type,
``{R}`` its component type, ``{s}`` the dtype name, ``{NAN}``/``{INF}`` the component type's
NaN and infinity; ``@name(`` a real math function on the components (the dialect renames
it: ``expf`` on CUDA for complex64).
"""

from __future__ import annotations

import re

import numpy as np

from hermes_nb.ir import dtypes

__all__ = ["COMPLEX_FORMS", "HELPERS", "PRIMITIVES", "helper_names", "real_of"]


def real_of(dtype: str) -> str:
    """The components' dtype of a complex dtype (complex64: float32)."""
    if dtype not in dtypes.COMPLEX_NAMES:
        raise KeyError(dtype)
    return dtypes.real_dtype(np.dtype(dtype)).name


# the op forms on complex operands ({a} {b} operands, {s} the dtype): a complex value, except
# abs/real/imag (a real one) and the predicates and comparisons (an int 0/1)
def _h(name: str, arity: int = 1) -> str:
    return f"hc_{name}_{{s}}({', '.join('{' + c + '}' for c in 'ab'[:arity])})"


_UNARY = ("abs", "real", "imag", "conj", "exp", "log", "sqrt", "sin", "cos", "tan", "sinh",
          "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "expm1", "log1p",
          "log2", "log10", "reciprocal", "sign", "round", "isnan", "isinf", "isfinite")
COMPLEX_FORMS: dict[str, str] = {
    **{op: _h(op) for op in _UNARY},
    "negative": "hc_neg_{s}({a})",
    "square": "hc_mul_{s}({a}, {a})",
    "add": "hc_add_{s}({a}, {b})",
    "subtract": "hc_sub_{s}({a}, {b})",
    "multiply": "hc_mul_{s}({a}, {b})",
    "divide": "hc_div_{s}({a}, {b})",
    "pow": "hc_pow_{s}({a}, {b})",
    "equal": "hc_eq_{s}({a}, {b})",
    "not_equal": "(!hc_eq_{s}({a}, {b}))",
    "astype": "{a}",
    "where": "({a} ? {b} : {c})",
}

# the primitives each dialect defines, as (re, im, mk) bodies over a / x, y
PRIMITIVES = {
    "opencl": ("return a.x;", "return a.y;", "return ({C})(x, y);"),
    "cuda": ("return a.real();", "return a.imag();", "return {C}(x, y);"),
}

# name -> body; the bodies call the primitives and each other (helper_names orders them)
HELPERS: dict[str, str] = {
    "add": "{Q} {C} hc_add_{s}({C} a, {C} b) {{ return hc_mk_{s}(hc_re_{s}(a) + hc_re_{s}(b), "
           "hc_im_{s}(a) + hc_im_{s}(b)); }}",
    "sub": "{Q} {C} hc_sub_{s}({C} a, {C} b) {{ return hc_mk_{s}(hc_re_{s}(a) - hc_re_{s}(b), "
           "hc_im_{s}(a) - hc_im_{s}(b)); }}",
    "neg": "{Q} {C} hc_neg_{s}({C} a) {{ return hc_mk_{s}(-hc_re_{s}(a), -hc_im_{s}(a)); }}",
    "conj": "{Q} {C} hc_conj_{s}({C} a) {{ return hc_mk_{s}(hc_re_{s}(a), -hc_im_{s}(a)); }}",
    "real": "{Q} {R} hc_real_{s}({C} a) {{ return hc_re_{s}(a); }}",
    "imag": "{Q} {R} hc_imag_{s}({C} a) {{ return hc_im_{s}(a); }}",
    "abs": "{Q} {R} hc_abs_{s}({C} a) {{ return @hypot(hc_re_{s}(a), hc_im_{s}(a)); }}",
    "isnan": "{Q} int hc_isnan_{s}({C} a) {{ return isnan(hc_re_{s}(a)) || isnan(hc_im_{s}(a)); }}",
    "isinf": "{Q} int hc_isinf_{s}({C} a) {{ return isinf(hc_re_{s}(a)) || isinf(hc_im_{s}(a)); }}",
    "isfinite": "{Q} int hc_isfinite_{s}({C} a) {{ return isfinite(hc_re_{s}(a)) && "
                "isfinite(hc_im_{s}(a)); }}",
    "nz": "{Q} int hc_nz_{s}({C} a) {{ return hc_re_{s}(a) != ({R})0 || hc_im_{s}(a) != ({R})0; }}",
    "eq": "{Q} int hc_eq_{s}({C} a, {C} b) {{ return hc_re_{s}(a) == hc_re_{s}(b) && "
          "hc_im_{s}(a) == hc_im_{s}(b); }}",
    "round": "{Q} {C} hc_round_{s}({C} a) {{ return hc_mk_{s}(@rint(hc_re_{s}(a)), "
             "@rint(hc_im_{s}(a))); }}",
    # NumPy multiplies naively (no C99 Annex G recovery of infinities)
    "mul": """\
{Q} {C} hc_mul_{s}({C} a, {C} b) {{
    const {R} ar = hc_re_{s}(a), ai = hc_im_{s}(a), br = hc_re_{s}(b), bi = hc_im_{s}(b);
    return hc_mk_{s}(ar * br - ai * bi, ar * bi + ai * br);
}}""",
    # Smith's algorithm, as NumPy's loop (division by 0 gives inf/nan components)
    "div": """\
{Q} {C} hc_div_{s}({C} a, {C} b) {{
    const {R} ar = hc_re_{s}(a), ai = hc_im_{s}(a), br = hc_re_{s}(b), bi = hc_im_{s}(b);
    const {R} abr = @fabs(br), abi = @fabs(bi);
    if (abr >= abi) {{
        if (abr == ({R})0 && abi == ({R})0) return hc_mk_{s}(ar / abr, ai / abr);
        const {R} rat = bi / br, scl = ({R})1 / (br + bi * rat);
        return hc_mk_{s}((ar + ai * rat) * scl, (ai - ar * rat) * scl);
    }}
    const {R} rat = br / bi, scl = ({R})1 / (bi + br * rat);
    return hc_mk_{s}((ar * rat + ai) * scl, (ai * rat - ar) * scl);
}}""",
    "reciprocal": "{Q} {C} hc_reciprocal_{s}({C} a) {{ return hc_div_{s}(hc_mk_{s}(({R})1, "
                  "({R})0), a); }}",
    # x / |x| as NumPy: 0 for 0; one infinite part gives its sign (+-1, the other part +-0);
    # both infinite, or a NaN, give NaN
    "sign": """\
{Q} {C} hc_sign_{s}({C} a) {{
    const {R} x = hc_re_{s}(a), y = hc_im_{s}(a), r = hc_abs_{s}(a);
    if (r == ({R})0) return hc_mk_{s}(({R})0, ({R})0);
    if (isinf(r) && !(isinf(x) && isinf(y)))
        return hc_mk_{s}(@copysign(isinf(x) ? ({R})1 : ({R})0, x),
                         @copysign(isinf(y) ? ({R})1 : ({R})0, y));
    if (isnan(r) || isinf(r)) return hc_mk_{s}({NAN}, {NAN});
    return hc_mk_{s}(x / r, y / r);
}}""",
    "exp": """\
{Q} {C} hc_exp_{s}({C} a) {{
    const {R} x = hc_re_{s}(a), y = hc_im_{s}(a);
    if (y == ({R})0) return hc_mk_{s}(@exp(x), y);
    const {R} e = @exp(x);
    return hc_mk_{s}(e * @cos(y), e * @sin(y));
}}""",
    # exp(z) - 1 exactly near 0: expm1(x) cos(y) - 2 sin(y/2)**2
    "expm1": """\
{Q} {C} hc_expm1_{s}({C} a) {{
    const {R} x = hc_re_{s}(a), y = hc_im_{s}(a);
    const {R} h = @sin(y * ({R})0.5);
    return hc_mk_{s}(@expm1(x) * @cos(y) - ({R})2 * h * h, @exp(x) * @sin(y));
}}""",
    # near |z| = 1, log|z| = log1p(m*m - 1 + n*n) / 2 (m, n: the larger and smaller part),
    # the sum kept with its squares' rounding errors (fma) and its additions' (two-sum): as
    # log(|z|) it would lose the digits of a result near 0
    "log": """\
{Q} {C} hc_log_{s}({C} a) {{
    const {R} x = hc_re_{s}(a), y = hc_im_{s}(a), h = hc_abs_{s}(a);
    if (!(h >= ({R})0.71 && h <= ({R})1.73)) return hc_mk_{s}(@log(h), @atan2(y, x));
    const {R} m = @fmax(@fabs(x), @fabs(y)), n = @fmin(@fabs(x), @fabs(y));
    const {R} p = m * m, q = n * n, d = p - ({R})1, dp = d - p, s = d + q, sd = s - d;
    const {R} err = (p - (d - dp)) + (({R})-1 - dp) + (d - (s - sd)) + (q - sd)
        + @fma(m, m, -p) + @fma(n, n, -q);
    return hc_mk_{s}(({R})0.5 * @log1p(s + err), @atan2(y, x));
}}""",
    # log|1 + z| = log1p(2x + x*x + y*y) / 2: exact near 0
    "log1p": """\
{Q} {C} hc_log1p_{s}({C} a) {{
    const {R} x = hc_re_{s}(a), y = hc_im_{s}(a);
    const {R} m = @hypot(x + ({R})1, y);
    const {R} re = m < ({R})0.5 || m > ({R})2 ? @log(m) :
        ({R})0.5 * @log1p(x * (({R})2 + x) + y * y);
    return hc_mk_{s}(re, @atan2(y, x + ({R})1));
}}""",
    "log2": """\
{Q} {C} hc_log2_{s}({C} a) {{
    const {C} l = hc_log_{s}(a);
    const {R} k = ({R})1.442695040888963407359924681001892137;
    return hc_mk_{s}(hc_re_{s}(l) * k, hc_im_{s}(l) * k);
}}""",
    "log10": """\
{Q} {C} hc_log10_{s}({C} a) {{
    const {C} l = hc_log_{s}(a);
    const {R} k = ({R})0.434294481903251827651128918916605082;
    return hc_mk_{s}(hc_re_{s}(l) * k, hc_im_{s}(l) * k);
}}""",
    # the principal root without cancellation: t = sqrt((|x| + |z|) / 2)
    "sqrt": """\
{Q} {C} hc_sqrt_{s}({C} a) {{
    const {R} x = hc_re_{s}(a), y = hc_im_{s}(a);
    if (x == ({R})0 && y == ({R})0) return hc_mk_{s}(({R})0, y);
    if (isinf(y)) return hc_mk_{s}({INF}, y);
    if (isnan(x)) return hc_mk_{s}(x, x);
    if (isinf(x)) return x > ({R})0 ? hc_mk_{s}(x, isnan(y) ? y : @copysign(({R})0, y))
                                   : hc_mk_{s}(isnan(y) ? y : ({R})0, @copysign(-x, y));
    const {R} t = @sqrt((@fabs(x) + hc_abs_{s}(a)) * ({R})0.5);
    if (x >= ({R})0) return hc_mk_{s}(t, y / (({R})2 * t));
    return hc_mk_{s}(@fabs(y) / (({R})2 * t), @copysign(t, y));
}}""",
    # NumPy's nc_pow: z**0 = 1, small integer powers by repeated multiplication, else
    # exp(b log a)
    "pow": """\
{Q} {C} hc_pow_{s}({C} a, {C} b) {{
    const {R} br = hc_re_{s}(b), bi = hc_im_{s}(b);
    if (br == ({R})0 && bi == ({R})0) return hc_mk_{s}(({R})1, ({R})0);
    if (hc_re_{s}(a) == ({R})0 && hc_im_{s}(a) == ({R})0) {{
        if (br > ({R})0 && bi == ({R})0) return hc_mk_{s}(({R})0, ({R})0);
        return hc_mk_{s}({NAN}, {NAN});
    }}
    if (bi == ({R})0 && br == @trunc(br) && @fabs(br) < ({R})100) {{
        int n = (int)br;
        if (n == 1) return a;
        if (n == 2) return hc_mul_{s}(a, a);
        if (n == 3) return hc_mul_{s}(hc_mul_{s}(a, a), a);
        const int neg = n < 0;
        if (neg) n = -n;
        {C} r = hc_mk_{s}(({R})1, ({R})0), p = a;
        for (int mask = 1; mask <= n; mask <<= 1) {{
            if (n & mask) r = hc_mul_{s}(r, p);
            p = hc_mul_{s}(p, p);
        }}
        return neg ? hc_div_{s}(hc_mk_{s}(({R})1, ({R})0), r) : r;
    }}
    return hc_exp_{s}(hc_mul_{s}(b, hc_log_{s}(a)));
}}""",
    "sin": "{Q} {C} hc_sin_{s}({C} a) {{ const {R} x = hc_re_{s}(a), y = hc_im_{s}(a); "
           "return hc_mk_{s}(@sin(x) * @cosh(y), @cos(x) * @sinh(y)); }}",
    "cos": "{Q} {C} hc_cos_{s}({C} a) {{ const {R} x = hc_re_{s}(a), y = hc_im_{s}(a); "
           "return hc_mk_{s}(@cos(x) * @cosh(y), -(@sin(x) * @sinh(y))); }}",
    "sinh": "{Q} {C} hc_sinh_{s}({C} a) {{ const {R} x = hc_re_{s}(a), y = hc_im_{s}(a); "
            "return hc_mk_{s}(@sinh(x) * @cos(y), @cosh(x) * @sin(y)); }}",
    "cosh": "{Q} {C} hc_cosh_{s}({C} a) {{ const {R} x = hc_re_{s}(a), y = hc_im_{s}(a); "
            "return hc_mk_{s}(@cosh(x) * @cos(y), @sinh(x) * @sin(y)); }}",
    # Kahan's formula (as FreeBSD's ctanh); past |x| = 20 the real part is +-1
    "tanh": """\
{Q} {C} hc_tanh_{s}({C} a) {{
    const {R} x = hc_re_{s}(a), y = hc_im_{s}(a);
    if (@fabs(x) > ({R})20) {{
        const {R} e = @exp(({R})-2 * @fabs(x));
        return hc_mk_{s}(@copysign(({R})1, x), ({R})4 * @sin(y) * @cos(y) * e);
    }}
    const {R} t = @tan(y), beta = ({R})1 + t * t, s = @sinh(x), rho = @sqrt(({R})1 + s * s);
    const {R} d = ({R})1 + beta * s * s;
    return hc_mk_{s}(beta * rho * s / d, t / d);
}}""",
    # tan(z) = -i tanh(iz)
    "tan": """\
{Q} {C} hc_tan_{s}({C} a) {{
    const {C} t = hc_tanh_{s}(hc_mk_{s}(-hc_im_{s}(a), hc_re_{s}(a)));
    return hc_mk_{s}(hc_im_{s}(t), -hc_re_{s}(t));
}}""",
    # asinh(z) = log(z + sqrt(z*z + 1)), on the right half-plane (odd symmetry elsewhere)
    "asinh": """\
{Q} {C} hc_asinh_{s}({C} a) {{
    const int flip = hc_re_{s}(a) < ({R})0;
    const {C} z = flip ? hc_neg_{s}(a) : a;
    const {C} w = hc_sqrt_{s}(hc_add_{s}(hc_mul_{s}(z, z), hc_mk_{s}(({R})1, ({R})0)));
    const {C} r = hc_log_{s}(hc_add_{s}(z, w));
    return flip ? hc_neg_{s}(r) : r;
}}""",
    # asin(z) = -i asinh(iz)
    "asin": """\
{Q} {C} hc_asin_{s}({C} a) {{
    const {C} t = hc_asinh_{s}(hc_mk_{s}(-hc_im_{s}(a), hc_re_{s}(a)));
    return hc_mk_{s}(hc_im_{s}(t), -hc_re_{s}(t));
}}""",
    # acos(z) = pi/2 - asin(z)
    "acos": """\
{Q} {C} hc_acos_{s}({C} a) {{
    const {C} t = hc_asin_{s}(a);
    return hc_mk_{s}(({R})1.570796326794896619231321691639751442 - hc_re_{s}(t),
                     -hc_im_{s}(t));
}}""",
    # acosh(z) = log(z + sqrt(z + 1) sqrt(z - 1))
    "acosh": """\
{Q} {C} hc_acosh_{s}({C} a) {{
    const {C} one = hc_mk_{s}(({R})1, ({R})0);
    const {C} w = hc_mul_{s}(hc_sqrt_{s}(hc_add_{s}(a, one)), hc_sqrt_{s}(hc_sub_{s}(a, one)));
    return hc_log_{s}(hc_add_{s}(a, w));
}}""",
    # atanh(z) = (log1p(z) - log1p(-z)) / 2
    "atanh": """\
{Q} {C} hc_atanh_{s}({C} a) {{
    const {C} d = hc_sub_{s}(hc_log1p_{s}(a), hc_log1p_{s}(hc_neg_{s}(a)));
    return hc_mk_{s}(hc_re_{s}(d) * ({R})0.5, hc_im_{s}(d) * ({R})0.5);
}}""",
    # atan(z) = -i atanh(iz)
    "atan": """\
{Q} {C} hc_atan_{s}({C} a) {{
    const {C} t = hc_atanh_{s}(hc_mk_{s}(-hc_im_{s}(a), hc_re_{s}(a)));
    return hc_mk_{s}(hc_im_{s}(t), -hc_re_{s}(t));
}}""",
}

_CALL = re.compile(r"\bhc_(\w+?)_(complex64|complex128)\(")


def helper_names(text: str) -> list[tuple[str, str]]:
    """The ``(helper, dtype)`` pairs ``text`` calls, with the helpers those call, each after
    the ones it calls (the order to define them in); primitives first."""
    order: dict[tuple[str, str], None] = {}

    def visit(name: str, dtype: str) -> None:
        if (name, dtype) in order or name in ("re", "im", "mk"):
            return
        for dep in re.findall(r"\bhc_(\w+?)_\{s\}\(", HELPERS[name]):
            if dep != name:  # its own definition
                visit(dep, dtype)
        order[(name, dtype)] = None

    for name, dtype in _CALL.findall(text):
        visit(name, dtype)
    dtypes = sorted({d for _, d in _CALL.findall(text)})
    return [*((p, d) for d in dtypes for p in ("re", "im", "mk")), *order]
