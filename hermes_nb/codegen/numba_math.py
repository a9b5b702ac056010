"""Vectorisable float32 math for the Numba generators: the sources of helpers emitted into
generated modules (``{t}`` is the dtype name), because Numba's LLVM has no vector math
library and a libm call in a loop keeps it scalar.

Cephes' single-precision algorithms, with fma where it saves a rounding, and special values
(NaN, +-inf, +-0, negative logarithms) exactly as NumPy's. Max errors over every positive
float32 (tanh is odd, log of a negative is NaN), NumPy 2.4's own on AVX-512 in brackets:
exp 1.02 ulp (2.4), log 0.85 (3.6), log2 1.19 (2.0), log10 0.91 (3.3), tanh 1.34 (1.4);
tests/unit/test_numba_math.py checks a sample. float64 calls libm (``LIBM``).
"""

from __future__ import annotations

# float32 helpers; other dtypes call these libm functions instead
LIBM = {"exp": "math.exp", "log": "math.log", "log2": "math.log2", "log10": "math.log10",
        "tanh": "math.tanh"}

MATH_HELPERS: dict[str, str] = {
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
    # Cephes logf's reduction for finite x > 0: x = 2**e * (1 + f), sqrt(1/2) <= 1 + f <
    # sqrt(2), and log(1 + f) = f + y. Subnormals are scaled by 2**23 first; f is exact.
    "log_parts": '''
@njit
def log_parts_{t}(x):
    sub = x < np.float32(1.17549435e-38)
    xs = x * np.float32(8388608.0) if sub else x
    e = frexp_exponent_f32_(xs) - (np.float32(23.0) if sub else np.float32(0.0))
    m = frexp_mantissa_f32_(xs)
    low = m < np.float32(0.707106781186547524)
    e = e - np.float32(1.0) if low else e
    f = (m + m if low else m) - np.float32(1.0)
    z = f * f
    p = np.float32(7.0376836292e-2)
    p = fma_(p, f, np.float32(-1.1514610310e-1))
    p = fma_(p, f, np.float32(1.1676998740e-1))
    p = fma_(p, f, np.float32(-1.2420140846e-1))
    p = fma_(p, f, np.float32(1.4249322787e-1))
    p = fma_(p, f, np.float32(-1.6668057665e-1))
    p = fma_(p, f, np.float32(2.0000714765e-1))
    p = fma_(p, f, np.float32(-2.4999993993e-1))
    p = fma_(p, f, np.float32(3.3333331174e-1))
    y = fma_(p * f, z, np.float32(-0.5) * z)
    return f, y, e
''',
    # NumPy's special values: log(NaN) and log(x < 0) are NaN, log(+-0) = -inf, log(inf) = inf
    "log_special": '''
@njit
def log_special_{t}(x, r):
    r = np.float32(np.nan) if x < np.float32(0.0) else r
    r = np.float32(-np.inf) if x == np.float32(0.0) else r
    return x if (x != x) | (x == np.float32(np.inf)) else r
''',
    # ln2 in two parts (the first's products with e are exact)
    "log": '''
@njit
def log_{t}(x):
    f, y, e = log_parts_{t}(x)
    r = fma_(e, np.float32(0.693359375), f + fma_(e, np.float32(-2.12194440e-4), y))
    return log_special_{t}(x, r)
''',
    # log2(e) = 1 + 0.44269504...: the 1 is added exactly, as f + y
    "log2": '''
@njit
def log2_{t}(x):
    f, y, e = log_parts_{t}(x)
    r = fma_(f, np.float32(0.44269504088896340736), fma_(y, np.float32(0.44269504088896340736), y))
    return log_special_{t}(x, r + f + e)
''',
    # log10(e) and log10(2) in two parts each, the first parts' products with f and e exact
    "log10": '''
@njit
def log10_{t}(x):
    f, y, e = log_parts_{t}(x)
    r = fma_(f, np.float32(7.00731903251827651129e-4), y * np.float32(7.00731903251827651129e-4))
    r = fma_(e, np.float32(2.48745663981195213739e-4), r)
    r = fma_(y, np.float32(4.3359375e-1), r)
    r = fma_(f, np.float32(4.3359375e-1), r)
    return log_special_{t}(x, fma_(e, np.float32(3.0078125e-1), r))
''',
    # Cephes tanhf: an odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1) above (1 at
    # overflow); the sign restored by copysign, so tanh(+-0) = +-0 and tanh(NaN) = NaN
    "tanh": '''
@njit
def tanh_{t}(x):
    ax = abs(x)
    s = ax * ax
    p = np.float32(-5.70498872745e-3)
    p = fma_(p, s, np.float32(2.06390887954e-2))
    p = fma_(p, s, np.float32(-5.37397155531e-2))
    p = fma_(p, s, np.float32(1.33314422036e-1))
    p = fma_(p, s, np.float32(-3.33332819422e-1))
    small = fma_(p * s, ax, ax)
    big = np.float32(1.0) - np.float32(2.0) / (exp_{t}(ax + ax) + np.float32(1.0))
    return copysign_(big if ax > np.float32(0.625) else small, x)
''',
}
MATH_HELPER_DEPS = {"log": ("log_parts", "log_special"), "log2": ("log_parts", "log_special"),
                    "log10": ("log_parts", "log_special"), "tanh": ("exp",)}
