"""Epilogue fusion: ``relu(a @ b + bias)`` is the matmul plus one epilogue, and a
convolution's bias, folded batch norm and activation are the ``conv`` plus one epilogue.

The chain of elementwise consumers of a ``matmul`` or ``conv`` (each the only reader of the
one before, of the product's shape, on its device) becomes the epilogue :class:`Program` of
one ``fused_matmul`` or ``fused_conv`` node: inputs ``(a, b, *epilogue inputs after the
product)``, attrs ``epilogue`` (input 0 is the product) and ``matmul_dtype`` or
``conv_dtype`` (a conv keeps its own attrs too). Devices run the product with their BLAS,
tiled or window kernel and apply the epilogue in place or at the store, which saves the
full passes (and temporaries) of the separate elementwise kernels.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.fuse import _program
from hermes_nb.compiler.fuse_reduce import device_fuses, epilogue_chain
from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir.node import Node, toposort

#: op -> the fused op it becomes with an epilogue, and the attr naming its own dtype
FUSED_FORMS = {"matmul": ("fused_matmul", "matmul_dtype"), "conv": ("fused_conv", "conv_dtype")}


def fuse_matmul_epilogues(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    groups: dict[int, tuple[Node, list[Node]]] = {}  # epilogue root id -> core op, chain
    for node in toposort(outputs):
        form = FUSED_FORMS.get(node.op)
        if form is None or not device_fuses(node, form[0], target):
            continue
        chain = epilogue_chain(node, readers, requested)
        if chain:
            groups[id(chain[-1])] = (node, chain)

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        group = groups.get(id(node))
        if group is None:
            return None
        core, chain = group
        fused_op, dtype_attr = FUSED_FORMS[core.op]
        epilogue, externals = _program(chain[-1], {id(c) for c in chain}, (core,))
        inputs = tuple(new(n) for n in [*core.inputs, *externals[1:]])
        attrs = {**core.attrs, "epilogue": epilogue, dtype_attr: core.dtype.name}
        return Node(fused_op, inputs, node.shape, node.dtype, attrs, node.device)

    return replace_groups(outputs, build) if groups else outputs
