"""Constant folding: elementwise and movement ops over small constants run at build time."""

from __future__ import annotations

import numpy as np

from hermes_nb.compiler.rewrite import rebuild
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import Node, OpSpec, is_variable
from hermes_nb.ir.ops import Kind, kind_of

FOLD_LIMIT = 64  # elements; bigger constant work belongs on a device


def _foldable(node: Node, inputs: tuple[Node, ...]) -> bool:
    return (
        node.device is None  # a pinned op runs where the user put it
        and kind_of(node.op) in (Kind.ELEMENTWISE, Kind.MOVEMENT)
        and node.op != "to_device"
        and bool(inputs)
        and all(i.op == "constant" and not is_variable(i) for i in inputs)
        and node.size <= FOLD_LIMIT
    )


def fold_constants(outputs: list[Node]) -> list[Node]:
    """Small constant work folded into new constants holding their own copies. It runs at
    every compute (``optimize``), so a borrowed input is folded from its current contents
    and no folded value outlives the run that read it."""
    # evaluated by the compiler with NumPy's semantics, not run as a device kernel
    host = ArrayOps(np, "scipy.ndimage")

    def replace(node: Node, inputs: tuple[Node, ...]) -> Node | None:
        if not _foldable(node, inputs):
            return None
        probe = Node(node.op, inputs, node.shape, node.dtype, node.attrs, node.device)
        spec = OpSpec.of(probe, "cpu:0")
        value = np.asarray(host.run(spec, [i.attrs["value"] for i in inputs]))
        value = np.array(value, dtype=node.dtype, order="C").reshape(node.shape)
        value.flags.writeable = False
        return Node("constant", (), node.shape, node.dtype, {"value": value}, node.device)

    return rebuild(outputs, replace)
