"""Fused elementwise kernels from the C code generator (OpenCL C, CUDA C++).

(a) Fused programs on every device through the public API, against NumPy: each plan
    must be ONE kernel, and ``hm.options(fuse=False)`` must give the same values with
    more kernels. Op coverage packs every op of a result dtype into one program (a
    nested ``where`` picks op ``k`` for elements ``i % K == k``) so that each dtype costs
    a few kernel compiles, not one per op.
(b) Without a GPU: the CUDA source of representative programs compiles with ``nvcc``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from nvcc import compile_ptx, needs_nvcc
from scipy import special

import hermes_nb as hm
from hermes_nb.codegen import c_kernels, c_source
from hermes_nb.compiler import optimize
from hermes_nb.ir import dtypes
from hermes_nb.ir.node import toposort
from hermes_nb.ir.program import Program

# the real dtypes: the op families here are real ones (relu, floor, maximum, ...); the
# complex forms are tested in tests/unit/test_complex_source.py and test_complex.py
DTYPES = tuple(d for d in dtypes.NAMES if np.dtype(d).kind != "c")


def w2(a: Any, b: Any, c: Any) -> Any:
    return hm.exp(-(a * b + c) ** 2 * 0.5) + a if isinstance(a, hm.Tensor) else \
        np.exp(-(a * b + c) ** 2 * a.dtype.type(0.5)) + a


def _build(device: Any, fn: Callable[..., Any], *arrays: np.ndarray) -> hm.Tensor:
    with hm.device(device):
        return fn(*(hm.asarray(x) for x in arrays))


def check_fused(device: Any, fn: Callable[..., Any], ref: Callable[..., Any], *arrays: np.ndarray,
                assert_close: Callable[..., None], loose: bool = False) -> np.ndarray:
    """``fn`` on ``device`` is one fused kernel that matches NumPy's ``ref``, and the unfused
    graph gives the same numbers with more kernels."""
    if not device.fp64 and any(x.dtype == np.float64 for x in arrays):
        pytest.skip(f"{device.id} has no float64")
    if "fused_elementwise" not in device.fused_ops:
        pytest.skip(f"{device.id} runs no fused_elementwise kernels (not in its fused_ops)")
    with np.errstate(all="ignore"):
        want = np.asarray(ref(*arrays))
    t = _build(device, fn, *arrays)
    plan = t.explain()
    assert len(plan.kernels) == 1, plan
    got = t.numpy()
    assert_close(got, want, loose=loose)
    with hm.options(fuse=False):
        t2 = _build(device, fn, *arrays)
        assert len(t2.explain().kernels) > 1
        assert_close(t2.numpy(), got, loose=loose)
    return got


# ---------------------------------------------------------------------------------------------
# (a) the benchmark expression, shapes, broadcasting, special values


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4099,), (64,), (5, 7), (3,), (), (0,), (2, 0, 3)],
                         ids=lambda s: "x".join(map(str, s)) or "0d")
def test_w2(device, dtype, shape, sample, assert_close):
    a, b, c = (sample(shape, dtype, seed=k) for k in range(3))
    check_fused(device, w2, w2, a, b, c, assert_close=assert_close, loose=True)


def test_w2_resident_inputs(device, sample, assert_close):
    """Inputs already on the device (the benchmark's setting), size not a multiple of 8."""
    a, b, c = (sample((1001,), "float32", seed=k) for k in range(3))
    with hm.device(device):
        ins = [hm.asarray(x).compute() for x in (a, b, c)]
        t = w2(*ins)
    if "fused_elementwise" in device.fused_ops:
        assert len(t.explain().kernels) == 1
    assert_close(t.numpy(), w2(a, b, c), loose=True)


def test_w2_zero_d_literals(device, assert_close):
    """0-d constants become literals: the fused program has no inputs at all."""
    vals = [np.asarray(v, dtype=np.float32) for v in (0.5, -1.25, 2.0)]
    check_fused(device, w2, w2, *vals, assert_close=assert_close, loose=True)


@pytest.mark.parametrize(
    "shapes",
    [((4, 1, 5), (3, 1), (5,)), ((1,), (6, 8), (6, 1)), ((2, 3, 4), (1, 1, 1), ()),
     ((7, 1), (1, 9), (7, 9))],
    ids=str,
)
def test_broadcasting(device, shapes, sample, assert_close):
    a, b, c = (sample(s, "float32", seed=k) for k, s in enumerate(shapes))
    check_fused(device, w2, w2, a, b, c, assert_close=assert_close, loose=True)


def test_broadcasting_mixed(device, sample, assert_close):
    x = sample((3, 1, 4), "int32")
    y = sample((5, 1), "float64")
    m = sample((5, 4), "bool", seed=3)

    def fn(x, y, m):
        w = hm.where if isinstance(x, hm.Tensor) else np.where
        return w(m, x * 2 + y, (x > 0) * 1.5)

    check_fused(device, fn, fn, x, y, m, assert_close=assert_close)


def test_mixed_dtypes(device, sample, assert_close):
    """int32 with a float literal is float64; comparisons into where; astype chains; logic."""
    i = sample((257,), "int32")
    f = sample((257,), "float32", seed=1)
    b = sample((257,), "bool", seed=2)

    def fn(i, f, b):
        lib = hm if isinstance(i, hm.Tensor) else np
        half = i * 1.5  # float64
        chain = ((f * 3).astype("int32") + i).astype("int64").astype("float32") / 4
        pick = lib.where(lib.logical_or(lib.logical_and(i > 0, b), lib.logical_not(f < 1)),
                         half, chain.astype("float64"))
        return pick + (i // 3).astype("float64") - (b != (f > 0))

    check_fused(device, fn, fn, i, f, b, assert_close=assert_close)


def test_special_values(device, assert_close):
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3.5, -2.5, 1e30]
    x = np.array([s for s in specials for _ in specials] * 2, dtype=np.float32)
    y = np.array([s for _ in specials for s in specials] * 2, dtype=np.float32)

    def fn(x, y):
        lib = hm if isinstance(x, hm.Tensor) else np
        relu = lib.maximum(x, np.float32(0)) if lib is np else hm.relu(x)
        return lib.where(x > y, lib.maximum(x, y), lib.minimum(y, x)) * 2 + relu - \
            lib.where(lib.equal(x, y), lib.floor_divide(x, y), lib.remainder(x, y))

    check_fused(device, fn, fn, x, y, assert_close=assert_close)
    for dt in ("float32", "float64"):
        check_fused(device, lambda x, y: (x + y) * (x - y) / (x * 0.5),
                    lambda x, y: (x + y) * (x - y) / (x * x.dtype.type(0.5)),
                    x.astype(dt), y.astype(dt), assert_close=assert_close)


# ---------------------------------------------------------------------------------------------
# (a) every op, every dtype where it is defined

_UNARY: dict[str, Callable[[Any], Any]] = {
    "negative": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sigmoid": special.expit,
    "relu": lambda x: np.maximum(x, x.dtype.type(0)), "floor": np.floor, "ceil": np.ceil,
    "round": np.round, "logical_not": np.logical_not,
}
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "hypot": np.hypot, "equal": np.equal,
    "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}
Case = tuple[str, Callable[..., Any], Callable[..., Any]]


def _cases() -> list[Case]:
    """(name, NumPy fn(x, y, m), Hermes fn(x, y, m)); m is a bool array."""
    out: list[Case] = []
    for name, f in _UNARY.items():
        out.append((name, lambda x, y, m, f=f: f(x), lambda x, y, m, n=name: getattr(hm, n)(x)))
    for name, g in _BINARY.items():
        if name == "pow":  # integer powers need exponents >= 0 (NumPy raises otherwise)
            out.append((name, lambda x, y, m: np.power(x, np.abs(y)) if x.dtype.kind == "i"
                        else np.power(x, y),
                        lambda x, y, m: hm.pow(x, hm.abs(y)) if x.dtype.kind == "i"
                        else hm.pow(x, y)))
            continue
        out.append((name, lambda x, y, m, g=g: g(x, y),
                    lambda x, y, m, n=name: getattr(hm, n)(x, y)))
    out.append(("where", lambda x, y, m: np.where(m, x, y), lambda x, y, m: hm.where(m, x, y)))
    for dt in DTYPES:
        out.append((f"astype_{dt}", lambda x, y, m, d=dt: x.astype(d),
                    lambda x, y, m, d=dt: hm.astype(x, d)))
    for dt in _NARROW:
        # a float outside the range of a narrow or unsigned integer (NaN, -1.5 to uint32)
        # converts as C and NumPy's build happen to (undefined): convert |x| where finite
        out.append((f"astype_{dt}_in_range",
                    lambda x, y, m, d=dt: np.where(np.isfinite(x), np.abs(x), 0).astype(d),
                    lambda x, y, m, d=dt: hm.astype(hm.where(hm.isfinite(x), hm.abs(x), 0), d)))
    return out


_NARROW = ("int8", "int16", "uint8", "uint16", "uint32", "uint64")


def _float_cast_defined(name: str, dtype: str) -> bool:
    """Whether case ``name`` on ``dtype`` operands has one result: not a plain cast of
    floats to a narrow or unsigned integer (the ``_in_range`` cases cover those)."""
    return not (np.dtype(dtype).kind == "f" and name.removeprefix("astype_") in _NARROW)


def _inputs(dtype: str, n: int, sample: Callable[..., np.ndarray]) -> tuple[np.ndarray, ...]:
    x = sample((n,), dtype, seed=1)
    y = sample((n,), dtype, seed=2, low=-6, high=6) if np.dtype(dtype).kind in "iu" else \
        sample((n,), dtype, seed=2)
    if dtype in ("float32", "float64"):  # special values at a few places, and exact zeros
        x[::11], y[::13] = np.nan, 0.0
        x[1::17], y[2::19] = np.inf, -np.inf
        x[3::23] = -0.0
    return x, y, sample((n,), "bool", seed=3)


def _wide(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float64) if v.dtype.kind in "iu" else v


def _groups(dtype: str, x: np.ndarray, y: np.ndarray, m: np.ndarray) -> dict[str, list[Case]]:
    """The cases defined on ``dtype`` (by NumPy and by Hermes), by result dtype."""
    groups: dict[str, list[Case]] = {}
    for case in _cases():
        _, ref, fn = case
        if not _float_cast_defined(case[0], dtype):
            continue
        try:
            with np.errstate(all="ignore"):
                want = np.asarray(ref(x[:4], y[:4], m[:4]))
            got = fn(*(hm.asarray(v[:4]) for v in (x, y, m)))
        except (TypeError, ValueError):
            continue  # not defined on this dtype
        if got.dtype == np.float64 and want.dtype.kind == "f" and x.dtype.kind in "iu":
            # NumPy computes float functions of int8/int16 in float16/float32, Hermes in
            # float64: the reference takes float64 operands
            name, ref, fn = case
            case = (name, lambda a, b, c, ref=ref: ref(_wide(a), _wide(b), c), fn)
            with np.errstate(all="ignore"):
                want = np.asarray(case[1](x[:4], y[:4], m[:4]))
        if want.dtype.name in DTYPES and got.dtype == want.dtype:
            groups.setdefault(want.dtype.name, []).append(case)
    return groups


def _select(lib: Any, cases: list[Case], k: int, sel: Any, x: Any, y: Any, m: Any) -> Any:
    """Element ``i`` gets case ``i % len(cases)``, through nested where."""
    out = cases[-1][k](x, y, m)
    for j in range(len(cases) - 2, -1, -1):
        out = lib.where(lib.equal(sel, j), cases[j][k](x, y, m), out)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_op(device, dtype, sample, assert_close):
    n = 67 * 8 + 5
    x, y, m = _inputs(dtype, n, sample)
    groups = _groups(dtype, x, y, m)
    covered = {name for cases in groups.values() for name, _, _ in cases}
    assert {"add", "multiply", "equal", "where", "logical_and", "astype_float64"} <= covered
    if dtype != "bool":
        assert {"pow", "maximum", "floor_divide", "remainder", "abs", "exp"} <= covered
    for _, cases in sorted(groups.items()):
        cases = cases * 2 if len(cases) == 1 else cases  # a lone op would not be fused
        sel = (np.arange(n) % len(cases)).astype(np.int32)
        check_fused(
            device,
            lambda x, y, m, s, cases=cases: _select(hm, cases, 2, s, x, y, m),
            lambda x, y, m, s, cases=cases: _select(np, cases, 1, s, x, y, m),
            x, y, m, sel, assert_close=assert_close, loose=True,
        )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_vector_op(device, dtype, sample, assert_close):
    """Float-only programs (the OpenCL ``floatN`` path): every op it renders, with NaN/Inf,
    a size with a tail, a bool input and a bool output."""
    n = 8 * 40 + 3
    x, y, m = _inputs(dtype, n, sample)
    names = ["negative", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu",
             "floor", "ceil", "round", "add", "subtract", "multiply", "divide",
             "maximum", "minimum", "hypot", "where"]  # sin, cos, pow run scalar (see below)
    cases = [c for c in _cases() if c[0] in names]
    cases.append(("astype_roundtrip", lambda x, y, m: (x > 0).astype(x.dtype) * y,
                  lambda x, y, m: hm.astype(x > 0, x.dtype) * y))
    sel = (np.arange(n) % len(cases)).astype(dtype)  # float selector: comparisons stay float
    check_fused(
        device,
        lambda x, y, m, s: _select(hm, cases, 2, s, x, y, m),
        lambda x, y, m, s: _select(np, cases, 1, s, x, y, m),
        x, y, m, sel, assert_close=assert_close, loose=True,
    )

    def masks(x, y, m):
        lib = hm if isinstance(x, hm.Tensor) else np
        a, b = lib.less(x, y), lib.greater_equal(x, 0.5)
        return lib.logical_or(lib.logical_and(a, lib.logical_not(b)),
                              lib.not_equal(lib.equal(x, y), lib.less_equal(y, x))) != m

    check_fused(device, masks, masks, x, y, m, assert_close=assert_close)


def test_small_sin_and_cos_are_accurate(device, assert_close):
    """Arguments near 0, where PoCL's vector sin and cos fail, on every device."""
    x = np.linspace(-1e-3, 1e-3, 8 * 64 + 5).astype(np.float32)
    with hm.device(device):
        a = hm.asarray(x)
        fused, alone = hm.sin(a) + hm.cos(a) * 2, hm.sin(a)
    assert_close(fused.numpy(), np.sin(x) + np.cos(x) * 2)
    assert_close(alone.numpy(), np.sin(x))


def test_vectorizable_programs():
    """W2 takes the vector path; integer or mixed-float programs do not."""

    def program(fn: Callable[..., Any], *dtypes: str) -> Program:
        (root,) = optimize([fn(*(hm.zeros((16,), d) for d in dtypes)).node])
        (node,) = [n for n in toposort([root]) if n.op == "fused_elementwise"]
        return node.attrs["program"]

    assert c_source.vectorizable(program(w2, "float32", "float32", "float32"))
    assert c_source.vectorizable(program(w2, "float64", "float64", "float64"))
    assert c_source.vectorizable(program(lambda a, m: hm.where(m, a * 2, -a), "float32", "bool"))
    assert not c_source.vectorizable(program(lambda a, b: a * 2 + b, "int32", "int32"))
    assert not c_source.vectorizable(program(lambda a, b: a * 2 + b, "float32", "float64"))
    # PoCL's vector sin/cos/pow are wrong (sin(0.001f) gave 0.008): those programs run scalar
    for fn in (lambda a: hm.sin(a) + 1, lambda a: hm.cos(a) * 2, lambda a: a ** 3.0 - 1):
        assert not c_source.vectorizable(program(fn, "float32"))
    source = c_kernels.render_source(program(w2, "float32", "float32", "float32"), "opencl")
    assert "float8" in source and "vload8" in source and "hfused" in source


# ---------------------------------------------------------------------------------------------
# (b) the CUDA source compiles (no GPU needed)


def _representative_programs() -> list[Program]:
    """The fused programs of the tests above, built on the default device and optimised."""
    progs: dict[str, Program] = {}

    def add(t: hm.Tensor) -> None:
        for node in toposort(optimize([t.node])):
            if node.op == "fused_elementwise":
                p = node.attrs["program"]
                progs[p.signature] = p

    def sample(shape, dtype, *, seed=0, low=None, high=None):
        # distinct values per seed, or CSE merges the inputs into one
        return ((np.arange(8) + seed) % (2 if dtype == "bool" else 5)).astype(dtype)

    for dt in ("float32", "float64"):
        with hm.device("cpu:0"):
            add(w2(*(hm.asarray(np.arange(8, dtype=dt) + k) for k in range(3))))
            add(w2(*(hm.asarray(np.asarray(v, dt)) for v in (0.5, 1.0, 2.0))))
    for dtype in DTYPES:
        x, y, m = _inputs(dtype, 8, sample)
        for cases in _groups(dtype, x, y, m).values():
            with hm.device("cpu:0"):
                sel = hm.asarray(np.zeros(8, np.int32))
                add(_select(hm, cases, 2, sel, *(hm.asarray(v) for v in (x, y, m))))
    with hm.device("cpu:0"):
        f = hm.asarray(np.ones(8, np.float32))
        add(f * float("inf") + hm.where(f > float("nan"), f, -f))
        i = hm.asarray(np.ones(8, np.int64))
        add(i * (-(2**63)) + (i * (-(2**31))).astype("int32") // 7)
    return list(progs.values())


# C types CuPy's ElementwiseKernel gives each dtype's parameters
_CUPY_TYPES = {"bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
               "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
               "uint32": "unsigned int", "uint64": "unsigned long long", "float32": "float",
               "float64": "double"}


def _cupy_like_kernel(program: Program, name: str) -> str:
    """What CuPy's ElementwiseKernel makes of ``cuda_elementwise_parts`` (minus its
    indexing): the preamble, then per element the params as values and the operation."""
    in_params, out_params, operation, preamble = c_kernels.cuda_elementwise_parts(program)
    params = [p.split() for p in f"{in_params}, {out_params}".strip(", ").split(", ")]
    args = ", ".join(f"{_CUPY_TYPES[t]}* _raw_{n}" for t, n in params)
    loads = "".join(f"        {_CUPY_TYPES[t]} {n} = _raw_{n}[i];\n" for t, n in params)
    return (
        f"{preamble}\n"
        f'extern "C" __global__ void {name}({args}, long long n) {{\n'
        "    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;"
        " i += (long long)blockDim.x * gridDim.x) {\n"
        f"{loads}        {operation}\n        _raw_y[i] = y;\n    }}\n}}\n"
    )


@needs_nvcc
def test_cuda_source_compiles(tmp_path):
    programs = _representative_programs()
    assert len(programs) >= 10
    # one translation unit: each program's standalone kernel and its CuPy-style twin in a
    # namespace of its own (helpers and hfused repeat across programs)
    units = [
        f"namespace p{k} {{\n"
        f"{c_kernels.cuda_kernel_source(p, name=f'hermes_fused_{k}')}}}\n"
        f"namespace q{k} {{\n{_cupy_like_kernel(p, f'cupy_like_{k}')}}}\n"
        for k, p in enumerate(programs)
    ]
    ptx = compile_ptx("\n".join(units), tmp_path, "fused")
    for k in range(len(programs)):
        assert f".entry hermes_fused_{k}(" in ptx and f".entry cupy_like_{k}(" in ptx
