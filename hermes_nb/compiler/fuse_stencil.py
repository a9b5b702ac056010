"""Stencil fusion: conv2d stages and pointwise maths on one image become one ``fused_stencil``.

A group is a connected set of ``conv2d`` and elementwise nodes of one exact shape
``(..., H, W)`` on one device that lists ``fused_stencil``, reading exactly one
non-literal node from outside (the image; 0-d literals become program constants),
whose members other than the last are read only inside the group and are not
requested outputs, and that holds at least one ``conv2d``. It becomes
``Node("fused_stencil", (image,), ...)`` with a :class:`StencilProgram`.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.fuse import _literal, _program
from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.stencil_program import ConvStage, PointStage, Stage, StencilProgram
from hermes_nb.ir.node import Node, toposort
from hermes_nb.ir.ops import Kind, kind_of

_DTYPES = frozenset({"bool", "int32", "int64", "float32", "float64"})


def _candidate(node: Node) -> bool:
    if node.ndim < 2 or node.dtype.name not in _DTYPES:
        return False
    if node.op == "conv2d":
        if node.dtype.kind != "f" or node.inputs[0].dtype != node.dtype:
            return False
    elif kind_of(node.op) is not Kind.ELEMENTWISE or node.op == "to_device":
        return False
    # every non-literal input must be the node's exact shape: no broadcasting inside a stencil
    if any(i.shape != node.shape and not _literal(i) for i in node.inputs):
        return False
    from hermes_nb.devices import get_device

    return "fused_stencil" in get_device(node.device or "cpu:0").fused_ops


def _groups(outputs: list[Node], excluded: set[int]) -> dict[int, Node]:
    """Node id -> root (last node) of its would-be group, for candidate nodes."""
    order = toposort(outputs)
    readers = users(outputs)
    requested = {id(o) for o in outputs}
    member = {id(n) for n in order if id(n) not in excluded and _candidate(n)}

    def linked(node: Node, i: Node) -> bool:
        return id(i) in member and i.device == node.device and i.shape == node.shape

    # The one outside node each candidate derives from (None: it mixes several), so
    # that a group never gains a second image, e.g. blur(a) + b keeps only blur(a).
    source: dict[int, Node | None] = {}
    for node in order:
        if id(node) not in member:
            continue
        found: set[int] = set()
        origin: Node | None = None
        for i in node.inputs:
            if _literal(i):
                continue
            s = source[id(i)] if linked(node, i) else i
            if s is None:
                found.add(-1)
                continue
            found.add(id(s))
            origin = s
        if len(found) == 1:
            source[id(node)] = origin
        else:
            member.discard(id(node))  # its readers see it as their image

    root_of: dict[int, Node] = {}
    for node in reversed(order):
        if id(node) not in member:
            continue
        root_of[id(node)] = node
        reading = readers.get(id(node), [])
        if id(node) in requested or not reading:
            continue
        roots = {id(root_of[id(r)]) if id(r) in root_of else None for r in reading}
        if len(roots) != 1 or None in roots:
            continue
        root = root_of[id(reading[0])]
        if all(r.device == node.device and r.shape == node.shape for r in reading) and \
                source[id(root)] is source[id(node)]:
            root_of[id(node)] = root
    return root_of


def _externals(root: Node, members: set[int]) -> list[Node]:
    seen: dict[int, Node] = {}
    for node in toposort([root]):
        if id(node) in members:
            for i in node.inputs:
                if id(i) not in members and not _literal(i):
                    seen.setdefault(id(i), i)
    return list(seen.values())


def _stencil(root: Node, members: set[int], image: Node) -> StencilProgram:
    order = [n for n in toposort([root]) if id(n) in members]
    readers: dict[int, list[Node]] = {}
    for n in order:
        for i in n.inputs:
            readers.setdefault(id(i), []).append(n)
    # Elementwise members merge into point stages; one ends (its value is kept in a
    # line buffer) where a conv reads it, where stages diverge, or at the root.
    stage_root: dict[int, Node] = {}
    for n in reversed(order):
        if n.op == "conv2d":
            continue
        reading = readers.get(id(n), [])
        targets = {id(stage_root[id(r)]) if r.op != "conv2d" else None for r in reading}
        if n is root or len(targets) != 1 or None in targets:
            stage_root[id(n)] = n
        else:
            stage_root[id(n)] = stage_root[id(reading[0])]

    value_of: dict[int, int] = {id(image): 0}
    dtypes = [image.dtype.name]
    stages: list[Stage] = []
    for n in order:
        if n.op == "conv2d":
            stages.append(ConvStage(value_of[id(n.inputs[0])], n.attrs["weights"],
                                    n.attrs.get("separable"), n.attrs["border"]))
        elif stage_root[id(n)] is n:
            part = {id(m) for m in order if m.op != "conv2d" and stage_root[id(m)] is n}
            program, ins = _program(n, part)
            stages.append(PointStage(program, tuple(value_of[id(i)] for i in ins)))
        else:
            continue
        value_of[id(n)] = len(stages)
        dtypes.append(n.dtype.name)
    return StencilProgram(tuple(dtypes), tuple(stages))


def fuse_stencils(outputs: list[Node]) -> list[Node]:
    excluded: set[int] = set()
    while True:
        root_of = _groups(outputs, excluded)
        members: dict[int, set[int]] = {}
        roots: dict[int, Node] = {}
        for node_id, root in root_of.items():
            members.setdefault(id(root), set()).add(node_id)
            roots[id(root)] = root
        plans: dict[int, tuple[set[int], Node]] = {}
        retry = False
        by_id = {id(n): n for n in toposort(outputs)}
        for rid, group in members.items():
            if not any(by_id[m].op == "conv2d" for m in group):
                continue
            ext = _externals(roots[rid], group)
            if len(ext) != 1:
                # a group can still end up with two images (e.g. sobel(b) + a with b
                # requested): peel its root off and group again
                excluded.add(rid)
                retry = True
                continue
            plans[rid] = (group, ext[0])
        if not retry:
            break

    def build(node: Node, new: Callable[[Node], Node]) -> Node | None:
        if id(node) not in plans:
            return None
        group, image = plans[id(node)]
        return Node("fused_stencil", (new(image),), node.shape, node.dtype,
                    {"stencil": _stencil(node, group, image)}, node.device)

    return replace_groups(outputs, build)
