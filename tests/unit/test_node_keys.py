"""Task keys come from a node's content: the same graph gets the same keys in every
process, and any difference in content (a constant's bits, an attribute) changes them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import hermes_nb as hm
from hermes_nb.compiler import optimize
from hermes_nb.ir.node import toposort
from hermes_nb.runtime import compile_target

_GRAPH = """
import numpy as np, hermes_nb as hm
from hermes_nb.compiler import optimize
from hermes_nb.ir.node import toposort
from hermes_nb.runtime import compile_target
x = hm.asarray(np.arange(4096, dtype=np.float32).reshape(64, 64), copy=True)
blur = hm.gaussian_blur(x.reshape(1, 64, 64), 3, 1.0)
outs = [((x * 0.5 + 1.0) ** 2).sum(axis=1)._node, blur._node]
print(" ".join(n.key for n in toposort(optimize(outs, compile_target()))))
"""


def _keys_in_new_process() -> list[str]:
    out = subprocess.run([sys.executable, "-c", _GRAPH], capture_output=True, text=True,
                         check=True, env=None)
    return out.stdout.split()


def test_fused_graph_has_the_same_keys_in_every_process() -> None:
    first, second = _keys_in_new_process(), _keys_in_new_process()
    assert first == second
    assert any(k.startswith("hermes-fused_reduce-") for k in first)
    assert any(k.startswith("hermes-fused_stencil-") for k in first)


def _fused_key(scale: float, dtype: str = "float32") -> str:
    x = hm.asarray(np.ones((64, 64), dtype=dtype), copy=True)
    (out,) = optimize([((x * scale) ** 2).sum(axis=1)._node], compile_target())
    return out.key


def test_a_different_scalar_or_dtype_changes_the_key() -> None:
    assert _fused_key(0.5) == _fused_key(0.5)
    assert _fused_key(0.5) != _fused_key(0.25)
    assert _fused_key(0.0) != _fused_key(-0.0)  # by the bits, not by ==
    assert _fused_key(0.5) != _fused_key(0.5, "float64")


def test_borrowed_constants_never_share_a_key() -> None:
    a = np.ones(4, np.float32)
    nodes = [hm.asarray(a)._node, hm.asarray(a)._node]
    assert nodes[0].key != nodes[1].key
    assert all(n.key.startswith("hermes-constant-") for n in toposort(nodes))


def test_a_program_keys_the_same_before_and_after_its_cached_properties() -> None:
    """A node key hashes its program's pickle: the properties a kernel launch computes
    (signature, parameters, template) must not change it."""
    from hermes_nb.ir.node import Node
    from hermes_nb.ir.program import Instr, Program

    def fused(program: Program) -> Node:
        x = Node("full", (), (4,), np.dtype("float32"), {"fill_value": 1.0})
        return Node("fused_elementwise", (x,), (4,), np.dtype("float32"), {"program": program})

    program = Program(("float32",), ((2.0, "float32"),),
                      (Instr("multiply", (0, 1), "float32"),), (2,))
    before = fused(program).key
    assert program.signature and program.params == (0,) and program.template is not program
    assert fused(program).key == before
