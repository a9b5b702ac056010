"""Rebuilding a graph bottom-up with some nodes replaced (nodes are immutable).

Fusion passes record provenance: the keys of the nodes (as they were before fusion) that
each fused or copied node stands for, so views can draw each kernel around the ops it holds.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from hermes_nb.ir.node import Node, toposort

# keys, not nodes: holding old nodes would keep their buffers alive
_origin: weakref.WeakKeyDictionary[Node, tuple[str, ...]] = weakref.WeakKeyDictionary()


def origin(node: Node) -> tuple[str, ...]:
    """The keys of the pre-fusion nodes ``node`` computes (its own key if fusion made no change)."""
    return _origin.get(node, (node.key,))


def set_origin(node: Node, keys: tuple[str, ...]) -> None:
    """Record that ``node`` computes the pre-fusion nodes ``keys`` (a graph rebuilt from a
    cached optimisation names its kernels as the optimisation did)."""
    _origin[node] = keys


def rebuild(outputs: list[Node], replace: Callable[[Node, tuple[Node, ...]], Node | None],
            mapped: dict[int, Node] | None = None, *, track: bool = False) -> list[Node]:
    """Visit nodes inputs-first; ``replace(node, new_inputs)`` returns a substitute or None.

    A node whose inputs changed and that is not replaced is copied with the new inputs
    (with ``track``, the copy keeps the original's provenance).
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
                if track:
                    _origin[new] = origin(node)
        mapped[id(node)] = new
    return [mapped[id(o)] for o in outputs]


def replace_groups(outputs: list[Node],
                   build: Callable[[Node, Callable[[Node], Node]], Node | None]) -> list[Node]:
    """``rebuild`` for fusion passes: ``build(node, new)`` may return a fused node whose
    inputs, anywhere upstream, it maps through ``new`` (old node -> its rebuilt version)."""
    mapped: dict[int, Node] = {}

    def replace(node: Node, _inputs: tuple[Node, ...]) -> Node | None:
        fused = build(node, lambda old: mapped[id(old)])
        if fused is not None:
            _origin[fused] = _absorbed(node, fused, mapped)
        return fused

    return rebuild(outputs, replace, mapped, track=True)


def _absorbed(root: Node, fused: Node, mapped: dict[int, Node]) -> tuple[str, ...]:
    """Provenance of ``fused``, which replaces ``root``: every node from ``root`` up to (not
    including) the nodes that became ``fused``'s inputs, inputs before users."""
    boundary = {id(i) for i in fused.inputs}
    held = toposort([root], within=lambda n: id(mapped.get(id(n))) not in boundary)
    return tuple(key for n in held for key in origin(n))


def users(outputs: list[Node]) -> dict[int, list[Node]]:
    """For each node id, the nodes that read it."""
    readers: dict[int, list[Node]] = {}
    for node in toposort(outputs):
        for i in node.inputs:
            readers.setdefault(id(i), []).append(node)
    return readers
