"""Matmul epilogue fusion: ``relu(a @ b + bias)`` is the matmul plus one epilogue.

The chain of elementwise consumers of a ``matmul`` (each the only reader of the one
before, of the product's shape, on its device) becomes the epilogue :class:`Program` of
one ``fused_matmul`` node: inputs ``(a, b, *epilogue inputs after the product)``, attrs
``epilogue`` (input 0 is the product) and ``matmul_dtype``. Devices run the product with
their BLAS (or tiled kernel) and apply the epilogue in place or at the store, which saves
the full passes (and temporaries) of the separate elementwise kernels.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.fuse import _program
from hermes_nb.compiler.fuse_reduce import device_fuses, epilogue_chain
from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir.node import Node, toposort


def fuse_matmul_epilogues(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    groups: dict[int, tuple[Node, list[Node]]] = {}  # epilogue root id -> matmul, chain
    for node in toposort(outputs):
        if node.op != "matmul" or not device_fuses(node, "fused_matmul", target):
            continue
        chain = epilogue_chain(node, readers, requested)
        if chain:
            groups[id(chain[-1])] = (node, chain)

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        group = groups.get(id(node))
        if group is None:
            return None
        mm, chain = group
        epilogue, externals = _program(chain[-1], {id(c) for c in chain}, (mm,))
        inputs = tuple(new(n) for n in [*mm.inputs, *externals[1:]])
        attrs = {"epilogue": epilogue, "matmul_dtype": mm.dtype.name}
        return Node("fused_matmul", inputs, node.shape, node.dtype, attrs, node.device)

    return replace_groups(outputs, build) if groups else outputs
