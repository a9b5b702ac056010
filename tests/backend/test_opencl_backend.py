"""Direct tests of the OpenCL backend: hand-built OpSpecs, results compared with NumPy/SciPy."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from reference_ops import ARITHMETIC, COMPARISONS, UNARY_MATH

from hermes_nb.backends.opencl import device as opencl
from hermes_nb.ir.node import OpSpec

pytestmark = pytest.mark.opencl

DEVICES = opencl.discover()
if not DEVICES:
    pytest.skip("no OpenCL device (pyopencl and a platform such as PoCL)", allow_module_level=True)

FLOATS = [np.float32, np.float64]
INTS = [np.int32, np.int64]
ALL = [np.bool_, *INTS, *FLOATS]


@pytest.fixture(scope="module")
def dev() -> opencl.OpenCLDevice:
    return DEVICES[0]


def make_spec(dev, op, shape, dtype, ins, **attrs) -> OpSpec:
    return OpSpec(
        op=op,
        shape=tuple(shape),
        dtype=np.dtype(dtype),
        in_shapes=tuple(tuple(np.shape(x)) for x in ins),
        in_dtypes=tuple(np.asarray(x).dtype for x in ins),
        attrs=attrs,
        device=dev.id,
    )


def run(dev, op, shape, dtype, ins, **attrs) -> np.ndarray:
    ins = [np.asarray(x) for x in ins]
    out = dev.execute(make_spec(dev, op, shape, dtype, ins, **attrs), [dev.from_host(x) for x in ins])
    assert tuple(out.shape) == tuple(shape) and out.dtype == np.dtype(dtype)
    host = dev.to_host(out)
    assert host.shape == tuple(shape) and host.dtype == np.dtype(dtype)
    return host


def close(got, want, dtype=None, rtol=None, atol=0.0) -> None:
    dtype = np.dtype(dtype or np.asarray(want).dtype)
    if rtol is None:
        rtol = 1e-5 if dtype == np.float32 else 1e-12
    if dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def rand(shape, dtype, rng, lo=-5, hi=5) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(lo, hi, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


SPECIAL = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 1e-3, 3.0, -7.25, np.nan, np.inf, -np.inf]


# --- device, discovery, memory ----------------------------------------------------------------


def test_device_attributes(dev):
    assert dev.kind == "opencl" and dev.id == "opencl:0"
    assert dev.memory_bytes > 0 and dev.compute_units >= 1
    assert isinstance(dev.fp64, bool) and dev.name
    assert [d.index for d in DEVICES] == list(range(len(DEVICES)))


def test_import_without_pyopencl():
    import subprocess

    code = (
        "import sys; sys.modules['pyopencl'] = None\n"
        "from hermes_nb.backends.opencl import device as opencl\n"
        "assert opencl.discover() == []\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_kernel_dir():
    from hermes_nb.codegen import opencl_templates

    assert (opencl_templates.kernel_dir() / "fused_elementwise.cl").is_file()


def test_discover_without_pyopencl(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyopencl", None)  # makes `import pyopencl` fail
    assert opencl.discover() == []


def test_discover_without_platform(monkeypatch):
    import pyopencl as cl

    def no_icd():
        raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(cl, "get_platforms", no_icd)
    assert opencl.discover() == []


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5,), (4, 3)])
def test_roundtrip(dev, dtype, shape):
    x = rand(shape, dtype, np.random.default_rng(0))
    buf = dev.from_host(x)
    assert tuple(buf.shape) == shape and buf.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(dev.to_host(buf), x)


def test_from_host_non_contiguous(dev):
    x = np.arange(24.0).reshape(4, 6)
    for view in (x[::-1], x[:, ::-2], x.T, x[1:3, 2:]):
        np.testing.assert_array_equal(dev.to_host(dev.from_host(view)), view)


def test_memory_in_use(dev):
    # a buffer the device made (on a host-unified device from_host may wrap the array)
    before = dev.memory_in_use()
    buf = dev.empty((1 << 16,), np.float32)
    assert dev.memory_in_use() >= before + (1 << 18)
    del buf
    dev.synchronize()


# --- elementwise ---------------------------------------------------------------------------------

FLOAT_UNARY = UNARY_MATH


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_unary(dev, op, dtype):
    x = np.array([*SPECIAL, *np.linspace(-20, 20, 37)], dtype=dtype).reshape(5, 10)
    got = run(dev, op, x.shape, dtype, [x])
    want = FLOAT_UNARY[op](x).astype(dtype)
    close(got, want, rtol=3e-6 if dtype == np.float32 else 1e-13, atol=1e-30)
    if op in ("negative", "abs", "relu", "floor", "ceil", "round"):  # exact, incl. signed zeros
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["negative", "abs", "relu", "floor", "ceil", "round"])
def test_int_unary(dev, op, dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, -1, 7, -8, info.min, info.max], dtype=dtype)
    want = {"relu": lambda v: np.maximum(v, 0)}.get(op, getattr(np, op, None))(x)
    close(run(dev, op, x.shape, dtype, [x]), np.asarray(want, dtype=dtype))


def test_logical_not(dev):
    x = np.array([[True, False], [False, False]])
    close(run(dev, "logical_not", x.shape, bool, [x]), ~x)


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_astype(dev, src, dst):
    if np.dtype(src).kind == "f":  # values every target can hold (float->int overflow is UB)
        x = np.array([0.0, -0.0, 1.0, -1.75, 2.5, 1e6, -3.9, 0.1], dtype=src)
        if np.dtype(dst).kind == "b":
            x = np.append(x, [np.nan, np.inf]).astype(src)
    else:
        x = rand((3, 4), src, np.random.default_rng(1), -1000, 1000)
    close(run(dev, "astype", x.shape, dst, [x]), x.astype(dst))


def test_astype_int_wraps(dev):
    x = np.array([2**31, 2**32 + 5, -(2**31) - 1], dtype=np.int64)
    close(run(dev, "astype", x.shape, np.int32, [x]), x.astype(np.int32))


FLOAT_BINARY = ARITHMETIC
COMPARE = COMPARISONS


def _pairs(dtype):
    vals = np.array([*SPECIAL, 4.0, -4.0, 0.3, -1.1], dtype=dtype)
    a, b = np.meshgrid(vals, vals)
    return a, b


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_float_binary(dev, op, dtype):
    a, b = _pairs(dtype)
    got = run(dev, op, a.shape, dtype, [a, b])
    want = FLOAT_BINARY[op](a, b).astype(dtype)
    close(got, want, rtol=3e-6 if dtype == np.float32 else 1e-14, atol=1e-30)
    if op in ("add", "subtract", "multiply", "maximum", "minimum", "remainder", "floor_divide"):
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.signbit(got)[finite], np.signbit(want)[finite])


@pytest.mark.parametrize("dtype", [*FLOATS, *INTS])
@pytest.mark.parametrize("op", sorted(COMPARE))
def test_compare(dev, op, dtype):
    if np.dtype(dtype).kind == "f":
        a, b = _pairs(dtype)
    else:
        a, b = (rand((6, 7), dtype, np.random.default_rng(s), -3, 3) for s in (2, 3))
    close(run(dev, op, a.shape, bool, [a, b]), COMPARE[op](a, b))


@pytest.mark.parametrize("dtype", INTS)
def test_int_arithmetic(dev, dtype):
    info = np.iinfo(dtype)
    vals = np.array([0, 1, -1, 2, -2, 3, -7, 7, 100, -100, info.min, info.max], dtype=dtype)
    a, b = np.meshgrid(vals, vals)
    with np.errstate(all="ignore"):
        for op, fn in [
            ("add", np.add),
            ("subtract", np.subtract),
            ("multiply", np.multiply),
            ("maximum", np.maximum),
            ("minimum", np.minimum),
            ("floor_divide", np.floor_divide),
            ("remainder", np.remainder),
        ]:
            close(run(dev, op, a.shape, dtype, [a, b]), fn(a, b))


@pytest.mark.parametrize("dtype", INTS)
def test_int_pow(dev, dtype):
    base = np.array([0, 1, -1, 2, -3, 5, 1000], dtype=dtype)[:, None]
    exp = np.array([0, 1, 2, 3, 7, 31, 63], dtype=dtype)[None, :]
    a, b = np.broadcast_arrays(base, exp)
    close(run(dev, "pow", a.shape, dtype, [a, b]), np.power(a, b))
    # NumPy raises for negative exponents; we give the exact integer result or 0.
    neg = np.array([-1, -2, -3], dtype=dtype)
    for x, want in [(1, [1, 1, 1]), (-1, [-1, 1, -1]), (2, [0, 0, 0])]:
        got = run(dev, "pow", (3,), dtype, [np.full(3, x, dtype), neg])
        close(got, np.array(want, dtype))


def test_bool_ops(dev):
    a, b = np.meshgrid([False, True], [False, True])
    for op, fn in [
        ("logical_and", np.logical_and),
        ("logical_or", np.logical_or),
        ("add", np.add),
        ("multiply", np.multiply),
        ("maximum", np.maximum),
        ("minimum", np.minimum),
        ("equal", np.equal),
        ("not_equal", np.not_equal),
        ("less", np.less),
    ]:
        close(run(dev, op, a.shape, bool, [a, b]), fn(a, b))


BROADCASTS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 4), ()),
    ((3, 4), (1,)),
    ((), (3, 4)),
    ((2, 1, 4), (3, 1)),
    ((5, 1, 1, 3), (1, 4, 2, 1)),
    ((1, 7), (6, 1)),
    ((0, 3), (3,)),
    ((2, 0), (1, 1)),
    ((), ()),
]


@pytest.mark.parametrize(("sa", "sb"), BROADCASTS)
def test_broadcasting(dev, sa, sb):
    rng = np.random.default_rng(4)
    a, b = rand(sa, np.float32, rng), rand(sb, np.float32, rng)
    shape = np.broadcast_shapes(sa, sb)
    close(run(dev, "subtract", shape, np.float32, [a, b]), a - b)
    close(run(dev, "less", shape, bool, [a, b]), a < b)
    ia, ib = rand(sa, np.int64, rng), rand(sb, np.int64, rng)
    close(run(dev, "multiply", shape, np.int64, [ia, ib]), ia * ib)


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), ()), ((2, 1, 1), (1, 3, 1), (4,)), ((), (), ())],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_where(dev, shapes, dtype):
    rng = np.random.default_rng(5)
    c = rand(shapes[0], bool, rng)
    a, b = rand(shapes[1], dtype, rng), rand(shapes[2], dtype, rng)
    shape = np.broadcast_shapes(*shapes)
    close(run(dev, "where", shape, dtype, [c, a, b]), np.where(c, a, b))


def test_program_count_bounded_by_variant(dev):
    rng = np.random.default_rng(6)
    run(dev, "add", (2, 3), np.float32, [rand((2, 3), np.float32, rng)] * 2)
    run(dev, "add", (2, 3), np.float32, [rand((2, 3), np.float32, rng), rand((3,), np.float32, rng)])
    before = len(dev.programs)
    for shape in [(7,), (5, 9), (2, 3, 4), (1, 1000)]:
        run(dev, "add", shape, np.float32, [rand(shape, np.float32, rng)] * 2)
        run(dev, "add", shape, np.float32, [rand(shape, np.float32, rng), rand(shape[-1:], np.float32, rng)])
    assert len(dev.programs) == before


def test_to_device_is_identity(dev):
    x = np.arange(10.0)[::2]  # strided: from_host copies it into the device's own buffer
    buf = dev.from_host(x)
    assert dev.execute(make_spec(dev, "to_device", (5,), np.float64, [x]), [buf]) is buf


def test_to_device_of_a_wrapped_input_is_its_own_copy(dev):
    # a result must not read the caller's array in place: a later write would change it
    x = np.arange(5.0)
    out = dev.execute(make_spec(dev, "to_device", (5,), np.float64, [x]), [dev.from_host(x)])
    host = dev.to_host(out)
    x[:] = -1.0
    np.testing.assert_array_equal(host, np.arange(5.0))


# --- sources -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(), (0,), (3, 5)])
def test_full(dev, dtype, shape):
    value = {"b": True, "i": -7, "f": 2.5}[np.dtype(dtype).kind]
    close(run(dev, "full", shape, dtype, [], fill_value=value), np.full(shape, value, dtype))


@pytest.mark.parametrize(
    ("start", "step", "n", "dtype"),
    [(0, 1, 10, np.int64), (5, -2, 7, np.int32), (0.0, 0.1, 50, np.float64),
     (1.5, 0.25, 9, np.float32), (0, 1, 0, np.int64), (-3, 3, 4, np.float32)],
)  # fmt: skip
def test_arange(dev, start, step, n, dtype):
    want = (start + np.arange(n, dtype=np.float64) * step).astype(dtype)
    close(run(dev, "arange", (n,), dtype, [], start=start, step=step), want)


# --- reductions --------------------------------------------------------------------------------

REDUCE_CASES = [
    ((5,), (0,)),
    ((4, 6), (0,)),
    ((4, 6), (1,)),
    ((4, 6), (0, 1)),
    ((3, 4, 5), (1,)),
    ((3, 4, 5), (0, 2)),
    ((2, 3, 4, 5), (1, 3)),
    ((7, 300), (1,)),
    ((300, 7), (0,)),
    ((3, 5000), (1,)),
    ((2, 0, 3), (1,)),
    ((2, 0, 3), (0,)),
    ((1000, 3), (1,)),
    ((50, 300), (0,)),  # the rest reduce in place over columns (no transpose)
    ((3, 40, 100), (1,)),
    ((6, 5, 4, 50), (1, 2)),
    ((100, 2, 300), (1,)),
]


def _reduce_params():
    for op in ("sum", "prod", "max", "min"):
        for shape, axes in REDUCE_CASES:
            if op in ("max", "min") and 0 in [shape[a] for a in axes]:
                continue  # never called on empty axes
            yield op, shape, axes


@pytest.mark.parametrize(("op", "shape", "axes"), list(_reduce_params()))
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_reduce(dev, op, dtype, shape, axes, keepdims):
    size = int(np.prod(shape))
    rng = np.random.default_rng(7)
    lo, hi = (0.9, 1.1) if op == "prod" else (-5, 5)  # no underflow to subnormals
    x = rand(shape, dtype, rng, lo, hi) if size else np.zeros(shape, dtype)
    if op == "prod" and np.dtype(dtype).kind == "i":
        x = rng.choice(np.array([1, -1, 2], dtype), size=shape)
    want = getattr(np, op)(x, axis=axes, keepdims=keepdims).astype(dtype)
    got = run(dev, op, want.shape, dtype, [x], axes=axes, keepdims=keepdims)
    close(got, want, rtol=1e-4 if op in ("sum", "prod") and dtype == np.float32 else None,
          atol=1e-4 if op == "sum" else 0)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float64])
def test_reduce_other_dtypes(dev, dtype):
    x = rand((6, 40, 3), dtype, np.random.default_rng(8))
    for op in ("max", "min"):
        want = getattr(np, op)(x, axis=(1,))
        close(run(dev, op, want.shape, dtype, [x], axes=(1,), keepdims=False), want)
    if np.dtype(dtype).kind != "b":
        want = x.sum(axis=(0, 2), dtype=dtype)
        close(run(dev, "sum", want.shape, dtype, [x], axes=(0, 2), keepdims=False), want)


def test_int_sum_wraps(dev):
    x = np.full(1000, np.iinfo(np.int32).max // 3, np.int32)
    close(run(dev, "sum", (), np.int32, [x], axes=(0,), keepdims=False), x.sum(dtype=np.int32))


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reduce_nan_inf(dev, op):
    x = np.ones((4, 200), np.float32)
    x[0, 17] = np.nan
    x[1, 3], x[1, 150] = np.inf, -np.inf
    x[2, 199] = np.inf
    x[3, :] = -np.inf
    with np.errstate(invalid="ignore"):
        want = getattr(np, op)(x, axis=1)
    close(run(dev, op, (4,), np.float32, [x], axes=(1,), keepdims=False), want)
    for shape in [(1, 1 << 16), (1 << 16, 1)]:  # NaN inside the two-pass path and the serial one
        y = np.ones(shape, np.float32)
        y.flat[12345] = np.nan
        got = run(dev, op, (), np.float32, [y], axes=(0, 1), keepdims=False)
        assert np.isnan(got)
    z = np.ones((100, 400), np.float32)  # column path
    z[50, 7], z[99, 399], z[0, 0] = np.nan, np.inf, -np.inf
    close(run(dev, op, (400,), np.float32, [z], axes=(0,), keepdims=False), getattr(np, op)(z, axis=0))


def test_big_sum_accurate(dev):
    x = np.random.default_rng(9).random(1 << 24, dtype=np.float32)
    got = run(dev, "sum", (), np.float32, [x], axes=(0,), keepdims=False)
    want = x.sum(dtype=np.float64)
    assert abs(got - want) / want < 1e-6


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((7,), 0),
        ((5, 9), 0),
        ((5, 9), 1),
        ((3, 4, 100), 2),
        ((3, 5000), 1),
        ((2, 30, 3), 1),
        ((40, 300), 0),
        ((3, 50, 100), 1),
    ],
)
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_reduce(dev, op, dtype, shape, axis, keepdims):
    rng = np.random.default_rng(10)
    x = rand(shape, dtype, rng, -3, 3)  # few distinct values: many ties
    want = getattr(np, op)(x, axis=axis, keepdims=keepdims)
    got = run(dev, op, want.shape, np.int64, [x], axes=(axis,), keepdims=keepdims)
    close(got, want)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reduce_nan(dev, op):
    x = np.zeros((3, 3000), np.float32)
    x[0, [5, 2000]] = np.nan
    x[1, [2999]] = np.nan
    x[2, :] = np.inf if op == "argmin" else -np.inf
    x[2, 1500] = np.inf if op == "argmax" else -np.inf
    want = getattr(np, op)(x, axis=1)
    close(run(dev, op, (3,), np.int64, [x], axes=(1,), keepdims=False), want)
    close(run(dev, op, (3000,), np.int64, [x], axes=(0,), keepdims=False), getattr(np, op)(x, axis=0))
    y = np.arange(1 << 18, dtype=np.float32)
    y[[70000, 200000]] = np.nan
    close(run(dev, op, (), np.int64, [y], axes=(0,), keepdims=False), getattr(np, op)(y))


# --- movement ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float64])
def test_reshape_permute_broadcast(dev, dtype):
    x = rand((2, 3, 4), dtype, np.random.default_rng(11))
    close(run(dev, "reshape", (4, 6), dtype, [x]), x.reshape(4, 6))
    close(run(dev, "reshape", (), dtype, [x[:1, :1, :1]]), x[:1, :1, :1].reshape(()))
    for axes in [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1), (2, 0, 1)]:
        close(run(dev, "permute", np.transpose(x, axes).shape, dtype, [x], axes=axes),
              np.transpose(x, axes))  # fmt: skip
    for src, dst in [((3, 1), (2, 3, 5)), ((), (4,)), ((4,), (3, 4)), ((1,), (0,)), ((2, 1), (2, 0))]:
        y = rand(src, dtype, np.random.default_rng(12))
        close(run(dev, "broadcast_to", dst, dtype, [y]), np.broadcast_to(y, dst))


def test_permute_zero_size_and_0d(dev):
    x = np.zeros((3, 0, 2), np.float32)
    close(run(dev, "permute", (2, 3, 0), np.float32, [x], axes=(2, 0, 1)), x.transpose(2, 0, 1))
    s = np.array(3.5, np.float32)
    close(run(dev, "permute", (), np.float32, [s], axes=()), s)


SLICES = [
    # (input shape, per-dim (start, step, size, keep))
    ((10,), [(2, 3, 3, True)]),
    ((10,), [(9, -1, 10, True)]),
    ((10,), [(8, -3, 3, True)]),
    ((10,), [(4, 1, 1, False)]),
    ((6, 7), [(5, -2, 3, True), (1, 2, 3, True)]),
    ((6, 7), [(2, 1, 1, False), (6, -1, 7, True)]),
    ((6, 7), [(0, 1, 0, True), (0, 1, 7, True)]),
    ((4, 5, 6), [(3, -1, 4, True), (2, 1, 1, False), (5, -5, 2, True)]),
    ((4, 5, 6), [(1, 1, 1, False), (3, 1, 1, False), (0, 1, 1, False)]),
]


@pytest.mark.parametrize(("shape", "dims"), SLICES)
def test_slice(dev, shape, dims):
    x = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    index = tuple(slice(b, b + k * n if b + k * n >= 0 else None, k) if keep else b for b, k, n, keep in dims)
    want = x[index]
    starts, steps, sizes, keep = (tuple(d[i] for d in dims) for i in range(4))
    got = run(dev, "slice", want.shape, np.int64, [x],
              starts=starts, steps=steps, sizes=sizes, keep=keep)  # fmt: skip
    close(got, want)


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int64])
def test_concat(dev, dtype):
    rng = np.random.default_rng(13)
    for shapes, axis in [
        ([(2, 3), (4, 3)], 0),
        ([(2, 3), (2, 1), (2, 5)], 1),
        ([(2, 0, 4), (2, 3, 4), (2, 0, 4)], 1),
        ([(3,), (0,), (5,)], 0),
        ([(2, 3, 1), (2, 3, 2)], 2),
    ]:
        parts = [rand(s, dtype, rng) for s in shapes]
        want = np.concatenate(parts, axis=axis)
        close(run(dev, "concat", want.shape, dtype, parts, axis=axis), want)


# --- matmul ------------------------------------------------------------------------------------

MATMUL = [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((17, 33), (33, 18)),
    ((64, 64), (64, 64)),
    ((2, 5, 7), (7, 3)),
    ((5, 7), (4, 7, 3)),
    ((2, 1, 5, 7), (3, 7, 2)),
    ((3, 0), (0, 4)),
    ((0, 3), (3, 4)),
    ((2, 0, 3, 4), (4, 5)),
]


@pytest.mark.parametrize(("sa", "sb"), MATMUL)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_matmul(dev, sa, sb, dtype):
    rng = np.random.default_rng(14)
    a, b = rand(sa, dtype, rng), rand(sb, dtype, rng)
    want = np.matmul(a, b)
    # float32 sums in another order differ by a few ulps of the terms, not of the result
    scale = float(np.max(np.abs(a).astype(np.float64) @ np.abs(b))) if a.size and b.size else 0.0
    atol = 4e-7 * scale if dtype == np.float32 else 0.0
    close(run(dev, "matmul", want.shape, dtype, [a, b]), want,
          rtol=1e-5 if dtype == np.float32 else 1e-12, atol=atol)


def test_matmul_int_wraps(dev):
    a = np.full((2, 3), 2**20, np.int32)
    b = np.full((3, 2), 2**15, np.int32)
    close(run(dev, "matmul", (2, 2), np.int32, [a, b]), a @ b)


# --- conv2d ------------------------------------------------------------------------------------

SCIPY_MODES = {"reflect101": "mirror", "reflect": "reflect", "replicate": "nearest", "constant": "constant"}


def conv_ref(x, w, border):
    from scipy.ndimage import correlate

    flat = x.reshape(-1, *x.shape[-2:]).astype(np.float64)
    out = [correlate(img, np.asarray(w), mode=SCIPY_MODES[border], cval=0.0) for img in flat]
    return np.asarray(out).reshape(x.shape)


@pytest.mark.parametrize("border", sorted(SCIPY_MODES))
@pytest.mark.parametrize(
    ("shape", "kshape"),
    [((9, 11), (3, 3)), ((2, 3, 16, 20), (5, 3)), ((1, 7), (3, 3)), ((7, 1), (5, 5)),
     ((2, 2), (5, 7)), ((3, 4), (9, 9)), ((1, 1), (3, 3)), ((4, 5), (1, 1))],
)  # fmt: skip
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv2d(dev, shape, kshape, border, dtype):
    rng = np.random.default_rng(15)
    x = rng.random(shape).astype(dtype)
    w = rng.uniform(-1, 1, size=kshape)
    weights = tuple(tuple(float(v) for v in row) for row in w)
    got = run(dev, "conv2d", shape, dtype, [x], weights=weights, border=border, separable=None)
    close(got, conv_ref(x, w, border).astype(dtype), rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("border", sorted(SCIPY_MODES))
def test_conv2d_separable(dev, border):
    rng = np.random.default_rng(16)
    x = rng.random((2, 13, 10)).astype(np.float32)
    col, row = (1.0, 2.0, 1.0), (-1.0, 0.0, 1.0, 0.5, 0.25)
    w = np.outer(col, row)
    weights = tuple(tuple(float(v) for v in r) for r in w)
    got = run(dev, "conv2d", x.shape, np.float32, [x], weights=weights, border=border, separable=(col, row))
    close(got, conv_ref(x, w, border).astype(np.float32), atol=1e-5)


def test_conv2d_zero_size(dev):
    x = np.zeros((0, 4, 5), np.float32)
    got = run(dev, "conv2d", x.shape, np.float32, [x], weights=((1.0,),), border="reflect", separable=None)
    assert got.shape == (0, 4, 5)


# --- errors ------------------------------------------------------------------------------------


def test_unsupported_op(dev):
    with pytest.raises(NotImplementedError, match="random on opencl:0"):
        dev.execute(make_spec(dev, "random", (3,), np.float32, []), [])


def test_no_fp64(dev, monkeypatch):
    monkeypatch.setattr(dev, "fp64", False)
    x = np.ones(3)
    with pytest.raises(TypeError, match=r"exp.*opencl:0.*float64"):
        dev.execute(make_spec(dev, "exp", (3,), np.float64, [x]), [dev.from_host(x)])


def test_build_error_propagates(dev):
    from hermes_nb.errors import KernelBuildError

    source = "__kernel void k(__global float* x) { x[0] = nope; }"
    expected = r"(?s)kernel 'k'.*opencl:\d.*undeclared identifier 'nope'"
    with pytest.raises(KernelBuildError, match=expected) as info:
        dev.programs.kernel(source, "k")
    assert source not in str(info.value)  # the saved file's path, never the whole source
    assert Path(info.value.source_path).read_text() == source
