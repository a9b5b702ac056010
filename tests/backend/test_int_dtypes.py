"""Every integer dtype on every device, against NumPy: wrap-around arithmetic, division and
remainder by zero, comparisons, bitwise ops, casts between all dtypes, reductions, matmul
and stencils. Inputs of ``BIG`` elements run the generated kernels on ``cpu:0`` too
(Numba above its JIT size); ``SMALL`` ones the NumPy interpreter there."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import hermes_nb as hm

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
NEW = ["int8", "int16", "uint8", "uint16", "uint32", "uint64"]
ALL = ["bool", *INTS, "float32", "float64"]
BIG = (272, 256)  # above the CPU's JIT size (65536 elements)
SMALL = (3, 5)
# generated kernels (BIG) for the new dtypes, the interpreter (SMALL) for every integer: the
# int32/int64 kernels are covered by test_codegen_numba.py and test_codegen_c.py, and each
# case compiles a kernel per device
SHAPED = [pytest.param(d, BIG, id=f"{d}-big") for d in NEW] + [
    pytest.param(d, SMALL, id=f"{d}-small") for d in INTS]


def np_ref(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


def checked(assert_close, name, got, expected):
    """``assert_close``, its failure naming ``name`` (one of several outputs)."""
    try:
        assert_close(got, expected)
    except AssertionError as exc:
        raise AssertionError(f"{name}: {exc}") from None


def full_range(dtype, shape, seed):
    """Values over the whole range of ``dtype``, with its limits, 0, 1 and -1 among them."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    specials = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype=dtype)
    if info.min < 0:
        specials = np.concatenate([specials, np.array([-1, -2], dtype=dtype)])
    x.flat[: specials.size] = specials
    return x


def small_range(dtype, shape, seed, low=-9, high=9):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(max(low, info.min), high, size=shape, endpoint=True).astype(dtype)


WRAPPING = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
            "maximum": np.maximum, "minimum": np.minimum, "bitwise_and": operator.and_,
            "bitwise_or": operator.or_, "bitwise_xor": operator.xor, "equal": operator.eq,
            "not_equal": operator.ne, "less": operator.lt, "less_equal": operator.le,
            "greater": operator.gt, "greater_equal": operator.ge}
HM_BINARY = {name: getattr(hm, name) for name in WRAPPING}
COMPARING = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize(("dtype", "shape"), SHAPED)
def test_binary_ops_wrap_like_numpy(device, each_case, assert_close, dtype, shape):
    x, y = full_range(dtype, shape, 1), full_range(dtype, shape, 2)[::-1].copy()
    for names in ([n for n in WRAPPING if n not in COMPARING], COMPARING):  # by result dtype
        got = each_case(device, [lambda a, b, n=n: HM_BINARY[n](a, b) for n in names],
                        x, y)
        for name, g in zip(names, got):
            checked(assert_close, name, g, np_ref(WRAPPING[name], x, y))


@pytest.mark.parametrize(("dtype", "shape"), SHAPED)
def test_division_and_remainder(device, each_case, run_on, assert_close, dtype, shape):
    """Floor division and remainder over the whole range, by 0 (NumPy gives 0), by -1 and
    MIN // -1 (wraps to MIN)."""
    x = full_range(dtype, shape, 3)
    y = full_range(dtype, shape, 4)
    y.flat[::7] = 0
    if np.iinfo(dtype).min < 0:
        y.flat[1::7] = -1
    y.flat[2::7] = small_range(dtype, y.flat[2::7].shape, 5)
    got = each_case(device, [operator.floordiv, operator.mod], x, y)
    checked(assert_close, "floor_divide", got[0], np_ref(np.floor_divide, x, y))
    checked(assert_close, "remainder", got[1], np_ref(np.remainder, x, y))
    got = run_on(device, lambda a, b, z: (a + z) / b, x, y, np.zeros_like(x))
    assert_close(got, np_ref(np.true_divide, x, y))


@pytest.mark.parametrize(("dtype", "shape"), SHAPED)
def test_pow_wraps(device, run_on, assert_close, dtype, shape):
    x = full_range(dtype, shape, 6)
    x.flat[::3] = small_range(dtype, x.flat[::3].shape, 7)
    e = small_range(dtype, shape, 8, low=0, high=70)
    got = run_on(device, lambda a, b, z: hm.pow(a + z, b), x, e, np.zeros_like(x))
    assert_close(got, np_ref(np.power, x, e))


UNARY = {"negative": np.negative, "abs": np.abs, "sign": np.sign, "square": np.square,
         "bitwise_invert": np.invert, "floor": np.floor, "ceil": np.ceil, "round": np.round,
         "trunc": np.trunc, "logical_not": np.logical_not, "isnan": np.isnan,
         "isfinite": np.isfinite}


@pytest.mark.parametrize(("dtype", "shape"), SHAPED)
def test_unary_ops(device, each_case, assert_close, dtype, shape):
    x = full_range(dtype, shape, 9)
    predicates = ["logical_not", "isnan", "isfinite"]
    for names in ([*(n for n in UNARY if n not in predicates), "relu"], predicates):
        got = each_case(device, [lambda a, n=n: getattr(hm, n)(a) for n in names], x)
        for name, g in zip(names, got):
            expected = np.maximum(x, x.dtype.type(0)) if name == "relu" else \
                np_ref(UNARY[name], x)
            if name in ("floor", "ceil", "trunc", "round"):
                expected = x  # the array API: the integer itself
            checked(assert_close, name, g, expected)


@pytest.mark.parametrize("dtype", NEW)
def test_float_functions_of_integers(device, each_case, assert_close, dtype):
    """Every integer dtype gives float64, which the standard leaves to the library (NumPy
    gives float16 for int8 and float32 for int16; Hermes has no float16)."""
    x = small_range(dtype, BIG, 10, low=0, high=100)
    got = each_case(device, [hm.sqrt, lambda a: hm.exp(a / 50), hm.sin], x, tile=True)
    wide = x.astype(np.float64)
    checked(assert_close, "sqrt", got[0], np_ref(np.sqrt, wide))
    checked(assert_close, "exp", got[1], np_ref(np.exp, wide / 50))
    checked(assert_close, "sin", got[2], np_ref(np.sin, wide))


def _cast_source(source, target, shape, seed):
    """Values whose cast to ``target`` NumPy defines: integers anywhere (they wrap), floats
    inside ``target``'s range (outside it the C and NumPy conversions are undefined)."""
    kind = np.dtype(source).kind
    if kind == "b":
        return np.random.default_rng(seed).random(shape) < 0.5
    if kind in "iu":
        return full_range(source, shape, seed)
    rng = np.random.default_rng(seed)
    if np.dtype(target).kind in "iu":
        info = np.iinfo(target)
        lo, hi = max(float(info.min), -1e6), min(float(info.max), 1e6)
        x = rng.uniform(lo, hi, size=shape).astype(source)
        x = np.clip(x, lo, np.nextafter(np.float32(hi), 0) if hi > 1e6 - 1 else hi - 1)
        if np.dtype(target).itemsize == 8:  # the top of the 64-bit ranges, exact in floats
            top = [2.0**62, 2.0**62 + 2.0**40, -(2.0**62)]
            if info.min == 0:
                top = [2.0**63, 2.0**63 + 2.0**40, 1.5e19]
            x.flat[:3] = np.array(top, dtype=source)
        return x
    return (rng.standard_normal(shape) * 1e3).astype(source)


@pytest.mark.parametrize("target", ALL)
def test_casts_between_all_dtypes(device, each_case, assert_close, target, shape=BIG):
    """astype from every dtype to ``target``; at least one side is a new integer dtype."""
    sources = ALL if target in NEW else NEW
    xs = [_cast_source(source, target, shape, 11) for source in sources]
    got = each_case(device, [lambda *ts, k=k: ts[k].astype(target)
                                     for k in range(len(sources))], *xs)
    for source, x, g in zip(sources, xs, got):
        checked(assert_close, f"{source} to {target}", g, x.astype(target))


@pytest.mark.parametrize("dtype", NEW)
def test_mixed_promotion(device, run_on, assert_close, dtype):
    """Every pair of integer dtypes (and with the floats) promotes as in NumPy 2."""
    x = small_range(dtype, SMALL, 12)
    for other in ALL:
        y = (small_range(other, SMALL, 13) if other in INTS else
             np.random.default_rng(13).random(SMALL).astype(other) < 0.5 if other == "bool" else
             np.random.default_rng(13).standard_normal(SMALL).astype(other))
        expected = np.add(x, y)
        with hm.device(device):
            lazy = hm.add(hm.asarray(x), hm.asarray(y))
        assert lazy.dtype == expected.dtype, f"{dtype} + {other}"
        assert hm.result_type(np.dtype(dtype), np.dtype(other)) == expected.dtype
        assert_close(run_on(device, operator.add, x, y), expected)


def test_promotion_examples(device):
    with hm.device(device):
        i8, u8 = hm.asarray(np.int8([1])), hm.asarray(np.uint8([1]))
        assert (i8 + u8).dtype == np.int16
        assert (hm.asarray(np.uint64([1])) + hm.asarray(np.int64([1]))).dtype == np.float64
        assert (hm.asarray(np.uint32([1])) + hm.asarray(np.int32([1]))).dtype == np.int64
        assert (u8 + 255).dtype == np.uint8
        with pytest.raises(OverflowError, match="300 does not fit in uint8"):
            u8 + 300  # NumPy 2 and the array API: a Python int must fit the tensor's dtype
        with pytest.raises(OverflowError, match="-1 does not fit in uint8"):
            u8 - (-1)
        assert (u8 * 2.5).dtype == np.float64  # NumPy 2: a Python float is weak only in kind


REDUCTIONS = ["sum", "prod", "max", "min", "argmax", "argmin"]
# the C kernels (OpenCL, CUDA) reduce along an axis with code shared by every dtype, and each
# dtype's identity and combine are those of axis=None: there every dtype reduces along every
# axis on cpu:0 and the plug-ins, along axis=None and on three dtypes (signed and unsigned,
# narrow and wide) per axis elsewhere (a kernel build per case took minutes on OpenCL)
C_AXIS_COVER = {0: ("int8", "uint16", "uint64"), 1: ("int16", "uint8", "uint32")}


@pytest.mark.parametrize("axis", [None, 0, 1], ids=str)
@pytest.mark.parametrize("dtype", NEW)
def test_reductions(device, run_on, assert_close, dtype, axis):
    """sum/prod accumulate in the default integer of the sign (int64, uint64), wrapping;
    max/min/argmax/argmin over the whole range."""
    if device.kind in ("opencl", "cuda") and axis is not None and dtype not in C_AXIS_COVER[axis]:
        pytest.skip(f"axis {axis} is checked on {device.kind} for {C_AXIS_COVER[axis]} only")
    x = full_range(dtype, BIG, 14)
    got = run_on(device, lambda a, z: tuple(getattr(a + z, op)(axis=axis) for op in REDUCTIONS),
                 x, np.zeros_like(x))
    for op, g in zip(REDUCTIONS, got):
        checked(assert_close, op, g, np_ref(getattr(np, op), x, axis))
    small = small_range(dtype, (4, 6), 15, low=0, high=5)
    got = run_on(device, lambda a: (a.sum(axis=axis), a.prod(axis=axis), a.mean()), small)
    assert_close(got[0], np.sum(small, axis=axis))
    assert_close(got[1], np.prod(small, axis=axis))
    assert_close(got[2], np.mean(small))


@pytest.mark.parametrize("dtype", INTS)
def test_sum_result_dtypes(device, dtype):
    with hm.device(device):
        t = hm.asarray(np.zeros(3, dtype=dtype))
        assert hm.sum(t).dtype == np.sum(np.zeros(3, dtype=dtype)).dtype
        assert hm.prod(t).dtype == np.prod(np.zeros(3, dtype=dtype)).dtype
        assert hm.max(t).dtype == np.dtype(dtype)
        assert hm.sum(t, dtype=dtype).dtype == np.dtype(dtype)
        assert hm.linalg.trace(hm.reshape(t, (1, 3)) * t).dtype == hm.sum(t).dtype


@pytest.mark.parametrize("dtype", NEW)
def test_cumulative_sum(device, run_on, assert_close, dtype):
    """The standard: running sums of unsigned integers are uint64, of signed ones int64."""
    x = full_range(dtype, (5, 37), 22)
    got = run_on(device, lambda a: (hm.cumulative_sum(a, axis=1), hm.cumulative_prod(a, axis=0)),
                 x)
    assert_close(got[0], np.cumsum(x, axis=1))
    assert_close(got[1], np.cumprod(x, axis=0))


@pytest.mark.parametrize("dtype", NEW)
def test_matmul(device, run_on, assert_close, dtype):
    a = full_range(dtype, (40, 33), 16)
    b = full_range(dtype, (33, 21), 17)
    assert_close(run_on(device, hm.matmul, a, b), np_ref(np.matmul, a, b))
    got = run_on(device, lambda p, q: hm.matmul(p, q) + 1, a, b)  # with a fused epilogue
    assert_close(got, np_ref(np.matmul, a, b) + np.array(1, dtype=dtype))


@pytest.mark.parametrize("dtype", NEW)
def test_where_and_clip(device, each_case, assert_close, dtype):
    x = full_range(dtype, BIG, 18)
    y = full_range(dtype, BIG, 19)
    info = np.iinfo(dtype)
    lo, hi = info.min // 2 + 1, info.max // 2
    got = each_case(device, [lambda a, b: hm.where(a > b, a, b),
                                     lambda a, b: hm.clip(a * 1, lo, hi)], x, y)
    checked(assert_close, "where", got[0], np.where(x > y, x, y))
    checked(assert_close, "clip", got[1], np.clip(x, lo, hi))


IMAGE_OPS = {
    "gaussian_blur": lambda t: hm.gaussian_blur(t, sigma=1.5),
    "sobel": lambda t: hm.sobel(t, axis=-2, border="replicate"),
    "sobel_edge_detection": hm.sobel_edge_detection,
    "conv2d": lambda t: hm.conv2d(t, np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]]), "constant"),
    "pipeline": hm.compose(hm.gaussian_blur(kernel_size=3), hm.sobel_edge_detection()),
}


@pytest.mark.parametrize("op", list(IMAGE_OPS))
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int8", "int16"])
def test_image_ops_on_integer_images(device, run_on, assert_close, dtype, op):
    """An integer image (uint8: the usual one) filters as its float32 copy does (the image
    ops' convention), in one generated kernel where float32 images get one."""
    img = small_range(dtype, (300, 260), 20, low=0, high=255)
    fn = IMAGE_OPS[op]
    got = run_on(device, fn, img)
    expected = run_on(device, lambda t: fn(t.astype("float32")), img)
    assert_close(got, expected)
    if "fused_stencil" in device.fused_ops:  # the cast joins the stencil kernel
        with hm.device(device):
            ints, floats = (fn(hm.asarray(a)).explain() for a in (img, img.astype(np.float32)))
        assert len(ints.kernels) == len(floats.kernels)


def _plain(device):
    return device.kind in ("cpu", "opencl", "cuda")  # the built-in backends generate kernels


@pytest.mark.parametrize("dtype", NEW)
def test_generated_kernels_run(device, dtype):
    """The fused programs above run as generated kernels, not the NumPy fallback (a
    renderer that lacked a dtype would fall back silently)."""
    if not _plain(device):
        pytest.skip(f"{device} is a plug-in device without generated kernels")
    x = full_range(dtype, BIG, 21)
    with hm.device(device):
        a, b = hm.asarray(x), hm.asarray(x[::-1].copy())
        for out in ((a + b) * b // hm.bitwise_or(a, 1), ((a + b) % (b + 3)).sum(axis=1),
                    hm.where(a > b, -a, b ** 2).astype("float32")):
            for kernel in out.explain().kernels:
                assert kernel.source is not None, f"{kernel.ops} on {device} runs no kernel"


@pytest.mark.parametrize("dtype", NEW)
def test_python_scalar_limits_as_kernel_arguments(device, each_case, assert_close, dtype):
    """Python ints at the dtype's limits reach the kernels as scalars of that dtype (uint64's
    top half does not fit a C ``long``)."""
    x = full_range(dtype, BIG, 23)
    info = np.iinfo(dtype)
    hi, lo = int(info.max), int(info.min)
    got = each_case(device, [lambda t: t + hi, lambda t: t * lo + 1,
                                     lambda t: (t - 1) // hi, lambda t: hm.maximum(t * 1, hi - 1),
                                     lambda t: hm.where(t > hi // 2, t, lo)], x)
    with np.errstate(all="ignore"):
        assert_close(got[0], x + hi)
        assert_close(got[1], x * np.array(lo, dtype) + np.array(1, dtype))
        assert_close(got[2], (x - np.array(1, dtype)) // np.array(hi, dtype))
        assert_close(got[3], np.maximum(x, np.array(hi - 1, dtype)))
        assert_close(got[4], np.where(x > hi // 2, x, np.array(lo, dtype)))


@pytest.mark.parametrize("dtype", NEW)
def test_creation_functions(device, run_on, assert_close, dtype):
    info = np.iinfo(dtype)
    hi, lo = int(info.max), int(info.min)
    with hm.device(device):
        got = hm.compute(hm.full((3, 2), hi, dtype=dtype), hm.full((4,), lo, dtype=dtype),
                         hm.zeros((2,), dtype=dtype), hm.ones((2, 2), dtype=dtype),
                         hm.arange(0, 90, 7, dtype=dtype), hm.eye(3, k=1, dtype=dtype),
                         hm.asarray([lo, 0, hi], dtype=dtype),
                         hm.full_like(hm.asarray(np.zeros(3, np.float32)), 5, dtype=dtype))
    want = [np.full((3, 2), hi, dtype), np.full((4,), lo, dtype), np.zeros(2, dtype),
            np.ones((2, 2), dtype), np.arange(0, 90, 7, dtype=dtype), np.eye(3, k=1, dtype=dtype),
            np.array([lo, 0, hi], dtype), np.full(3, 5, dtype)]
    for g, w in zip(got, want):
        assert_close(g.numpy(), w)
    with pytest.raises(OverflowError, match=f"{hi + 1}"):
        hm.full((2,), hi + 1, dtype=dtype)
