"""No module of hermes_nb imports itself back, directly or through others: every import
counts, at module level or inside a function (grimp sees both)."""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            child = next(imported, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
            elif child in on_stack:
                low[module] = min(low[module], index[child])
    return found


def _describe(graph: grimp.ImportGraph, component: list[str]) -> str:
    members = set(component)
    lines = [f"cycle of {len(component)} modules:"]
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            where = graph.get_import_details(importer=importer, imported=imported)
            at = ", ".join(f"l.{d['line_number']}" for d in where)
            lines.append(f"  {importer} -> {imported} ({at})")
    return "\n".join(lines)


def test_tarjan_finds_a_planted_cycle() -> None:
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_hermes_has_no_import_cycle() -> None:
    graph = grimp.build_graph("hermes_nb")
    cycles = _cycles(graph)
    for component in cycles:
        print(_describe(graph, component))
    assert not cycles, "\n\n".join(_describe(graph, c) for c in cycles)
