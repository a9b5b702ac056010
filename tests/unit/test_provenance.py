"""Fusion records which pre-fusion nodes each kernel holds (``compiler.rewrite.origin``), and
plans carry it as ``Kernel.members``."""

from __future__ import annotations

import numpy as np

import hermes_nb as hm
from hermes_nb.api.plan import fusion_plans
from hermes_nb.compiler import fuse_graph, simplify
from hermes_nb.compiler.rewrite import origin
from hermes_nb.ir.node import toposort


def _ops_held(t: hm.Tensor) -> dict[str, list[str]]:
    """Fused node op -> the ops of the unfused nodes it holds (in topological order)."""
    unfused = simplify([t.node])
    op_of = {n.key: n.op for n in toposort(unfused)}
    return {n.op: [op_of[k] for k in origin(n) if k in op_of]
            for n in toposort(fuse_graph(unfused)) if n.op.startswith("fused_")}


def test_an_elementwise_chain_holds_every_op_in_order() -> None:
    a = hm.asarray(np.ones((256, 256), np.float32))  # small inputs are folded instead
    held = _ops_held(hm.sqrt(hm.exp(a * 2.0) + 1.0))
    assert held == {"fused_elementwise": ["constant", "multiply", "exp", "constant", "add", "sqrt"]}


def test_matmul_epilogue_and_reduction_prologue() -> None:
    a = hm.asarray(np.ones((16, 16), np.float32))
    bias = hm.asarray(np.ones((16,), np.float32))
    held = _ops_held(hm.relu(a @ a + bias))
    assert held == {"fused_matmul": ["matmul", "add", "relu"]}
    held = _ops_held(((a * a) - 1.0).sum(axis=1))
    assert held["fused_reduce"][-1] == "sum"
    assert {"multiply", "subtract"} <= set(held["fused_reduce"])


def test_unfused_nodes_are_their_own_origin_even_when_copied() -> None:
    a = hm.asarray(np.ones((16, 16), np.float32))
    t = (hm.compose(hm.gaussian_blur(kernel_size=3))(a) * 2.0).T  # the permute is copied
    unfused, fused = fusion_plans(t)
    names = {k.name for k in unfused.kernels}
    covered = [m for k in fused.kernels for m in k.members if m in names]
    assert sorted(covered) == sorted(names)  # every unfused kernel is held exactly once
    (permute,) = [k for k in fused.kernels if k.ops == ("permute",)]
    assert permute.name not in names and len(permute.members) == 1
    assert permute.members[0] in names  # the copy points back at the original
