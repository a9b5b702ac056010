"""The Numba CPU code generator against the NumPy interpreter of fused programs.

Compiling a parallel kernel takes about a second, so each dtype gets one program
holding every op as a separate output, and the broadcasting tests share one
program across shapes.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba", reason="the CPU code generator needs numba")

import scipy.ndimage

import hermes_nb as hm
from hermes_nb.codegen import numba_cpu
from hermes_nb.compiler import fuse_elementwise
from hermes_nb.ir import dtypes
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.program import Instr, Program

INTERP = ArrayOps(np, scipy.ndimage)
# the real dtypes: the op families here are real ones (relu, floor, maximum, ...); the
# complex forms are tested in tests/unit/test_complex_source.py and test_complex.py
DTYPES = tuple(d for d in dtypes.NAMES if np.dtype(d).kind != "c")
TOL = {"float32": (1e-6, 1e-6), "float64": (1e-14, 1e-14)}

FLOAT_UNARY = ("negative", "abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu",
               "floor", "ceil", "round")
INT_UNARY = ("negative", "abs", "relu", "floor", "ceil", "round")
NUMERIC_BINARY = ("add", "subtract", "multiply", "floor_divide", "remainder", "maximum", "minimum")
COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def interpret(program: Program, inputs: list[np.ndarray], output: int) -> np.ndarray:
    one = Program(program.input_dtypes, program.consts, program.instrs, (output,))
    with np.errstate(all="ignore"):
        return np.asarray(INTERP._evaluate(one, inputs))


class Builder:
    """Hand-built multi-output programs: one output per op under test."""

    def __init__(self, *input_dtypes: str) -> None:
        self.input_dtypes = input_dtypes
        self.consts: list[tuple[bool | int | float, str]] = []
        self.instrs: list[Instr] = []
        self.labels: list[str] = []
        self.hidden: set[int] = set()  # instructions that are not outputs

    def const(self, value: bool | int | float, dtype: str) -> int:
        self.consts.append((value, dtype))
        return -len(self.consts)  # renumbered in build()

    def op(self, op: str, args: tuple[int, ...], dtype: str, label: str | None = None,
           output: bool = True) -> int:
        if output:
            self.labels.append(label or op)
        else:
            self.hidden.add(len(self.instrs))
        self.instrs.append(Instr(op, args, dtype))
        return 1000 + len(self.instrs) - 1  # renumbered in build()

    def build(self) -> tuple[Program, list[str]]:
        n_in, n_c = len(self.input_dtypes), len(self.consts)

        def number(v: int) -> int:
            if v < 0:
                return n_in - v - 1
            if v >= 1000:
                return n_in + n_c + v - 1000
            return v

        instrs = tuple(Instr(i.op, tuple(number(a) for a in i.args), i.dtype) for i in self.instrs)
        outputs = tuple(n_in + n_c + k for k in range(len(instrs)) if k not in self.hidden)
        return Program(self.input_dtypes, tuple(self.consts), instrs, outputs), self.labels


def program_for(dtype: str) -> tuple[Program, list[str]]:
    """Every op defined on ``dtype`` (inputs x, y, cond, and z: a non-negative int exponent)."""
    b = Builder(dtype, dtype, "bool", "int64")
    x, y, cond = 0, 1, 2
    if dtype == "bool":
        for op in ("add", "multiply", "maximum", "minimum", *COMPARE, "logical_and", "logical_or"):
            b.op(op, (x, y), "bool")
        b.op("abs", (x,), "bool")
        b.op("logical_not", (x,), "bool")
    else:
        floats = dtype.startswith("float")
        for op in FLOAT_UNARY if floats else INT_UNARY:
            b.op(op, (x,), dtype)
        for op in NUMERIC_BINARY + (("divide", "hypot", "pow") if floats else ()):
            b.op(op, (x, y), dtype)
        for op in COMPARE:
            b.op(op, (x, y), "bool")
        if not floats:  # numpy rejects negative integer exponents: use z
            e = b.op("astype", (3,), dtype, output=False)
            b.op("pow", (x, e), dtype, "pow")
        b.op("pow", (x, b.const(2.0 if floats else 2, dtype)), dtype, "pow_2")
        nx = b.op("astype", (x,), "bool", "astype_bool")
        b.op("logical_not", (nx,), "bool")
    b.op("where", (cond, x, y), dtype)
    for target in DTYPES:
        if target != dtype:
            b.op("astype", (x,), target, f"astype_{target}")
    return b.build()


def data_for(dtype: str) -> list[np.ndarray]:
    """x and y over all pairs of interesting values (plus random ones), cond, z."""
    if dtype == "bool":
        vals = np.array([False, True])
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        span = info.max - info.min + 1  # the values wrapped into the dtype, as NumPy casts
        vals = np.array([(v - info.min) % span + info.min for v in (
            0, 1, -1, 2, -2, 3, 7, -7, 100, -100, info.max, info.min, info.max - 1,
            info.min + 1, 12345, -98765 % info.max)], dtype=dtype)
    else:
        info = np.finfo(dtype)
        vals = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.25, 1e-3, 88.5, 89.0,
                         -88.0, -104.0, 710.0, -746.0, 1e30, -1e30, info.tiny / 4, info.max, np.nan,
                         np.inf, -np.inf, np.pi, 100.25], dtype=dtype)
    x, y = (a.ravel() for a in np.meshgrid(vals, vals, indexing="ij"))
    rng = np.random.default_rng(0)
    if dtype != "bool":
        floats = dtype.startswith("float")
        extra = rng.standard_normal(3000) * (4 if floats else 1000)
        # integers: through int64, so that negative values wrap into unsigned dtypes
        x = np.concatenate([x, extra.astype(dtype if floats else np.int64).astype(dtype)])
        small = rng.standard_normal(3000) * 3
        y = np.concatenate([y, small.astype(dtype) if floats else
                            (small.astype(np.int64) + 1).astype(dtype)])
    else:
        x = np.concatenate([x, rng.random(3000) < 0.5])
        y = np.concatenate([y, rng.random(3000) < 0.5])
    cond = rng.random(x.size) < 0.5
    z = rng.integers(0, 70, x.size).astype(np.int64)
    return [x, y, cond, z]


def assert_matches(got: np.ndarray, want: np.ndarray, label: str, x: np.ndarray) -> None:
    assert got.dtype == want.dtype, label
    assert got.shape == want.shape, label
    if label.startswith(("astype_int", "astype_uint")) and x.dtype.kind == "f":
        # float -> int of NaN/Inf/out-of-range values is undefined in C and differs by CPU
        info = np.iinfo(got.dtype)
        keep = np.isfinite(x) & (x > info.min) & (x < info.max)
        got, want = got[keep], want[keep]
    if got.dtype.kind == "f":
        rtol, atol = TOL[got.dtype.name]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want, err_msg=label)


@pytest.fixture(scope="module", params=DTYPES)
def all_ops(request: pytest.FixtureRequest) -> tuple[Program, list[str], list[np.ndarray]]:
    program, labels = program_for(request.param)
    return program, labels, data_for(request.param)


def test_every_op_matches_numpy(all_ops: tuple[Program, list[str], list[np.ndarray]]) -> None:
    program, labels, inputs = all_ops
    outputs = [np.empty(inputs[0].shape, program.dtype_of(v)) for v in program.outputs]
    numba_cpu.launch(program, inputs, outputs)
    for got, value, label in zip(outputs, program.outputs, labels):
        assert_matches(got, interpret(program, inputs, value), label, inputs[0])


def test_zero_d_and_zero_size(all_ops: tuple[Program, list[str], list[np.ndarray]]) -> None:
    program, labels, inputs = all_ops
    for index in (slice(5, 6), slice(0, 0)):
        shape = () if index.stop else (3, 0)
        sub = [x[index].reshape(shape) for x in inputs]
        outputs = [np.empty(shape, program.dtype_of(v)) for v in program.outputs]
        numba_cpu.launch(program, sub, outputs)
        for got, value, label in zip(outputs, program.outputs, labels):
            assert_matches(got, interpret(program, sub, value), label, sub[0])


def test_single_output_run_elementwise() -> None:
    program, _ = program_for("float64")
    x, y, cond, z = data_for("float64")
    one = Program(program.input_dtypes, program.consts, program.instrs, program.outputs[:1])
    got = numba_cpu.run_elementwise(one, [x, y, cond, z], x.shape, "float64")
    np.testing.assert_allclose(got, interpret(one, [x, y, cond, z], one.outputs[0]), rtol=1e-14)
    with pytest.raises(TypeError):
        numba_cpu.run_elementwise(one, [x, y, cond, z], x.shape, "float32")


# ---- broadcasting: one program, many layouts ------------------------------------------
def broadcast_program() -> Program:
    # exp(a * b) + where(c, a, b) - b, float32, all inputs read at several places
    b = Builder("float32", "float32", "bool")
    m = b.op("multiply", (0, 1), "float32", output=False)
    e = b.op("exp", (m,), "float32", output=False)
    w = b.op("where", (2, 0, 1), "float32", output=False)
    s = b.op("add", (e, w), "float32", output=False)
    b.op("subtract", (s, 1), "float32")
    return b.build()[0]


SHAPES = [  # out shape, a, b, cond
    ((6, 5), (6, 5), (6, 5), (6, 5)),
    ((6, 5), (6, 5), (), (1,)),
    ((6, 5), (5,), (6, 1), (6, 5)),
    ((4, 3, 5), (3, 1), (4, 1, 5), (5,)),
    ((2, 3, 4, 5), (1, 3, 1, 5), (2, 1, 4, 1), ()),
    ((3, 40000), (40000,), (3, 1), (3, 40000)),  # rows longer than one task chunk
    ((7, 1, 5), (7, 1, 1), (1, 1, 5), (7, 1, 5)),
    ((3, 5, 7, 1000), (5, 1, 1000), (3, 1, 7, 1), (1000,)),  # tasks start mid-row
]


@pytest.mark.parametrize(("out", "sa", "sb", "sc"), SHAPES)
def test_broadcasting(out: tuple[int, ...], sa: tuple[int, ...], sb: tuple[int, ...],
                      sc: tuple[int, ...]) -> None:
    program = broadcast_program()
    rng = np.random.default_rng(1)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    c = np.asarray(rng.random(sc) < 0.5)
    got = numba_cpu.run_elementwise(program, [a, b, c], out, "float32")
    want = np.broadcast_to(interpret(program, [a, b, c], program.outputs[0]), out)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_plan_collapses_and_bounds_variants() -> None:
    variant, shape, strides = numba_cpu.plan((4, 3, 5), [(4, 3, 5), (), (1, 3, 5)])
    assert variant == ("nd", ("i", "o", "i")) and shape == (4, 15)
    assert strides.tolist() == [[15, 1], [0, 0], [0, 1]]
    assert numba_cpu.plan((1, 8, 1), [(8, 1), (1,)])[0] == ("flat", ("f", "s"))
    with pytest.raises(ValueError):
        numba_cpu.plan((4, 3), [(2, 3)])
    # variants never depend on sizes
    assert numba_cpu.plan((9, 7), [(9, 7), (7,)])[0] == numba_cpu.plan((2, 3), [(2, 3), (3,)])[0]


def test_read_only_and_non_contiguous_inputs() -> None:
    program = broadcast_program()
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 10)).astype(np.float32)[:, ::2]  # not contiguous
    b = rng.standard_normal((6, 5)).astype(np.float32)
    b.flags.writeable = False
    c = np.broadcast_to(np.array(True), (6, 5))  # read-only, zero strides
    got = numba_cpu.run_elementwise(program, [a, b, c], (6, 5), "float32")
    want = interpret(program, [a, b, np.ascontiguousarray(c)], program.outputs[0])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---- programs from the compiler ---------------------------------------------------------
def fused(tensor: hm.Tensor) -> tuple[Program, list[np.ndarray]]:
    # fusion alone: optimize() would also fold these constant inputs away
    (node,) = fuse_elementwise([tensor.node])
    assert node.op == "fused_elementwise"
    return node.attrs["program"], [i.attrs["value"] for i in node.inputs]


def test_compiler_program_w2() -> None:
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(100_003).astype(np.float32) for _ in range(3)]
    a, b, c = (hm.asarray(x) for x in arrays)
    expr = hm.exp(-(a * b + c) ** 2 * 0.5) + a
    program, inputs = fused(expr)
    got = numba_cpu.run_elementwise(program, inputs, expr.shape, expr.dtype)
    np.testing.assert_allclose(got, expr.numpy(), rtol=1e-6, atol=1e-6)
    x, y, z = arrays
    np.testing.assert_allclose(got, np.exp(-(x * y + z) ** 2 * np.float32(0.5)) + x, rtol=1e-6, atol=1e-6)


def test_float32_exp_accuracy() -> None:
    # every 997th float32 in [-110, 95]: within 1.1 ulp of the correctly rounded exp
    pos = np.arange(0, 0x42BE0000, 997, dtype=np.uint32).view(np.float32)
    neg = (np.arange(0, 0x42DC0000, 997, dtype=np.uint32) | np.uint32(0x80000000)).view(np.float32)
    x = np.concatenate([pos, neg])
    program = Program(("float32",), (), (Instr("exp", (0,), "float32"),), (1,))
    got = numba_cpu.run_elementwise(program, [x], x.shape, "float32").astype(np.float64)
    exact = np.exp(x.astype(np.float64))
    normal = (exact > np.finfo(np.float32).tiny) & (exact < np.finfo(np.float32).max)
    ulp = np.spacing(exact[normal].astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[normal] - exact[normal]) / ulp) < 1.1
    tiny = exact < np.finfo(np.float32).tiny  # subnormal results: within 2 subnormal steps
    assert np.max(np.abs(got[tiny] - exact[tiny])) <= 2 * 2.0**-149
    assert np.all(np.isinf(got[exact >= np.finfo(np.float32).max * (1 + 2**-24)]))


def test_fresh_process_reuses_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    # a constant no other test uses, so this compiles here, into tmp_path
    program = Program(("float64",), ((0.123456789, "float64"),),
                      (Instr("multiply", (0, 1), "float64"), Instr("sin", (2,), "float64")), (3,))
    x = np.linspace(-3, 3, 101)
    np.testing.assert_allclose(numba_cpu.run_elementwise(program, [x], x.shape, "float64"),
                               np.sin(x * 0.123456789), rtol=1e-14)
    assert list((tmp_path / "numba").glob("k_*.py"))
    script = textwrap.dedent(f"""
        import numpy as np
        from hermes_nb.codegen import numba_cpu
        from hermes_nb.ir.program import Instr, Program
        program = {program!r}
        x = np.linspace(-3, 3, 101)
        out = numba_cpu.run_elementwise(program, [x], x.shape, "float64")
        kernel = numba_cpu.compile_elementwise(program, ("flat", ("f",)))
        assert np.allclose(out, np.sin(x * 0.123456789))
        print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
    """)
    env = {**os.environ, "HERMES_NB_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == ["1", "0"], done.stdout + done.stderr


def test_supports_and_unknown_ops() -> None:
    assert numba_cpu.supports(program_for("float32")[0])
    bad = Program(("bool",), (), (Instr("subtract", (0, 0), "bool"),), (1,))
    assert not numba_cpu.supports(bad)


@pytest.mark.parametrize(("dtype", "values"), list(itertools.product(
    ("int8", "int16", "int32", "int64"), [((7, -7, 0, -1), (0, 0, 0, -1))])))
def test_integer_division_by_zero_gives_zero(dtype: str, values: tuple) -> None:
    program, labels = program_for(dtype)
    info = np.iinfo(dtype)
    x = np.array([*values[0], info.min], dtype)
    y = np.array([*values[1], -1], dtype)
    inputs = [x, y, np.ones(x.size, bool), np.zeros(x.size, np.int64)]
    outputs = [np.empty(x.shape, program.dtype_of(v)) for v in program.outputs]
    numba_cpu.launch(program, inputs, outputs)
    got = dict(zip(labels, outputs))
    np.testing.assert_array_equal(got["floor_divide"], [0, 0, 0, 1, info.min])
    np.testing.assert_array_equal(got["remainder"], [0, 0, 0, 0, 0])
