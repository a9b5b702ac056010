"""Epilogue fusion: ``relu(a @ b + bias)`` is the matmul plus one epilogue, and a
convolution's bias, folded batch norm and activation are the ``conv`` plus one epilogue.

The chain of elementwise consumers of a ``matmul`` or ``conv`` (each the only reader of the
one before, of the product's shape, on its device) becomes the epilogue :class:`Program` of
one ``fused_matmul`` or ``fused_conv`` node: inputs ``(a, b, *epilogue inputs after the
product)``, attrs ``epilogue`` (input 0 is the product) and ``matmul_dtype`` or
``conv_dtype`` (a conv keeps its own attrs too). Devices run the product with their BLAS,
tiled or window kernel and apply the epilogue in place or at the store, which saves the
full passes (and temporaries) of the separate elementwise kernels.

A ``pool`` that alone reads such a ``fused_conv`` (conv, bias, activation, then max pool:
the block of most CNNs) joins it as attr ``pool`` (the pool's own attrs; ``conv_shape``
keeps the convolution's): the convolution's full-size result is then never written out.
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


POOL_ATTRS = ("mode", "kernel", "strides", "dilations", "pads")


def fuse_conv_pools(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    """Each ``pool`` whose input is a ``fused_conv`` that nothing else reads (on the same
    device, keeping its convolution's dtype, which the pool then reads in place) becomes
    that ``fused_conv`` with the pool's attrs under ``pool``."""
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    groups: dict[int, Node] = {}  # pool id -> the fused_conv it reads
    for node in toposort(outputs):
        src = node.inputs[0] if node.op == "pool" else None
        if src is None or src.op != "fused_conv" or "pool" in src.attrs \
                or id(src) in requested or len(readers.get(id(src), ())) != 1 \
                or src.device != node.device or src.attrs["conv_dtype"] != src.dtype.name:
            continue
        groups[id(node)] = src

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        conv = groups.get(id(node))
        if conv is None:
            return None
        attrs = {**conv.attrs, "pool": {k: node.attrs[k] for k in POOL_ATTRS},
                 "conv_shape": conv.shape}
        return Node("fused_conv", tuple(new(i) for i in conv.inputs), node.shape, node.dtype,
                    attrs, node.device)

    return replace_groups(outputs, build) if groups else outputs
