"""What ``explain()`` lists as the ops of ``fused_reduce``, ``fused_matmul`` and
``fused_conv`` nodes (their sources come from the device: ``Device.kernel_source``)."""

from __future__ import annotations

from hermes_nb.ir.node import Node

__all__ = ["kernel_ops"]


def kernel_ops(node: Node) -> tuple[str, ...]:
    """Prologue ops, then the reduction, ``matmul`` or ``conv``, then the epilogue ops (and a
    conv's joined pool, or its joined reduction and that one's epilogue)."""
    a = node.attrs
    epilogue = a["epilogue"].ops if a.get("epilogue") is not None else ()
    if node.op in ("fused_matmul", "fused_conv"):
        pool = ("pool",) if a.get("pool") is not None else ()
        reduce = a.get("reduce")
        if reduce is not None:
            post = reduce["epilogue"].ops if reduce["epilogue"] is not None else ()
            pool = (reduce["mode"], *post)
        return (node.op.removeprefix("fused_"), *epilogue, *pool)
    return (*a["prologue"].ops, a["reduce"], *epilogue)
