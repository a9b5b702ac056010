"""A global pool joins the convolution it reads: ``mean(relu(conv(x, w) + b), (2, 3))``, a
CNN's last block, is one ``fused_conv`` that reduces each plane of its result as it
computes it, so the full-size result is never written out and read back.

Taken where a ``sum``, ``max`` or ``min``, or a ``fused_reduce`` of one (after
``fuse_reductions``), reduces every spatial axis of a ``fused_conv`` that nothing else
reads, keeping its convolution's dtype, on the same device; a ``fused_reduce`` with no
prologue (it reduces the convolution's result as it is) and an epilogue (a mean's
division) that reads nothing but the reduced value. The ``fused_conv`` gains
attr ``reduce``: ``mode`` (``sum``, ``max`` or ``min``), ``keepdims`` and ``epilogue``
(the reduction's, or None); ``conv_shape`` keeps the convolution's shape. A conv with a
joined pool is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir.node import Node, toposort

#: the reductions a conv kernel computes over its planes
PLANE_REDUCTIONS = frozenset({"sum", "max", "min"})


def fuse_conv_reductions(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    groups: dict[int, Node] = {}  # reduction id -> the fused_conv it reads
    for node in toposort(outputs):
        if node.op in ("fused_reduce", *PLANE_REDUCTIONS) and len(node.inputs) == 1 \
                and target.fuses(node.device, "fused_conv"):
            conv = node.inputs[0]
            if _joins(node, conv) and id(conv) not in requested \
                    and len(readers.get(id(conv), ())) == 1:
                groups[id(node)] = conv

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        conv = groups.get(id(node))
        if conv is None:
            return None
        a = node.attrs
        fused = node.op == "fused_reduce"
        reduce = {"mode": a["reduce"] if fused else node.op, "keepdims": bool(a["keepdims"]),
                  "epilogue": a["epilogue"] if fused else None}
        attrs = {**conv.attrs, "reduce": reduce, "conv_shape": conv.shape}
        return Node("fused_conv", tuple(new(i) for i in conv.inputs), node.shape, node.dtype,
                    attrs, node.device)

    return replace_groups(outputs, build) if groups else outputs


def _joins(reduction: Node, conv: Node) -> bool:
    """Whether ``reduction`` (a ``sum``, ``max`` or ``min``, or a ``fused_reduce`` of one)
    reduces every spatial axis of ``conv`` as it is, in its dtype."""
    dtype = conv.dtype.name
    if conv.op != "fused_conv" or "pool" in conv.attrs or "reduce" in conv.attrs \
            or conv.device != reduction.device or conv.attrs["conv_dtype"] != dtype \
            or reduction.dtype.name != dtype:
        return False
    a = reduction.attrs
    axes = tuple(axis % len(conv.shape) for axis in a["axes"])
    if sorted(axes) != list(range(2, len(conv.shape))):
        return False
    if reduction.op != "fused_reduce":
        return True
    prologue, epilogue = a["prologue"], a["epilogue"]
    return (a["reduce"] in PLANE_REDUCTIONS and a["reduce_dtype"] == dtype
            and a["n_prologue"] == 1 and not prologue.instrs and prologue.outputs == (0,)
            and tuple(a["in_shape"]) == tuple(conv.shape)
            and (epilogue is None or epilogue.n_inputs == 1))
