"""The compiler fuses for a Target (plain data), never for a live device."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

import hermes_nb as hm
from hermes_nb.compiler import optimize
from hermes_nb.compiler.target import FUSED_KINDS, Target
from hermes_nb.runtime import compile_target


def _chain() -> hm.Tensor:
    x = hm.asarray(np.linspace(0, 1, 1000, dtype=np.float32))
    return hm.exp(x * 2.0 + 1.0).sum()


def _ops(nodes) -> set[str]:
    from hermes_nb.ir.node import toposort

    return {n.op for n in toposort(nodes)}


def test_a_device_without_a_fused_kind_gets_none_of_it():
    node = _chain().node
    everything = _ops(optimize([node], Target()))
    assert "fused_reduce" in everything
    no_reduce = Target(MappingProxyType({"cpu:0": FUSED_KINDS - {"fused_reduce"}}))
    partial = _ops(optimize([node], no_reduce))
    assert "fused_reduce" not in partial and "fused_elementwise" in partial
    nothing = _ops(optimize([node], Target(MappingProxyType({"cpu:0": frozenset()}))))
    assert not any(op.startswith("fused") for op in nothing)


def test_the_runtime_target_lists_every_device_and_fuses_nothing_unknown():
    target = compile_target()
    assert set(target.fused_ops) == {d.id for d in hm.devices()}
    assert not target.fuses("opencl:99", "fused_elementwise")
    assert target.fuses(None, "fused_elementwise")  # unplaced nodes run on cpu:0
