"""Whole kernels around a rendered elementwise program (``c_source``): the OpenCL program
variants a device launches, and CUDA's ``ElementwiseKernel`` and standalone kernel."""

from __future__ import annotations

import functools
from typing import Any

from hermes_nb.codegen.c_source import CUDA, OPENCL, VECTOR_WIDTH, vectorizable
from hermes_nb.ir.program import Program

__all__ = [
    "CUDA_OPTIONS",
    "cuda_elementwise_kernel",
    "cuda_elementwise_parts",
    "cuda_kernel_source",
    "opencl_source",
    "render_source",
]


@functools.lru_cache(maxsize=512)
def opencl_source(program: Program, modes: str, width: int, fp64: bool) -> str:
    """The OpenCL program for one variant: ``modes`` has one letter per input, ``f`` (full
    size, read at i), ``s`` (one element, read at 0) or ``g`` (strided, offsets from
    ``meta``). Kernel ``fused(out, in0.., meta, n)`` does one element per work-item;
    with a vector ``width`` (2, 4, 8 or 16; 0 for none; only for f/s inputs and
    :func:`vectorizable` programs) ``fused_vec(out, in0.., meta, n_vec)`` also exists and
    does elements ``[0, n_vec * width)``, ``width`` per work-item."""
    from hermes_nb.codegen import opencl_templates as ocl

    r = OPENCL
    w = width
    vector = width > 0
    args = " ".join(f"__global const {r.ctype(d)}* restrict in{k},"
                    for k, d in enumerate(program.input_dtypes))

    def loads(at: str) -> str:
        return ", ".join(f"in{k}[{ {'f': at, 's': '0', 'g': f'o{k}'}[m] }]"
                         for k, m in enumerate(modes))

    functions = r.functions(program)
    vloads = ""
    if vector:
        assert "g" not in modes
        functions += "\n\n" + r.vector_function(program, w)
        vloads = ", ".join(
            f"vload{w}(0, in{k} + i)" if m == "f"
            else f"(({r.ctype(d)}{w})(in{k}[0]))"
            for k, (m, d) in enumerate(zip(modes, program.input_dtypes)))
    fp64_used = fp64 and "float64" in _dtypes(program)
    return ocl.render(
        "fused_elementwise",
        header=ocl.FP64_PRAGMA if fp64_used else "",
        vector=int(vector),
        width=w,
        functions=functions,
        out_t=r.ctype(program.dtype_of(program.outputs[0])),
        args=args,
        index="\n".join(_strided_offsets(modes)),
        loads=loads("i"),
        vloads=vloads,
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


@functools.lru_cache(maxsize=512)
def cuda_kernel_source(program: Program, name: str = "hermes_fused") -> str:
    """A standalone ``extern "C" __global__`` CUDA kernel over contiguous same-size inputs:
    ``name(out, in0, ..., n)``. Its body is the ``hfused`` CuPy's ElementwiseKernel gets."""
    r = CUDA
    params = ", ".join([
        f"{r.ctype(program.dtype_of(program.outputs[0]))}* __restrict__ out",
        *(f"const {r.ctype(d)}* __restrict__ in{k}" for k, d in enumerate(program.input_dtypes)),
        "long long n",
    ])
    call = ", ".join(f"in{k}[i]" for k in range(program.n_inputs))
    return (
        f"{r.functions(program)}\n\n"
        f'extern "C" __global__ void {name}({params}) {{\n'
        "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i < n) out[i] = hfused({call});\n"
        "}\n"
    )


CUDA_OPTIONS = ("--fmad=false",)  # no a*b+c -> fma: round like NumPy's separate ops


def cuda_elementwise_parts(program: Program) -> tuple[str, str, str, str]:
    """``(in_params, out_params, operation, preamble)`` of the ElementwiseKernel."""
    in_params = ", ".join(f"{d} x{k}" for k, d in enumerate(program.input_dtypes))
    out_params = f"{program.dtype_of(program.outputs[0])} y"
    call = ", ".join(f"x{k}" for k in range(program.n_inputs))
    return in_params, out_params, f"y = hfused({call});", CUDA.functions(program)


@functools.lru_cache(maxsize=512)
def cuda_elementwise_kernel(program: Program) -> Any:
    """A ``cupy.ElementwiseKernel`` computing ``program``; call it as ``k(*inputs, out)``
    (CuPy broadcasts the inputs to ``out``)."""
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
