"""Kept dims dropped at the source: ``reshape(r, shape)`` where ``r`` is a reduction that
keeps its reduced axes (as size 1) and ``shape`` is ``r``'s without them becomes ``r``
without ``keepdims``.

A global average pool followed by a flatten (a CNN's head: ``mean(x, (2, 3),
keepdims=True)`` then ``(N, C)``) would otherwise be a reduction kernel and a reshape
kernel. Taken only where the reshape is the reduction's one reader, on its device, and a
fused reduction's epilogue reads nothing but the reduced value (its other inputs would be
broadcast to the kept shape).
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.ir.node import Node
from hermes_nb.ir.reduce import REDUCES


def drop_kept_dims(outputs: list[Node]) -> list[Node]:
    readers = users(outputs)
    requested = {id(o) for o in outputs}

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        if node.op != "reshape":
            return None
        (src,) = node.inputs
        if id(src) in requested or len(readers.get(id(src), ())) != 1 \
                or src.device != node.device or not _keeps_dims(src) \
                or tuple(node.shape) != _dropped(src):
            return None
        return Node(src.op, tuple(new(i) for i in src.inputs), node.shape, node.dtype,
                    {**src.attrs, "keepdims": False}, node.device)

    return replace_groups(outputs, build)


def _keeps_dims(node: Node) -> bool:
    """A reduction (fused or not) that keeps its axes and whose result is nothing but its
    reduced value, elementwise."""
    if node.op == "fused_reduce":
        epilogue = node.attrs["epilogue"]
        return node.attrs["keepdims"] and (epilogue is None or epilogue.n_inputs == 1)
    return node.op in REDUCES and bool(node.attrs.get("keepdims"))


def _dropped(node: Node) -> tuple[int, ...]:
    """``node``'s shape without its reduced axes."""
    axes = {a % len(node.shape) for a in node.attrs["axes"]}
    return tuple(d for i, d in enumerate(node.shape) if i not in axes)
