"""complex64 and complex128 on every device: the array API's complex functions against
NumPy, NumPy 2 promotion between real and complex dtypes (Python complex scalars weak),
special values, reductions and products, and the clear build-time errors of the ops the
standard leaves undefined for complex numbers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.ir import dtypes
from hermes_nb.ir.program import Instr, Program

COMPLEX = ["complex64", "complex128"]
REAL = {"complex64": "float32", "complex128": "float64"}


def cdata(shape, dtype, *, seed=0, low=-2.0, high=2.0):
    """Complex values with both parts uniform in [low, high)."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)


def np_ref(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(fn(*args))


def skip_without_fp64(device, dtype):
    if dtype in ("complex128", "float64") and not device.fp64:
        pytest.skip(f"{device.id} has no fp64: complex128 is refused there (tested below)")


# ---- elementwise functions --------------------------------------------------------------

# op -> (Hermes, NumPy, loose): loose for transcendental functions (a few ulp apart)
UNARY = {
    "negative": (hm.negative, np.negative, False),
    "positive": (lambda t: +t, np.positive, False),
    "abs": (hm.abs, np.abs, False),
    "real": (hm.real, np.real, False),
    "imag": (hm.imag, np.imag, False),
    "conj": (hm.conj, np.conj, False),
    "square": (hm.square, np.square, False),
    "sign": (hm.sign, np.sign, False),
    "reciprocal": (hm.reciprocal, np.reciprocal, False),
    "round": (hm.round, np.round, False),
    "sqrt": (hm.sqrt, np.sqrt, True),
    "exp": (hm.exp, np.exp, True),
    "log": (hm.log, np.log, True),
    "expm1": (hm.expm1, np.expm1, True),
    "log1p": (hm.log1p, np.log1p, True),
    "log2": (hm.log2, np.log2, True),
    "log10": (hm.log10, np.log10, True),
    "sin": (hm.sin, np.sin, True),
    "cos": (hm.cos, np.cos, True),
    "tan": (hm.tan, np.tan, True),
    "sinh": (hm.sinh, np.sinh, True),
    "cosh": (hm.cosh, np.cosh, True),
    "tanh": (hm.tanh, np.tanh, True),
    "asin": (hm.asin, np.arcsin, True),
    "acos": (hm.acos, np.arccos, True),
    "atan": (hm.atan, np.arctan, True),
    "asinh": (hm.asinh, np.arcsinh, True),
    "acosh": (hm.acosh, np.arccosh, True),
    "atanh": (hm.atanh, np.arctanh, True),
}
# values whose parts are away from the branch cuts and singularities (|x| = 1, 0)
SAFE = np.array([0.3 + 0.4j, -1.7 + 0.25j, 0.9 - 1.3j, -0.4 - 0.6j, 1.9 + 1.1j, -0.1 + 1.6j,
                 2.5 - 0.2j, -2.2 - 1.9j])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_unary_functions_match_numpy(device, each_case, assert_close, dtype):
    skip_without_fp64(device, dtype)
    x = np.concatenate([SAFE, cdata((24,), dtype, seed=1).astype(np.complex128)]).astype(dtype)
    x = x.reshape(4, 8)
    real = ["abs", "real", "imag"]
    for ops in ([op for op in sorted(UNARY) if op not in real], real):  # a kernel per dtype
        got = each_case(device, [UNARY[op][0] for op in ops], x, tile=True)
        for op, g in zip(ops, got):
            _, ref, loose = UNARY[op]
            try:
                assert_close(g, np_ref(ref, x), loose=loose)
            except AssertionError as exc:
                raise AssertionError(f"{op}: {exc}") from None


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("compiled", [False, True], ids=["", "compiled"])
def test_logs_near_the_unit_circle_keep_their_digits(device, run_on, monkeypatch, dtype,
                                                      compiled):
    """log|z| near |z| = 1 is a result near 0: within a few ulp of it, as NumPy's (which
    complex64 is checked against in complex128, rounded), where log(|z|) is off by
    thousands. ``compiled``: cpu:0's Numba kernel even at this size."""
    skip_without_fp64(device, dtype)
    if compiled:
        if str(device.id) != "cpu:0":
            pytest.skip("only cpu:0 runs small inputs in NumPy instead of a kernel")
        from hermes_nb.backends.cpu import device as cpu_device

        monkeypatch.setattr(cpu_device, "JIT_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(7)
    radius = 1 + rng.choice([-1, 1], 48) * 10.0 ** rng.uniform(-7, -1, 48)
    z = (radius * np.exp(1j * rng.uniform(-3.1, 3.1, 48))).astype(dtype)
    z = np.concatenate([z, np.array([0.6 + 0.8j, 1e-3 + 1j, 1 + 0j], dtype)])
    wide = z.astype(np.complex128)
    eps = np.finfo(REAL[dtype]).eps
    for fn, ref in ((hm.log, np.log), (hm.log2, np.log2), (hm.log10, np.log10)):
        got = run_on(device, lambda t, fn=fn: fn(t), z)
        expected = ref(wide)
        scale = np.maximum(np.abs(expected.real), np.finfo(REAL[dtype]).tiny)
        worst = np.max(np.abs(got.real - expected.real) / scale)
        assert worst <= 8 * eps, f"{fn.__name__}: real part {worst / eps:.0f} ulp off"
        np.testing.assert_allclose(got.imag, expected.imag, rtol=4 * eps, atol=0)


BINARY = {
    "add": (hm.add, np.add),
    "subtract": (hm.subtract, np.subtract),
    "multiply": (hm.multiply, np.multiply),
    "divide": (hm.divide, np.divide),
    "pow": (hm.pow, np.power),
    "equal": (hm.equal, np.equal),
    "not_equal": (hm.not_equal, np.not_equal),
}


@pytest.mark.parametrize("dtype", COMPLEX)
def test_binary_functions_match_numpy(device, each_case, assert_close, dtype):
    skip_without_fp64(device, dtype)
    a, b = cdata((4, 6), dtype, seed=2), cdata((4, 6), dtype, seed=3)
    b[0, :3] = a[0, :3]  # some equal pairs for equal/not_equal
    b[1, :2] = 0.5  # purely real, and integral
    b[1, 2:4] = 2, -3  # small integer powers take NumPy's exact path
    predicates = ["equal", "not_equal"]
    for ops in ([op for op in sorted(BINARY) if op not in predicates], predicates):
        got = each_case(device, [BINARY[op][0] for op in ops], a, b, tile=True)
        for op, g in zip(ops, got):
            try:
                assert_close(g, np_ref(BINARY[op][1], a, b), loose=op == "pow")
            except AssertionError as exc:
                raise AssertionError(f"{op}: {exc}") from None


@pytest.mark.parametrize("dtype", COMPLEX)
def test_broadcast_and_fused_chain(device, run_on, assert_close, dtype):
    skip_without_fp64(device, dtype)
    a, b = cdata((5, 7), dtype, seed=4), cdata((7,), dtype, seed=5)

    def chain(x, y):
        return hm.exp(x * y - 1j) / (x + 2) + hm.conj(y) * hm.abs(x)

    expected = np_ref(lambda x, y: np.exp(x * y - 1j) / (x + 2) + np.conj(y) * np.abs(x), a, b)
    assert_close(run_on(device, chain, a, b), expected, loose=True)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_large_fused_kernels(device, run_on, assert_close, dtype):
    """Above cpu:0's JIT size (65536 elements) its compiled kernels run, not NumPy."""
    skip_without_fp64(device, dtype)
    a, b = cdata((256, 300), dtype, seed=17), cdata((256, 300), dtype, seed=18)
    b[0, :4] = [0, 0, 1, 1j]  # division by 0: inf/nan parts, as NumPy's loop
    a[0, :2] = [0, 1 + 1j]

    def chain(x, y):
        return hm.exp(x * 0.5j) / y + hm.sqrt(x) * hm.log(y + 3) - hm.conj(x) * hm.abs(y)

    expected = np_ref(lambda x, y: np.exp(x * 0.5j) / y + np.sqrt(x) * np.log(y + 3)
                      - np.conj(x) * np.abs(y), a, b)
    assert_close(run_on(device, chain, a, b), expected, loose=True)
    assert_close(run_on(device, lambda x, y: hm.sum(hm.conj(x) * y, axis=1), a, b),
                 np.sum(np.conj(a) * b, axis=1), loose=True)
    assert_close(run_on(device, lambda x: hm.astype(x * (hm.real(x) > 0), "bool"), a),
                 (a * (a.real > 0)) != 0)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_cpu_compiled_kernels_match_numpy(monkeypatch, assert_close, dtype):
    """cpu:0's Numba kernels (numba_complex) on every complex op, tiny inputs compiled too."""
    pytest.importorskip("numba")
    from hermes_nb.backends.cpu import device as cpu_device
    from hermes_nb.codegen import numba_complex, numba_cpu

    monkeypatch.setattr(cpu_device, "JIT_MIN_ELEMENTS", 0)
    x = np.concatenate([SAFE, cdata((16,), dtype, seed=20).astype(np.complex128)]).astype(dtype)
    y = cdata((24,), dtype, seed=21)
    with hm.device("cpu:0"):
        t, u = hm.asarray(x), hm.asarray(y)
        for fn, ref, loose in UNARY.values():
            assert_close(fn(t).numpy(), np_ref(ref, x), loose=loose)
        for op, (fn, ref) in BINARY.items():
            assert_close(fn(t, u).numpy(), np_ref(ref, x, y), loose=op == "pow")
    compiled = Program((dtype,), (), (Instr("exp", (0,), dtype), Instr("abs", (1,), REAL[dtype])),
                       (2,))
    assert numba_cpu.supports(compiled) and {"exp", "abs", "divide"} <= set(numba_complex.FORMS)


# (x1 dtype, x2 dtype or Python scalar) -> NumPy 2's result, as the standard's table
PROMOTIONS = [
    ("float32", "complex64"), ("float64", "complex64"), ("float32", "complex128"),
    ("complex64", "complex128"), ("int32", "complex64"), ("bool", "complex64"),
    ("complex64", 1j), ("complex64", 2.5), ("complex64", 3), ("float32", 1j),
    ("float64", 1j), ("int64", 2j), ("int8", "complex64"), ("uint16", "complex64"),
    ("uint64", "complex64"), ("int16", 1j),
]


@pytest.mark.parametrize(("d1", "d2"), PROMOTIONS, ids=str)
def test_promotion_follows_numpy(device, run_on, assert_close, d1, d2):
    if not device.fp64 and "64" in str(d1) + str(d2).replace("complex64", ""):
        pytest.skip(f"{device.id} has no fp64")
    a = (np.arange(1, 7).reshape(2, 3) % 3).astype(d1)
    b = d2 if not isinstance(d2, str) else (cdata((2, 3), d2, seed=6) if d2.startswith(
        "complex") else np.ones((2, 3), d2))
    expected = np_ref(np.add, a, b)
    assert hm.result_type(np.dtype(d1), d2 if not isinstance(d2, str) else np.dtype(d2)) \
        == expected.dtype
    assert_close(run_on(device, lambda x: hm.add(x, b if not isinstance(b, np.ndarray)
                                                 else hm.asarray(b)), a), expected)


@pytest.mark.parametrize("real", [d for d in dtypes.NAMES if np.dtype(d).kind != "c"])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_promotion_with_every_real_dtype(device, each_case, assert_close, dtype, real):
    skip_without_fp64(device, dtype)
    x, y = cdata((3, 4), dtype, seed=22), (np.arange(12).reshape(3, 4) % 5 + 1).astype(real)
    if np_ref(np.add, x, y).dtype == np.complex128:
        skip_without_fp64(device, "complex128")
    pairs = ((hm.add, np.add), (hm.multiply, np.multiply), (hm.divide, np.divide))
    # both orders of each op, one complex result dtype: one kernel computes all six
    fns = [f for fn, _ in pairs for f in (fn, lambda a, b, fn=fn: fn(b, a))]
    want = [w for _, ref in pairs for w in (np_ref(ref, x, y), np_ref(ref, y, x))]
    for k, (got, expected) in enumerate(zip(each_case(device, fns, x, y), want)):
        assert expected.dtype == want[0].dtype, "test bug: the cases' dtypes differ"
        try:
            assert_close(got, expected)
        except AssertionError as exc:
            raise AssertionError(f"{pairs[k // 2][1].__name__} (order {k % 2}): {exc}") from None
    with hm.device(device), pytest.raises(TypeError, match="complex dtypes have no order"):
        hm.maximum(hm.asarray(x), hm.asarray(y))


def test_can_cast_and_result_type():
    assert hm.can_cast(hm.float32, hm.complex64) and hm.can_cast(hm.float32, hm.complex128)
    assert not hm.can_cast(hm.float64, hm.complex64)
    assert not hm.can_cast(hm.complex64, hm.float64)
    assert hm.can_cast(hm.complex64, hm.complex128) and not hm.can_cast(hm.complex128,
                                                                        hm.complex64)
    assert hm.result_type(hm.float64, hm.complex64) == hm.complex128
    assert hm.result_type(hm.complex64, 1.0, 2j) == hm.complex64
    assert hm.finfo(hm.complex64).dtype == hm.float32
    assert hm.finfo(hm.complex128).eps == np.finfo(np.float64).eps
    assert hm.isdtype(hm.complex64, ("complex floating", "bool"))


# ---- special values -----------------------------------------------------------------------

SPECIAL = [complex(np.inf, 0), complex(0, -np.inf), complex(np.nan, 1), complex(1, np.nan),
           complex(np.inf, np.nan), complex(-np.inf, -np.inf), 0j, complex(3, -4),
           complex(np.finfo(np.float32).max, 1)]


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", ["abs", "isnan", "isinf", "isfinite", "real", "imag", "conj",
                                "sign"])
def test_special_values(device, run_on, assert_close, op, dtype):
    skip_without_fp64(device, dtype)
    x = np.array(SPECIAL, dtype)
    fn = getattr(hm, op)
    assert_close(run_on(device, fn, x), np_ref(getattr(np, op), x))


# ---- conversions and creation -----------------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("target", ["bool", "int16", "int32", "float32", "float64", "complex64",
                                    "complex128"])
def test_astype(device, run_on, assert_close, dtype, target):
    skip_without_fp64(device, dtype)
    skip_without_fp64(device, target)
    x = cdata((3, 5), dtype, seed=7) * 3
    x[0, :3] = [0, 1j, 2]  # zero, only imaginary, only real: bool needs both parts
    expected = (x != 0) if target == "bool" else np_ref(
        lambda v: (v.real if not target.startswith("complex") else v).astype(target), x)
    assert_close(run_on(device, lambda t: hm.astype(t, target), x), expected)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_real_to_complex_and_creation(device, run_on, assert_close, dtype):
    skip_without_fp64(device, dtype)
    r = np.linspace(-2, 2, 12, dtype=REAL[dtype]).reshape(3, 4)
    assert_close(run_on(device, lambda t: hm.astype(t, dtype) * 1j, r), r.astype(dtype) * 1j)
    assert_close(run_on(device, lambda: hm.full((2, 3), 1 - 2j, dtype=dtype)),
                 np.full((2, 3), 1 - 2j, dtype))
    assert_close(run_on(device, lambda: hm.zeros((4,), dtype=dtype) + hm.ones((4,), dtype)),
                 np.ones(4, dtype))
    assert_close(run_on(device, lambda: hm.arange(5, dtype=dtype)), np.arange(5, dtype=dtype))
    assert_close(run_on(device, lambda: hm.linspace(1 - 1j, 2 + 3j, 7, dtype=dtype)),
                 np.linspace(1 - 1j, 2 + 3j, 7, dtype=dtype))
    assert_close(run_on(device, lambda: hm.linspace(0, 1j, 4, endpoint=False, dtype=dtype)),
                 np.linspace(0, 1j, 4, endpoint=False, dtype=dtype))
    with hm.device(device):
        listed = hm.asarray([1 + 2j, 3], dtype=dtype)
        assert listed.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(listed.numpy(), np.array([1 + 2j, 3], dtype))
    assert hm.asarray([1j, 2]).dtype == hm.complex128
    assert hm.asarray(2j).dtype == hm.complex128 and complex(hm.asarray(2j)) == 2j
    assert hm.full((2,), 1j).dtype == hm.complex128


@pytest.mark.parametrize("dtype", COMPLEX)
def test_movement_keeps_both_parts(device, run_on, assert_close, dtype):
    skip_without_fp64(device, dtype)
    x = cdata((6, 5), dtype, seed=8)
    assert_close(run_on(device, lambda t: hm.permute_dims(t, (1, 0)) + 0, x), x.T)
    assert_close(run_on(device, lambda t: t[::2, 1:4] * 1, x), x[::2, 1:4])
    assert_close(run_on(device, lambda t: hm.concat([t, t[:1]]), x), np.concatenate([x, x[:1]]))
    assert_close(run_on(device, lambda t: hm.where(hm.real(t) > 0, t, 1j), x),
                 np.where(x.real > 0, x, np.asarray(1j, dtype)))


# ---- reductions, contractions, linalg ---------------------------------------------------

@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_sum_prod_mean(device, run_on, assert_close, dtype, axis):
    skip_without_fp64(device, dtype)
    x = cdata((40, 300), dtype, seed=9)
    small = cdata((6, 5), dtype, seed=10, low=-1.2, high=1.2)
    assert_close(run_on(device, lambda t: hm.sum(t, axis=axis), x), x.sum(axis=axis), loose=True)
    assert_close(run_on(device, lambda t: hm.mean(t * 2, axis=axis), x), (x * 2).mean(axis=axis),
                 loose=True)
    assert_close(run_on(device, lambda t: hm.prod(t, axis=axis), small), small.prod(axis=axis),
                 loose=True)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_vecdot_conjugates_x1_and_matmul(device, run_on, assert_close, dtype):
    skip_without_fp64(device, dtype)
    a, b = cdata((8, 50), dtype, seed=11), cdata((8, 50), dtype, seed=12)
    expected = np.sum(np.conj(a) * b, axis=-1)
    assert_close(run_on(device, hm.vecdot, a, b), expected, loose=True)
    m, n = cdata((33, 40), dtype, seed=13), cdata((40, 17), dtype, seed=14)
    assert_close(run_on(device, hm.matmul, m, n), m @ n, loose=True)
    assert_close(run_on(device, lambda x, y: hm.exp((x @ y) * 0.1), m, n),
                 np.exp((m @ n) * 0.1), loose=True)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_linalg_through_lapack(device, assert_close, dtype):
    skip_without_fp64(device, dtype)
    a = cdata((4, 4), dtype, seed=15) + 4 * np.eye(4, dtype=dtype)
    h = a @ a.conj().T  # Hermitian positive definite
    rhs = cdata((4,), dtype, seed=16)
    with hm.device(device):
        t, th = hm.asarray(a), hm.asarray(h)
        checks = {
            "inv": (hm.linalg.inv(t), np.linalg.inv(a)),
            "det": (hm.linalg.det(t), np.linalg.det(a)),
            "solve": (hm.linalg.solve(t, hm.asarray(rhs)), np.linalg.solve(a, rhs)),
            "eigvalsh": (hm.linalg.eigvalsh(th), np.linalg.eigvalsh(h)),
            "svdvals": (hm.linalg.svdvals(t), np.linalg.svd(a, compute_uv=False)),
            "cholesky": (hm.linalg.cholesky(th), np.linalg.cholesky(h)),
            "vector_norm": (hm.linalg.vector_norm(t), np.linalg.norm(a.ravel())),
            "matrix_norm": (hm.linalg.matrix_norm(t), np.linalg.norm(a, "fro")),
            "nuc": (hm.linalg.matrix_norm(t, ord="nuc"), np.linalg.norm(a, "nuc")),
        }
        for got, expected in checks.values():
            assert_close(got.numpy(), np.asarray(expected), loose=True)


# ---- what the standard leaves out: clear errors when the graph is built -----------------

UNORDERED = {
    "less": lambda t: t < 1, "greater_equal": lambda t: hm.greater_equal(t, t),
    "maximum": lambda t: hm.maximum(t, 0), "minimum": lambda t: hm.minimum(t, t),
    "floor": hm.floor, "ceil": hm.ceil, "trunc": hm.trunc,
    "floor_divide": lambda t: t // 2, "remainder": lambda t: t % 2,
    "max": hm.max, "min": hm.min, "argmax": hm.argmax, "argmin": hm.argmin,
    "sort": hm.sort, "argsort": hm.argsort, "clip": lambda t: hm.clip(t, 0, 1),
    "searchsorted": lambda t: hm.searchsorted(t, t),
    "signbit": hm.signbit,
}


@pytest.mark.parametrize("op", sorted(UNORDERED))
def test_ordering_ops_refuse_complex(device, op):
    with hm.device(device):
        t = hm.asarray(np.array([1 + 1j, 2 - 1j], np.complex64))
        with pytest.raises(TypeError, match=rf"^{op}: complex dtypes have no order; {op} is "
                                            r"defined for bool, .*float64, got complex64"):
            UNORDERED[op](t)


@pytest.mark.parametrize("op", ["atan2", "hypot", "logaddexp", "copysign"])
def test_real_functions_refuse_complex(device, op):
    with hm.device(device):
        t = hm.asarray(np.array([1 + 1j], np.complex64))
        with pytest.raises(TypeError, match=rf"^{op}: complex dtypes are not supported \(it is "
                                            r"a function of real numbers\)"):
            getattr(hm, op)(t, t)


def test_kernel_families_without_complex_name_the_op(device):
    with hm.device(device):
        image = hm.asarray(cdata((8, 8), "complex64"))
        with pytest.raises(TypeError, match=r"^gaussian_blur: stencil and image ops take real "
                                            r"images only, got dtype complex64; allowed: "
                                            r"float32, float64"):
            hm.gaussian_blur(image)
        with pytest.raises(TypeError, match=r"^sobel: stencil and image ops take real images"):
            hm.sobel(image)
        with pytest.raises(TypeError, match=r"^bitwise_and: argument x1 has dtype complex64"):
            hm.bitwise_and(image, 1)
        with pytest.raises(TypeError, match=r"^nextafter: expected real floating-point operands, "
                                            r"got complex64"):
            hm.nextafter(image, image)
        with pytest.raises(TypeError, match=r"^bitwise_left_shift: argument x1 has dtype "
                                            r"complex64"):
            hm.bitwise_left_shift(image, 1)
        with pytest.raises(TypeError, match=r"^var: complex dtypes are not supported"):
            hm.var(image)
        with pytest.raises(TypeError, match=r"^linspace: dtype float32 cannot hold the complex "
                                            r"start or stop \(0, 1j\); allowed: complex64"):
            hm.linspace(0, 1j, 3, dtype="float32")


def test_complex128_needs_fp64(monkeypatch):
    no_fp64 = [d for d in hm.devices() if not d.fp64]
    dev = no_fp64[0] if no_fp64 else hm.devices()[-1]
    if not no_fp64:  # every device here has fp64: pretend the last one lacks it
        monkeypatch.setattr(dev, "fp64", False)
    assert "complex128" not in hm.__array_namespace_info__().dtypes(device=dev.id)
    with pytest.raises(ValueError, match=rf"device {dev.id} .*does not support complex128; "
                                         r"use float32 \(complex64 for complex128\)"), \
            hm.device(dev):
        hm.ones((2,), dtype="complex128") + 1j
    with hm.device(dev):
        assert (hm.ones((2,), dtype="float32") * 1j).dtype == hm.complex64


def test_numpy_ufuncs_on_complex_tensors_stay_lazy(device, assert_close):
    skip_without_fp64(device, "complex128")
    x = cdata((3, 4), "complex128", seed=19)
    with hm.device(device):
        t = hm.asarray(x)
        out = [np.conjugate(t), np.conj(t) * np.exp(t), np.absolute(t)]
    assert all(isinstance(o, hm.Tensor) for o in out)
    for got, expected in zip(out, [np.conj(x), np.conj(x) * np.exp(x), np.abs(x)]):
        assert_close(got.numpy(), expected, loose=True)
