"""``cuda:N`` kernels of the fused ops (CuPy): ``fused_reduce`` as one
``cupy.ReductionKernel`` whose ``map_expr`` is the prologue (and ``post_map_expr`` the
epilogue when it reads only the reduced value; else the epilogue follows as one
ElementwiseKernel), ``fused_matmul`` as cuBLAS then the epilogue ElementwiseKernel, in
place over the product when the dtypes allow."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hermes_nb.backends.cuda import kernels as cuda_kernels
from hermes_nb.ir.node import OpSpec


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
        epilogue = a["epilogue"]
        cuda_kernels.built(cuda_kernels.elementwise(epilogue))(
            product, *inputs[2:], *epilogue.arguments(), out)
        return out
    if math.prod(a["in_shape"]) == 0 or math.prod(spec.shape) == 0:
        return ops.run(spec, inputs)
    n = a["n_prologue"]
    reduction, epilogue = cuda_kernels.reduce_kernels(spec)  # epilogue None: applied inline
    # broadcast views (stride 0): the kernel reads the inputs where they are
    args = [cupy.broadcast_to(x, a["in_shape"]) for x in inputs[:n]]
    red = cuda_kernels.built(reduction)(*args, axis=a["axes"], keepdims=a["keepdims"])
    if epilogue is None:
        return cupy.ascontiguousarray(red.reshape(spec.shape))
    out = cupy.empty(spec.shape, spec.dtype)
    cuda_kernels.built(epilogue)(red.reshape(spec.shape), *inputs[n:],
                                 *a["epilogue"].arguments(), out)
    return out
