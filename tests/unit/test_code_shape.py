"""The code stays readable: no function in the package runs over 100 lines, no module over
700 (a long function is a writer class with one method per phase waiting to be split)."""

from __future__ import annotations

import ast
from pathlib import Path

import hermes_nb

PACKAGE = Path(hermes_nb.__file__).parent
MAX_FUNCTION_LINES = 100
MAX_MODULE_LINES = 700


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "labextension" not in p.parts)


def test_no_function_is_longer_than_the_limit():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {lines}")
    assert not long, "functions over the limit:\n" + "\n".join(long)


def test_no_module_is_longer_than_the_limit():
    long = [f"{p.relative_to(PACKAGE)}: {n}" for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, "modules over the limit:\n" + "\n".join(long)
