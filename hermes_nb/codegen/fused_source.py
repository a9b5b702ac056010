"""What ``explain()`` reports for ``fused_reduce`` and ``fused_matmul`` nodes: the ops
they hold and the source each device kind generates for them."""

from __future__ import annotations

import numpy as np

from hermes_nb.ir.node import Node

__all__ = ["kernel_ops", "kernel_source"]


def kernel_ops(node: Node) -> tuple[str, ...]:
    """Prologue ops, then the reduction or ``matmul``, then the epilogue ops."""
    a = node.attrs
    epilogue = a["epilogue"].ops if a.get("epilogue") is not None else ()
    if node.op == "fused_matmul":
        return ("matmul", *epilogue)
    return (*a["prologue"].ops, a["reduce"], *epilogue)


def kernel_source(node: Node, device: str) -> str | None:
    """The generated source on ``device``'s kind (for matmuls: of the epilogue, or of the
    OpenCL tiled kernel that applies it); None where nothing is generated."""
    kind = device.split(":")[0]
    a = node.attrs
    if node.op == "fused_reduce":
        return _reduce_source(node, kind)
    extra_shapes = [i.shape for i in node.inputs[2:]]
    epilogue = a["epilogue"]
    if kind == "cpu":
        try:
            from hermes_nb.codegen import numba_cpu
        except ImportError:
            return None
        return numba_cpu.render(epilogue, numba_cpu.plan(node.shape, [node.shape, *extra_shapes])[0])
    if kind == "opencl":
        from hermes_nb.codegen import c_fused, opencl_templates

        hooks = c_fused.opencl_matmul_hooks(epilogue, a["matmul_dtype"])
        return opencl_templates.typed_source("matmul", np.dtype(a["matmul_dtype"]), True, **hooks)
    if kind == "cuda":
        from hermes_nb.codegen import c_fused

        return c_fused.cuda_matmul_epilogue_source(epilogue)
    return None


def _reduce_source(node: Node, kind: str) -> str | None:
    from hermes_nb.codegen import c_fused
    from hermes_nb.codegen.layout import layout

    a = node.attrs
    pro, epilogue, op, acc = a["prologue"], a["epilogue"], a["reduce"], a["reduce_dtype"]
    eclasses = "".join("s" if int(np.prod(i.shape)) == 1 else "f"
                       for i in node.inputs[a["n_prologue"]:])
    shapes = [i.shape for i in node.inputs[:a["n_prologue"]]]
    layout_kind, classes, meta = layout(a["in_shape"], a["axes"], shapes)
    if kind == "cpu":
        try:
            from hermes_nb.codegen import numba_reduce
        except ImportError:
            return None
        return numba_reduce.render(a, (layout_kind, classes, tuple(eclasses)))
    if kind == "opencl":
        from hermes_nb.codegen.c_source import VECTOR_WIDTH, vector_dtype

        rank1 = len(meta[2]) == 1
        vec = layout_kind == "rows" and rank1 and vector_dtype(pro) == acc
        return c_fused.opencl_reduce_source(pro, epilogue, op, acc, rank1, eclasses,
                                            "".join(classes) if vec else "",
                                            VECTOR_WIDTH if vec else 0, True)
    if kind == "cuda":
        return c_fused.cuda_reduce_source(pro, epilogue, op, acc)
    return None
