"""What ``explain()`` lists as the ops of ``fused_reduce`` and ``fused_matmul`` nodes (their
sources come from the device: ``Device.kernel_source``)."""

from __future__ import annotations

from hermes_nb.ir.node import Node

__all__ = ["kernel_ops"]


def kernel_ops(node: Node) -> tuple[str, ...]:
    """Prologue ops, then the reduction or ``matmul``, then the epilogue ops."""
    a = node.attrs
    epilogue = a["epilogue"].ops if a.get("epilogue") is not None else ()
    if node.op == "fused_matmul":
        return ("matmul", *epilogue)
    return (*a["prologue"].ops, a["reduce"], *epilogue)
