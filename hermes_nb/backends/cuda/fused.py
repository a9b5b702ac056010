"""``cuda:N`` kernels of the fused ops (CuPy): ``fused_reduce`` as one
``cupy.ReductionKernel`` whose ``map_expr`` is the prologue (and ``post_map_expr`` the
epilogue when it reads only the reduced value; else the epilogue follows as one
ElementwiseKernel), ``fused_matmul`` as cuBLAS then the epilogue ElementwiseKernel, in
place over the product when the dtypes allow."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from hermes_nb.codegen import c_fused
from hermes_nb.codegen.c_kernels import CUDA_OPTIONS, cuda_elementwise_kernel
from hermes_nb.compiler.program import Program
from hermes_nb.ir.node import OpSpec


@functools.lru_cache(maxsize=256)
def _reduction_kernel(prologue: Program, epilogue: Program | None, op: str, acc: str) -> Any:
    import cupy

    parts = c_fused.cuda_reduce_parts(prologue, epilogue, op, acc)
    return cupy.ReductionKernel(
        parts["in_params"], parts["out_params"], parts["map_expr"], parts["reduce_expr"],
        parts["post_map_expr"], parts["identity"], name="hermes_fused_reduce",
        reduce_type=parts["reduce_type"], preamble=parts["preamble"], options=CUDA_OPTIONS,
    )  # fmt: skip


def run(ops: Any, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """Run a ``fused_reduce`` or ``fused_matmul`` spec on CuPy arrays (``ops``: the
    device's ArrayOps, the reference path for zero-size cases)."""
    import cupy

    a = spec.attrs
    if spec.op == "fused_matmul":
        product = cupy.matmul(inputs[0], inputs[1])
        if product.size == 0:
            return ops.run(spec, inputs)
        out = product if product.dtype == spec.dtype else cupy.empty(spec.shape, spec.dtype)
        cuda_elementwise_kernel(a["epilogue"])(product, *inputs[2:], out)
        return out
    if math.prod(a["in_shape"]) == 0 or math.prod(spec.shape) == 0:
        return ops.run(spec, inputs)
    n, epilogue = a["n_prologue"], a["epilogue"]
    inline = epilogue is None or epilogue.n_inputs == 1
    kernel = _reduction_kernel(a["prologue"], epilogue if inline else None, a["reduce"],
                               a["reduce_dtype"])
    # broadcast views (stride 0): the kernel reads the inputs where they are
    args = [cupy.broadcast_to(x, a["in_shape"]) for x in inputs[:n]]
    red = kernel(*args, axis=a["axes"], keepdims=a["keepdims"])
    if inline:
        return cupy.ascontiguousarray(red.reshape(spec.shape))
    out = cupy.empty(spec.shape, spec.dtype)
    cuda_elementwise_kernel(epilogue)(red.reshape(spec.shape), *inputs[n:], out)
    return out
