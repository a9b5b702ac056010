"""Compiler passes, each graph in, graph out: CSE, constant folding, fusion."""

from __future__ import annotations

from hermes_nb.compiler.cse import eliminate_common_subexpressions
from hermes_nb.compiler.fold import fold_constants
from hermes_nb.compiler.fuse import fuse_elementwise
from hermes_nb.ir.node import Node

__all__ = ["eliminate_common_subexpressions", "fold_constants", "fuse_elementwise", "optimize"]


def optimize(outputs: list[Node], *, fuse: bool = True) -> list[Node]:
    """The graph the runtime executes for ``outputs``."""
    graph = eliminate_common_subexpressions(outputs)
    graph = fold_constants(graph)
    if fuse:
        graph = fuse_elementwise(graph)
    return graph
