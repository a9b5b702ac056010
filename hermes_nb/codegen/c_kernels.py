"""Whole kernels around a rendered elementwise program (``c_source``): the OpenCL program
variants a device launches, and CUDA's ``ElementwiseKernel`` and standalone kernel."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from hermes_nb.codegen.c_source import CUDA, OPENCL, VECTOR_WIDTH, vectorizable
from hermes_nb.ir.program import Program

__all__ = [
    "CUDA_OPTIONS",
    "cuda_elementwise_kernel",
    "cuda_elementwise_parts",
    "cuda_kernel_source",
    "opencl_arguments",
    "opencl_source",
    "render_source",
]


def opencl_source(program: Program, modes: str, width: int, fp64: bool) -> str:
    """The OpenCL program for one variant: ``modes`` has one letter per input, ``f`` (full
    size, read at i), ``s`` (one element, read at 0) or ``g`` (strided, offsets from
    ``meta``). Kernel ``fused(out, in0.., meta, n, c<j>..)`` does one element per work-item;
    with a vector ``width`` (2, 4, 8 or 16; 0 for none; only for f/s inputs and
    :func:`vectorizable` programs) ``fused_vec(out, in0.., meta, n_vec, c<j>..)`` also
    exists and does elements ``[0, n_vec * width)``, ``width`` per work-item. ``c<j>`` are
    the scalar parameters (``opencl_arguments``); the source is the same for any values."""
    return _opencl_source(program.template, modes, width, fp64)


def opencl_arguments(program: Program) -> tuple[Any, ...]:
    """The scalar kernel arguments of ``program``'s OpenCL kernels (bools as the 0/1 byte
    the kernel's ``uchar`` holds)."""
    return tuple(np.uint8(a) if a.dtype == np.bool_ else a for a in program.arguments())


@functools.lru_cache(maxsize=512)
def _opencl_source(program: Program, modes: str, width: int, fp64: bool) -> str:
    from hermes_nb.codegen import opencl_templates as ocl

    r = OPENCL
    w = width
    vector = width > 0
    args = " ".join(f"__global const {r.ctype(d)}* restrict in{k},"
                    for k, d in enumerate(program.input_dtypes))

    def loads(at: str) -> str:
        return ", ".join(f"in{k}[{ {'f': at, 's': '0', 'g': f'o{k}'}[m] }]"
                         for k, m in enumerate(modes))

    params = [f"c{j}" for j in program.params]
    functions = r.functions(program, params=True)
    vloads = ""
    if vector:
        assert "g" not in modes
        functions += "\n\n" + r.vector_function(program, w, params=True)
        vloads = ", ".join([
            f"vload{w}(0, in{k} + i)" if m == "f"
            else f"(({r.ctype(d)}{w})(in{k}[0]))"
            for k, (m, d) in enumerate(zip(modes, program.input_dtypes))] + params)
    fp64_used = fp64 and bool({"float64", "complex128"} & _dtypes(program))
    return ocl.render(
        "fused_elementwise",
        header=ocl.FP64_PRAGMA if fp64_used else "",
        vector=int(vector),
        width=w,
        functions=functions,
        out_t=r.ctype(program.dtype_of(program.outputs[0])),
        args=args,
        index="\n".join(_strided_offsets(modes)),
        loads=", ".join([loads("i")] * bool(modes) + params),
        vloads=vloads,
        params="".join(f", const {d}" for d in r.param_decls(program)),
    )


def _strided_offsets(modes: str) -> list[str]:
    """Lines computing ``o<k>``, the element offset of strided input k for element i, from
    the shape and per-input strides in ``meta``."""
    strided = [k for k, m in enumerate(modes) if m == "g"]
    if not strided:
        return []
    index = ["    const int nd = (int)meta[0];",
             "    long rem = i" + "".join(f", o{k} = 0" for k in strided) + ";",
             "    for (int d = nd - 1; d >= 0; --d) {",
             "        const long c = rem % meta[1 + d];",
             "        rem /= meta[1 + d];"]
    for pos, k in enumerate(strided):
        index.append(f"        o{k} += c * meta[1 + {pos + 1} * nd + d];")
    index.append("    }")
    return index


def _dtypes(program: Program) -> set[str]:
    return {*program.input_dtypes, *(d for _, d in program.consts),
            *(i.dtype for i in program.instrs)}


def cuda_kernel_source(program: Program, name: str = "hermes_fused") -> str:
    """A standalone ``extern "C" __global__`` CUDA kernel over contiguous same-size inputs:
    ``name(out, in0, ..., n, c<j>, ...)``, ``c<j>`` the scalar parameters
    (``program.arguments()``). Its body is the ``hfused`` CuPy's ElementwiseKernel gets."""
    return _cuda_kernel_source(program.template, name)


@functools.lru_cache(maxsize=512)
def _cuda_kernel_source(program: Program, name: str) -> str:
    r = CUDA
    params = ", ".join([
        f"{r.ctype(program.dtype_of(program.outputs[0]))}* __restrict__ out",
        *(f"const {r.ctype(d)}* __restrict__ in{k}" for k, d in enumerate(program.input_dtypes)),
        "long long n",
        *(f"const {d}" for d in r.param_decls(program)),
    ])
    call = ", ".join([f"in{k}[i]" for k in range(program.n_inputs)] +
                     [f"c{j}" for j in program.params])
    functions = r.functions(program, params=True)
    if "thrust::complex" in functions or "thrust::complex" in params:
        functions = f"#include <cupy/complex.cuh>\n\n{functions}"  # CuPy's thrust::complex
    return (
        f"{functions}\n\n"
        f'extern "C" __global__ void {name}({params}) {{\n'
        "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i < n) out[i] = hfused({call});\n"
        "}\n"
    )


CUDA_OPTIONS = ("--fmad=false",)  # no a*b+c -> fma: round like NumPy's separate ops


def cuda_elementwise_parts(program: Program) -> tuple[str, str, str, str]:
    """``(in_params, out_params, operation, preamble)`` of the ElementwiseKernel: the
    inputs ``x<k>``, then the scalar parameters ``c<j>`` (``program.arguments()``), whose
    values are call arguments, never part of the kernel."""
    program = program.template
    in_params = ", ".join([f"{d} x{k}" for k, d in enumerate(program.input_dtypes)] +
                          [f"{program.consts[j][1]} c{j}" for j in program.params])
    out_params = f"{program.dtype_of(program.outputs[0])} y"
    call = ", ".join([f"x{k}" for k in range(program.n_inputs)] +
                     [f"c{j}" for j in program.params])
    return in_params, out_params, f"y = hfused({call});", CUDA.functions(program, params=True)


def cuda_elementwise_kernel(program: Program) -> Any:
    """A ``cupy.ElementwiseKernel`` computing ``program``; call it as
    ``k(*inputs, *program.arguments(), out)`` (CuPy broadcasts the inputs to ``out``)."""
    return _cuda_elementwise_kernel(program.template)


@functools.lru_cache(maxsize=512)
def _cuda_elementwise_kernel(program: Program) -> Any:
    import cupy

    in_params, out_params, operation, preamble = cuda_elementwise_parts(program)
    return cupy.ElementwiseKernel(
        in_params, out_params, operation, name="hermes_fused", preamble=preamble,
        options=CUDA_OPTIONS,
    )  # fmt: skip


def render_source(program: Program, device_kind: str) -> str:
    """The generated source a device of ``device_kind`` runs for ``program`` (what
    ``explain()`` shows): OpenCL's general (broadcasting) variant, or CUDA's kernel."""
    if device_kind == "opencl":
        width = VECTOR_WIDTH if vectorizable(program) else 0
        return opencl_source(program, "f" * program.n_inputs, width, True)
    if device_kind == "cuda":
        return cuda_kernel_source(program)
    raise ValueError(f"no C source for device kind {device_kind!r}")
