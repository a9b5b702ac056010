"""Rebuilding a graph bottom-up with some nodes replaced (nodes are immutable)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.ir.node import Node, toposort


def rebuild(outputs: list[Node], replace: Callable[[Node, tuple[Node, ...]], Node | None],
            mapped: dict[int, Node] | None = None) -> list[Node]:
    """Visit nodes inputs-first; ``replace(node, new_inputs)`` returns a substitute or None.

    A node whose inputs changed and that is not replaced is copied with the new inputs.
    ``mapped`` (old node id -> its rebuilt node) is filled as nodes are visited.
    """
    mapped = {} if mapped is None else mapped
    for node in toposort(outputs):
        inputs = tuple(mapped[id(i)] for i in node.inputs)
        new = replace(node, inputs)
        if new is None:
            if all(a is b for a, b in zip(inputs, node.inputs)):
                new = node
            else:
                new = Node(node.op, inputs, node.shape, node.dtype, node.attrs, node.device)
        mapped[id(node)] = new
    return [mapped[id(o)] for o in outputs]


def replace_groups(outputs: list[Node],
                   build: Callable[[Node, Callable[[Node], Node]], Node | None]) -> list[Node]:
    """``rebuild`` for fusion passes: ``build(node, new)`` may return a fused node whose
    inputs, anywhere upstream, it maps through ``new`` (old node -> its rebuilt version)."""
    mapped: dict[int, Node] = {}
    return rebuild(outputs, lambda node, _inputs: build(node, lambda old: mapped[id(old)]),
                   mapped)


def users(outputs: list[Node]) -> dict[int, list[Node]]:
    """For each node id, the nodes that read it."""
    readers: dict[int, list[Node]] = {}
    for node in toposort(outputs):
        for i in node.inputs:
            readers.setdefault(id(i), []).append(node)
    return readers
