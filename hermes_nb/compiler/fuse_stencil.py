"""Stencil fusion: conv2d stages and pointwise maths on one image become one ``fused_stencil``.

A group is a connected set of ``conv2d`` and elementwise nodes of one exact shape
``(..., H, W)`` on one device that lists ``fused_stencil``, reading exactly one
non-literal node from outside (the image; 0-d literals become program constants),
whose members other than the last are read only inside the group and are not
requested outputs, and that holds at least one ``conv2d``. It becomes
``Node("fused_stencil", (image,), ...)`` with a :class:`StencilProgram`.

A group whose estimated build cost (:func:`stage_cost` summed along its deepest chain)
exceeds ``STENCIL_BUDGET`` is cut into several kernels at nodes every path to the root
goes through: code generators compile one kernel's stages into one function, whose
compile time grows faster than its stages.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes_nb.compiler.fuse import _literal, _program
from hermes_nb.compiler.rewrite import replace_groups, users
from hermes_nb.compiler.target import ANY_DEVICE, Target
from hermes_nb.ir import dtypes
from hermes_nb.ir.node import Node, toposort
from hermes_nb.ir.ops import Kind, kind_of
from hermes_nb.ir.stencil import ConvStage, PointStage, Stage, StencilProgram

_DTYPES = frozenset(dtypes.NAMES)

# Build cost units per fused stencil kernel: five 3x3 blur + axpy stages (50 each) fit,
# a 5x5 blur and a Sobel magnitude (~165) too.
STENCIL_BUDGET = 256


def stage_cost(node: Node) -> int:
    """Estimated build cost of one member: a convolution costs a fixed part plus its taps'
    reach, an elementwise op one unit."""
    if node.op == "conv2d":
        weights = node.attrs["weights"]
        return 24 + 4 * (len(weights) + len(weights[0]))
    return 1


def _candidate(node: Node, target: Target) -> bool:
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
    return target.fuses(node.device, "fused_stencil")


def _groups(outputs: list[Node], excluded: set[int], cuts: set[int],
            target: Target) -> dict[int, Node]:
    """Node id -> root (last node) of its would-be group, for candidate nodes (a node in
    ``cuts`` ends its group, as a requested output does)."""
    order = toposort(outputs)
    readers = users(outputs)
    requested = {id(o) for o in outputs} | cuts
    member = {id(n) for n in order if id(n) not in excluded and _candidate(n, target)}

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
                                    n.attrs.get("separable"), n.attrs["border"],
                                    n.attrs.get("stage", ("conv2d", "conv2d"))))
        elif stage_root[id(n)] is n:
            part = {id(m) for m in order if m.op != "conv2d" and stage_root[id(m)] is n}
            program, ins = _program(n, part)
            stages.append(PointStage(program, tuple(value_of[id(i)] for i in ins)))
        else:
            continue
        value_of[id(n)] = len(stages)
        dtypes.append(n.dtype.name)
    return StencilProgram(tuple(dtypes), tuple(stages))


def _path_costs(order: list[Node], members: set[int], start: int | None = None
                ) -> dict[int, int]:
    """Cost of the deepest chain of members ending at each member (``start`` costs 0)."""
    cost: dict[int, int] = {}
    for n in order:
        if id(n) == start:
            cost[id(n)] = 0
        elif id(n) in members:
            cost[id(n)] = max((cost.get(id(i), 0) for i in n.inputs), default=0) + stage_cost(n)
    return cost


def _below(root: Node, members: set[int], cut: Node) -> set[int] | None:
    """The members computed from ``cut`` on the way to ``root``, or None if some member
    there reads another node from outside (``cut`` would not be the lower part's one image)."""
    seen = {id(root)}
    todo = [root]
    while todo:
        n = todo.pop()
        for i in n.inputs:
            if i is cut or _literal(i) or id(i) in seen:
                continue
            if id(i) not in members:
                return None
            seen.add(id(i))
            todo.append(i)
    return seen


_CUT_TRIES = 64  # candidate cut nodes tried per kernel, so a wide graph stays linear


def _cuts(root: Node, members: set[int]) -> list[Node]:
    """Nodes at which to cut the group of ``root`` so that each part stays within
    ``STENCIL_BUDGET``: each the latest node within budget that dominates the rest."""
    order = [n for n in toposort([root]) if id(n) in members]
    cuts: list[Node] = []
    start: Node | None = None
    while True:
        cost = _path_costs(order, members, None if start is None else id(start))
        if cost[id(root)] <= STENCIL_BUDGET:
            return cuts
        within = [n for n in order if n is not root and n is not start
                  and id(n) in cost and cost[id(n)] <= STENCIL_BUDGET]
        for cut in reversed(within[-_CUT_TRIES:]):
            below = _below(root, members, cut)
            if below is not None:
                break
        else:
            return cuts  # no single node separates the parts: keep one kernel
        cuts.append(cut)
        members = below
        order = [n for n in order if id(n) in members or n is cut]
        start = cut


def fuse_stencils(outputs: list[Node], target: Target = ANY_DEVICE) -> list[Node]:
    excluded: set[int] = set()
    cuts: set[int] = set()
    while True:
        root_of = _groups(outputs, excluded, cuts, target)
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
            split = _cuts(roots[rid], group)
            if split:
                cuts.update(id(n) for n in split)  # group again with these as group ends
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
