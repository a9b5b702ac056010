"""Softmax fusion: ``exp(x - max(x)) / sum(exp(x - max(x)))`` over the same axes becomes
one ``fused_softmax`` node (attr ``axes``; input ``x``) on the devices that list it in
``fused_ops``.

Unfused, the stable softmax is four kernels (the max, the shifted exponential, its sum,
the division), and the exponential is written out for the last two to read: on a small
tensor (a classifier's last layer) each kernel's launch costs more than its arithmetic.
The pattern is taken only whole: every intermediate read by the next step alone, none a
requested output, all of one float dtype and on one device; anything else is left to the
other passes, which fuse it as before.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.fuse_reduce import device_fuses
from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir.node import Node, toposort

#: the ops a ``fused_softmax`` kernel holds, in order
SOFTMAX_STEPS = ("max", "subtract", "exp", "sum", "divide")


def fuse_softmaxes(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    sources: dict[int, tuple[Node, tuple[int, ...]]] = {}  # division id -> (x, axes)
    for node in toposort(outputs):
        found = _softmax_of(node, readers, requested)
        if found is not None and device_fuses(node, "fused_softmax", target):
            sources[id(node)] = found

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        found = sources.get(id(node))
        if found is None:
            return None
        x, axes = found
        return Node("fused_softmax", (new(x),), node.shape, node.dtype, {"axes": axes},
                    node.device)

    return replace_groups(outputs, build) if sources else outputs


def _softmax_of(division: Node, readers: dict[int, list[Node]], requested: set[int]
                ) -> tuple[Node, tuple[int, ...]] | None:
    """``(x, axes)`` where ``division`` ends a whole stable softmax of ``x``, else None."""
    if division.op != "divide" or division.dtype.kind != "f":
        return None
    exp, total = division.inputs
    if exp.op != "exp" or total.op != "sum" or total.inputs != (exp,):
        return None
    shifted = exp.inputs[0]
    if shifted.op != "subtract":
        return None
    x, peak = shifted.inputs
    if peak.op != "max" or peak.inputs != (x,) or x.shape != division.shape:
        return None
    axes = tuple(total.attrs["axes"])
    if tuple(peak.attrs["axes"]) != axes or not (total.attrs["keepdims"] and
                                                  peak.attrs["keepdims"]):
        return None
    steps = (peak, shifted, exp, total, division)
    if any(n.dtype != division.dtype or n.device != division.device for n in (x, *steps)):
        return None
    # each intermediate read only inside the pattern (the exponential by the sum and the
    # division, the others by the next step), none wanted as an output of its own
    inside = {id(n) for n in steps}
    if any(id(n) in requested or not all(id(r) in inside for r in readers.get(id(n), ()))
           for n in steps[:-1]):
        return None
    return x, axes
