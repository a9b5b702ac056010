"""The C source of complex programs: every complex op renders in OpenCL C and CUDA C++,
each helper is defined once and before its first use, CUDA uses CuPy's
``thrust::complex`` and compiles with ``nvcc`` (no GPU needed). OpenCL runs the same
helper bodies, so tests/backend/test_complex.py checks their numbers on ``opencl:0``."""

from __future__ import annotations

import re

import numpy as np
import pytest
from nvcc import compile_ptx, needs_nvcc

import hermes_nb as hm
from hermes_nb.codegen import c_complex, c_fused, c_kernels, c_source
from hermes_nb.ir.ops import ELEMENTWISE, OPS
from hermes_nb.ir.program import Instr, Program

COMPLEX = ("complex64", "complex128")
RENDERERS = {"opencl": c_source.OPENCL, "cuda": c_source.CUDA}


def _node(op: str, dtype: str):
    """The node the tensor layer builds for ``op`` on ``dtype`` operands; None if refused."""
    args = [hm.ones((2,), dtype=dtype) for _ in range(OPS[op].arity or 1)]
    build = {"astype": lambda t: hm.astype(t, "float32"),
             "where": lambda t: hm.where(hm.real(t) > 0, t, t)}.get(op, getattr(hm, op, None))
    if build is None:
        return None
    try:
        node = build(*args[: 1 if op in ("astype", "where") else None]).node
    except TypeError:
        return None
    # logical ops convert their operands to bool first: no complex operand reaches them
    return node if node.op == op and node.inputs[-1].dtype == np.dtype(dtype) else None


def _program(node) -> Program:
    ins = tuple(i.dtype.name for i in node.inputs)
    return Program(ins, (), (Instr(node.op, tuple(range(len(ins))), node.dtype.name),),
                   (len(ins),))


CASES = [(op, dt) for op in sorted(ELEMENTWISE - {"to_device"}) for dt in COMPLEX
         if _node(op, dt) is not None]


def _defined_before_use(source: str) -> None:
    """Each ``hc_*`` helper is defined once, before any line that calls it."""
    defined: dict[str, int] = {}
    for m in re.finditer(r"^\S.*?\b(hc_\w+)\(([^)]*)\) \{", source, re.M):
        name = m.group(1)
        assert name not in defined, f"{name} defined twice"
        defined[name] = m.start()
    for m in re.finditer(r"\b(hc_\w+)\(", source):
        name = m.group(1)
        assert name in defined, f"{name} is called but never defined"
        assert defined[name] <= m.start(), f"{name} is called before its definition"


def test_the_complex_ops_are_those_of_the_standard():
    ops = {op for op, _ in CASES}
    assert {"add", "multiply", "divide", "pow", "exp", "log", "sqrt", "abs", "real", "imag",
            "conj", "sign", "isnan", "equal", "tanh", "atanh", "astype", "where"} <= ops
    assert not ops & {"less", "maximum", "floor", "remainder", "atan2", "relu", "sigmoid"}
    assert set(c_complex.COMPLEX_FORMS) >= ops


@pytest.mark.parametrize("dialect", sorted(RENDERERS))
@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_every_complex_op_renders(dialect, op, dtype):
    source = RENDERERS[dialect].functions(_program(_node(op, dtype)))
    assert "return v" in source
    _defined_before_use(source)


def test_opencl_spells_complex_as_float2_and_double2():
    program = _program(_node("multiply", "complex64"))
    source = c_source.OPENCL.functions(program)
    assert "inline float2 hfused(float2 x0, float2 x1)" in source
    assert "inline float hc_re_complex64(float2 a) { return a.x; }" in source
    assert "return (float2)(x, y);" in source
    wide = c_kernels.opencl_source(_program(_node("exp", "complex128")), "f", 0, True)
    assert "cl_khr_fp64" in wide and "double2" in wide and "exp(x)" in wide


def test_cuda_uses_thrust_complex_and_single_precision_maths():
    source = c_source.CUDA.functions(_program(_node("log", "complex64")))
    assert "__device__ __forceinline__ thrust::complex<float> hfused(" in source
    assert "return a.real();" in source and "thrust::complex<float>(x, y)" in source
    assert "hypotf(" in source and "atan2f(" in source and "logf(" in source
    wide = c_source.CUDA.functions(_program(_node("log", "complex128")))
    assert "hypot(" in wide and "hypotf(" not in wide
    kernel = c_kernels.cuda_kernel_source(_program(_node("log", "complex64")))
    assert kernel.startswith("#include <cupy/complex.cuh>")
    in_params, out_params, operation, _ = c_kernels.cuda_elementwise_parts(
        _program(_node("abs", "complex64")))
    assert (in_params, out_params, operation) == ("complex64 x0", "float32 y", "y = hfused(x0);")


@pytest.mark.parametrize("dtype", COMPLEX)
def test_conversions_take_the_real_part_and_both_parts_for_bool(dtype):
    prog = Program((dtype,), (), (Instr("astype", (0,), "int32"), Instr("astype", (0,), "bool"),
                                  Instr("add", (1, 1), "int32")), (3,))
    source = c_source.OPENCL.functions(prog)
    assert f"(int)(hc_re_{dtype}(x0))" in source and f"(uchar)hc_nz_{dtype}(x0)" in source
    up = Program(("float32",), (), (Instr("astype", (0,), dtype),), (1,))
    assert f"hc_mk_{dtype}(" in c_source.OPENCL.functions(up)


def test_complex_constants_are_literals_or_parameters():
    prog = Program(("complex64",), ((1 - 2j, "complex64"),), (Instr("multiply", (0, 1),
                                                                    "complex64"),), (2,))
    literal = c_source.OPENCL.functions(prog)
    assert "hc_mk_complex64(((float)0x1.0000000000000p+0f), ((float)-0x1.0000000000000p+1f))" \
        in literal
    assert "float2 c0" in c_source.OPENCL.functions(prog, params=True)


def test_reductions_fold_with_complex_helpers():
    prologue = Program(("complex64",), (), (Instr("multiply", (0, 0), "complex64"),), (1,))
    parts = c_fused.cuda_reduce_parts(prologue, None, "prod", "complex64")
    assert parts["reduce_expr"] == "(hc_mul_complex64(a, b))"
    assert parts["identity"].startswith("hc_mk_complex64(")
    assert parts["reduce_type"] == "thrust::complex<float>"
    _defined_before_use(parts["preamble"] + "\n" + parts["reduce_expr"])
    with pytest.raises(TypeError, match="max: complex dtypes have no order"):
        c_fused.cuda_reduce_parts(prologue, None, "max", "complex64")


def _all_ops_program(dtype: str) -> Program:
    """One program applying every complex op the tensor layer builds to inputs 0 and 1."""
    instrs: list[Instr] = []
    for op, dt in CASES:
        if dt != dtype:
            continue
        out = _node(op, dtype).dtype.name
        if op == "where":
            cond = 2 + len(instrs)  # the value numbers of instructions follow the inputs
            instrs.append(Instr("isnan", (0,), "bool"))
            instrs.append(Instr("where", (cond, 0, 1), out))
        else:
            instrs.append(Instr(op, (0,) if OPS[op].arity == 1 else (0, 1), out))
    instrs.append(Instr("add", (0, 1), dtype))
    return Program((dtype, dtype), (), tuple(instrs), (1 + len(instrs),))


@needs_nvcc
def test_cuda_complex_source_compiles(tmp_path):
    units = []
    for k, dtype in enumerate(COMPLEX):
        program = _all_ops_program(dtype)
        prologue = Program((dtype,), (), (Instr("exp", (0,), dtype),), (1,))
        for j, source in enumerate([
                c_kernels.cuda_kernel_source(program, f"all_{k}"),
                c_fused.cuda_reduce_source(prologue, None, "sum", dtype),
                c_fused.cuda_reduce_source(prologue, None, "prod", dtype)]):
            source = source.replace("hermes_fused_reduce(", f"reduce_{k}_{j}(")  # extern "C"
            units.append(f"namespace u{k}_{j} {{\n{source}}}\n")
    # CuPy's cupy/complex.cuh is thrust::complex; the toolkit's header stands in for it here
    text = "#include <thrust/complex.h>\n" + "\n".join(units).replace(
        "#include <cupy/complex.cuh>", "")
    ptx = compile_ptx(text, tmp_path, "complex")
    assert ".entry all_0(" in ptx and ".entry all_1(" in ptx and ".entry reduce_1_2(" in ptx


def test_numpy_layout_matches_the_vector_types():
    # float2/double2 and thrust::complex<T> hold (re, im) like NumPy's complex64/complex128
    assert np.dtype(np.complex64).itemsize == 8 and np.dtype(np.complex128).itemsize == 16
    z = np.array([1 + 2j], np.complex64)
    assert z.view(np.float32).tolist() == [1.0, 2.0]
