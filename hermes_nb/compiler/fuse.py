"""Elementwise fusion: each maximal tree of elementwise ops on one device becomes one
``fused_elementwise`` node holding a :class:`Program`.

A node joins its readers' kernel when every reader is in that kernel, it is not a
requested output, and it runs on the same device, and while the kernel holds fewer than
``ELEMENTWISE_BUDGET`` ops (a compiler's time grows faster than the function it compiles,
so a longer chain becomes several kernels). Scalar constants become the program's
``consts``: kernel arguments, not part of its source (``ir.program``).
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir.node import Node, is_variable, toposort
from hermes_nb.ir.ops import FLOAT_FUNCTIONS, Kind, kind_of
from hermes_nb.ir.program import Instr, Program


def _elementwise(node: Node, target: Target) -> bool:
    if kind_of(node.op) is not Kind.ELEMENTWISE or node.op == "to_device":
        return False
    return target.fuses(node.device, "fused_elementwise")


ELEMENTWISE_BUDGET = 512  # ops per fused elementwise kernel


def _literal(node: Node) -> bool:
    """A 0-d constant, which a program takes as a constant of its own."""
    return node.op == "constant" and node.ndim == 0 and not is_variable(node)


def _groups(outputs: list[Node], target: Target) -> dict[int, int]:
    """Node id -> id of the root (last node) of the kernel it belongs to."""
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    root_of: dict[int, int] = {}
    size: dict[int, int] = {}  # root id -> ops its kernel holds
    for node in reversed(toposort(outputs)):
        if not _elementwise(node, target):
            continue
        root_of[id(node)] = id(node)
        size[id(node)] = 1
        reading = readers.get(id(node), [])
        if id(node) in requested or not reading:
            continue
        roots = {root_of.get(id(r)) for r in reading}
        if len(roots) != 1 or None in roots or any(r.device != node.device for r in reading):
            continue
        # recomputing a transcendental per broadcast element costs more than a store
        if node.op in FLOAT_FUNCTIONS and any(r.size != node.size for r in reading):
            continue
        root = roots.pop()
        if size[root] >= ELEMENTWISE_BUDGET:  # type: ignore[index]
            continue
        size[root] += 1  # type: ignore[index]
        root_of[id(node)] = root  # type: ignore[assignment]
    return root_of


def _program(root: Node, members: set[int], leading: tuple[Node, ...] = ()
             ) -> tuple[Program, list[Node]]:
    """The program computing ``root`` from the nodes outside ``members`` (its externals,
    ``leading`` ones first: a reduction epilogue reads the reduced value as input 0)."""
    externals: list[Node] = list(leading)
    consts: list[tuple[bool | int | float, str]] = []
    instrs: list[Instr] = []
    value_of: dict[int, tuple[str, int]] = {id(n): ("in", k) for k, n in enumerate(leading)}
    order = [n for n in toposort([root]) if id(n) in members]

    def ref(node: Node) -> tuple[str, int]:
        if id(node) in value_of:
            return value_of[id(node)]
        if _literal(node):
            consts.append((node.attrs["value"].item(), node.dtype.name))
            value_of[id(node)] = ("c", len(consts) - 1)
        else:
            externals.append(node)
            value_of[id(node)] = ("in", len(externals) - 1)
        return value_of[id(node)]

    for node in order:
        args = tuple(ref(i) for i in node.inputs)
        instrs.append(Instr(node.op, args, node.dtype.name))  # type: ignore[arg-type]
        value_of[id(node)] = ("v", len(instrs) - 1)

    def number(r: tuple[str, int]) -> int:
        kind, i = r
        return i if kind == "in" else len(externals) + i if kind == "c" else \
            len(externals) + len(consts) + i

    final = tuple(Instr(i.op, tuple(number(a) for a in i.args), i.dtype)  # type: ignore[arg-type]
                  for i in instrs)
    program = Program(tuple(n.dtype.name for n in externals), tuple(consts), final,
                      (len(externals) + len(consts) + len(instrs) - 1,))
    return program, externals


def fuse_elementwise(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    root_of = _groups(outputs, target)
    members: dict[int, set[int]] = {}
    for node_id, root in root_of.items():
        members.setdefault(root, set()).add(node_id)

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        group = members.get(id(node))
        if group is None:
            return None
        literal_inputs = any(_literal(i) for i in node.inputs)
        if len(group) == 1 and not literal_inputs:
            return None
        program, externals = _program(node, group)
        return Node("fused_elementwise", tuple(new(e) for e in externals), node.shape,
                    node.dtype, {"program": program}, node.device)

    return replace_groups(outputs, build)
