"""Common-subexpression elimination: structurally equal nodes become one."""

from __future__ import annotations

from typing import Any

import numpy as np

from hermes_nb.compiler.rewrite import rebuild
from hermes_nb.ir.node import Node, is_variable

_SMALL_CONSTANT = 64  # larger constants are compared by identity, not by value


def _attr_key(value: Any) -> Any:
    # small arrays compare by value, read now: the graph is optimised at every compute, so a
    # borrowed constant (a view of the caller's array) is compared by what this run reads
    if isinstance(value, np.ndarray):
        if value.size > _SMALL_CONSTANT:
            return ("array-id", id(value))
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return tuple(sorted((k, _attr_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, float) and value != value:
        return ("nan",)
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return (type(value).__name__, value)


def eliminate_common_subexpressions(outputs: list[Node]) -> list[Node]:
    seen: dict[tuple[Any, ...], Node] = {}

    def replace(node: Node, inputs: tuple[Node, ...]) -> Node | None:
        if node.op in ("random", "buffer") or is_variable(node):
            return None  # never the same as another, whatever its value now
        key = (node.op, tuple(id(i) for i in inputs), node.shape, node.dtype.str, node.device,
               _attr_key(node.attrs))
        existing = seen.get(key)
        if existing is not None:
            return existing
        same = all(a is b for a, b in zip(inputs, node.inputs))
        new = node if same else Node(node.op, inputs, node.shape, node.dtype, node.attrs,
                                     node.device)
        seen[key] = new
        return new

    return rebuild(outputs, replace)
