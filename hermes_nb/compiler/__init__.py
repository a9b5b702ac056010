"""Compiler passes, each graph in, graph out: CSE, constant folding, fusion.

Fusion passes only fuse for devices whose ``fused_ops`` name the fused op, so a
device gains a fused kernel kind by implementing it and listing it there.
"""

from __future__ import annotations

from hermes_nb.compiler.cse import eliminate_common_subexpressions
from hermes_nb.compiler.fold import fold_constants
from hermes_nb.compiler.fuse import fuse_elementwise
from hermes_nb.compiler.fuse_conv_reduce import fuse_conv_reductions
from hermes_nb.compiler.fuse_matmul import fuse_conv_pools, fuse_matmul_epilogues
from hermes_nb.compiler.fuse_reduce import fuse_reductions
from hermes_nb.compiler.fuse_softmax import fuse_softmaxes
from hermes_nb.compiler.fuse_stencil import fuse_stencils
from hermes_nb.compiler.kept_dims import drop_kept_dims
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir.node import Node

__all__ = [
    "drop_kept_dims",
    "eliminate_common_subexpressions",
    "fold_constants",
    "fuse_conv_pools",
    "fuse_conv_reductions",
    "fuse_elementwise",
    "fuse_graph",
    "fuse_matmul_epilogues",
    "fuse_reductions",
    "fuse_softmaxes",
    "fuse_stencils",
    "optimize",
    "simplify",
]


def simplify(outputs: list[Node]) -> list[Node]:
    """Common subexpressions merged and small constants folded: the graph before fusion."""
    return fold_constants(eliminate_common_subexpressions(outputs))


def fuse_graph(graph: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    """Every fusion pass, for what ``target``'s devices run; ``compiler.rewrite.origin``
    names the nodes each fused node holds."""
    # the most specific patterns first: each pass leaves what it cannot take to the next
    graph = fuse_stencils(graph, target)
    graph = fuse_softmaxes(graph, target)
    graph = fuse_matmul_epilogues(graph, target)
    graph = fuse_conv_pools(graph, target)
    graph = drop_kept_dims(fuse_reductions(graph, target))
    graph = fuse_conv_reductions(graph, target)
    return fuse_elementwise(graph, target)


def optimize(outputs: list[Node], target: Target = ANY_DEVICE, *, fuse: bool = True) -> list[Node]:
    """The graph the runtime executes for ``outputs`` on ``target``'s devices."""
    graph = simplify(outputs)
    return fuse_graph(graph, target) if fuse else graph
