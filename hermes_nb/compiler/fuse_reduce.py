"""Reduction fusion: elementwise producers (and consumers) join the reduction kernel.

``sum``/``prod``/``max``/``min`` over any axes becomes one ``fused_reduce`` node when
the device lists it in ``fused_ops`` and there is something to fuse:

- the *prologue*: the maximal tree of elementwise nodes feeding the reduction that no
  one else reads (and that are not requested outputs), as a :class:`Program` over the
  inputs broadcast to the reduction's input shape; its output is the value reduced;
- the *epilogue*: the chain of elementwise consumers of the reduced value, each the only
  reader of the previous one and of the reduction's (output) shape, as a
  :class:`Program` whose input 0 is the reduced value (``x.sum(1) / n``, ``mean``, the
  ``/ divisor`` of ``var``, ``sqrt`` of ``std``).

``argmax``/``argmin`` stay unfused. Layout of the node (also documented in ops.py):
inputs are the prologue's inputs then the epilogue's inputs after the reduced value;
attrs ``reduce`` (op), ``axes``, ``keepdims``, ``in_shape`` (the shape reduced),
``prologue``, ``epilogue`` (Program or None), ``n_prologue`` (how many inputs are the
prologue's) and ``reduce_dtype`` (the reduction's dtype; what it accumulates in is
``ir.reduce.ReduceDef.work_dtype`` of it).
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.fuse import _literal, _program
from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir.node import Node, toposort
from hermes_nb.ir.ops import FLOAT_FUNCTIONS, Kind, kind_of
from hermes_nb.ir.program import Program
from hermes_nb.ir.reduce import REDUCES

# arg reductions fold (value, index) pairs: only their own kernels run them
FUSABLE_REDUCTIONS = frozenset(name for name, rdef in REDUCES.items() if not rdef.is_arg)


def device_fuses(node: Node, fused_op: str, target: Target) -> bool:
    """Whether the device ``node`` runs on implements ``fused_op``."""
    return target.fuses(node.device, fused_op)


def _pointwise(node: Node, device: str | None) -> bool:
    return kind_of(node.op) is Kind.ELEMENTWISE and node.op != "to_device" \
        and node.device == device


def prologue_members(root: Node, readers: dict[int, list[Node]], requested: set[int],
                     consumer: Node, size: int, claimed: set[int]) -> set[int]:
    """Ids of the elementwise nodes from ``root`` up that only ``consumer`` (through
    each other) reads: the tree a prologue program computes per element of ``size``.
    Nodes in ``claimed`` (another kernel's) stay out."""
    members: set[int] = set()
    inside = {id(consumer)}
    for node in reversed(toposort([root])):
        if (not _pointwise(node, consumer.device) or id(node) in requested or _literal(node)
                or id(node) in claimed
                or not all(id(r) in inside for r in readers.get(id(node), []))):
            continue
        # recomputing a transcendental per broadcast element costs more than a store
        if node.op in FLOAT_FUNCTIONS and node.size != size:
            continue
        members.add(id(node))
        inside.add(id(node))
    return members


def epilogue_chain(head: Node, readers: dict[int, list[Node]], requested: set[int]
                   ) -> list[Node]:
    """The elementwise consumers after ``head``: each the only reader of the one before,
    same device and shape as ``head``; empty when ``head`` itself is requested."""
    chain: list[Node] = []
    last = head
    while id(last) not in requested:
        reading = readers.get(id(last), [])
        if len(reading) != 1:
            break
        (nxt,) = reading
        if not _pointwise(nxt, head.device) or nxt.shape != head.shape:
            break
        chain.append(nxt)
        last = nxt
    return chain


def identity_program(dtype: str) -> Program:
    """A program whose output is its one input (a reduction without a prologue); not to
    be confused with a reduction's identity value (``ir.reduce``)."""
    return Program((dtype,), (), (), (0,))


def fuse_reductions(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    groups: dict[int, tuple[Node, set[int], list[Node]]] = {}  # root id -> reduce, pro, epi
    claimed: set[int] = set()  # nodes already inside a fused reduction
    for node in toposort(outputs):
        if node.op not in FUSABLE_REDUCTIONS or not device_fuses(node, "fused_reduce", target):
            continue
        (src,) = node.inputs
        members = prologue_members(src, readers, requested, node, src.size, claimed)
        chain = epilogue_chain(node, readers, requested)
        if not members and not chain:
            continue  # nothing to fuse: the plain reduction kernel is as good
        claimed |= members | {id(c) for c in chain}
        groups[id(chain[-1] if chain else node)] = (node, members, chain)

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        group = groups.get(id(node))
        if group is None:
            return None
        red, members, chain = group
        (src,) = red.inputs
        if members:
            prologue, pro_inputs = _program(src, members)
        else:
            prologue, pro_inputs = identity_program(src.dtype.name), [src]
        epilogue, epi_inputs = None, [red]
        if chain:
            epilogue, epi_inputs = _program(chain[-1], {id(c) for c in chain}, (red,))
        inputs = tuple(new(n) for n in [*pro_inputs, *epi_inputs[1:]])
        attrs = {
            "reduce": red.op, "axes": tuple(red.attrs["axes"]),
            "keepdims": bool(red.attrs["keepdims"]), "in_shape": tuple(src.shape),
            "prologue": prologue, "epilogue": epilogue, "n_prologue": len(pro_inputs),
            "reduce_dtype": red.dtype.name,
        }
        return Node("fused_reduce", inputs, node.shape, node.dtype, attrs, node.device)

    return replace_groups(outputs, build) if groups else outputs
