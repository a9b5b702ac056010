"""``explain()``: the kernels a tensor's graph runs, where, and why (plans are built by
:mod:`hermes_nb.runtime.explain`)."""

from __future__ import annotations

from hermes_nb.api.tensor import Tensor
from hermes_nb.runtime.explain import explain_nodes, fusion_plans_of
from hermes_nb.runtime.plan import Kernel, Plan

__all__ = ["Kernel", "Plan", "explain", "fusion_plans"]


def explain(tensor: Tensor) -> Plan:
    """The kernels ``tensor``'s graph runs, in order, with their devices."""
    return explain_nodes([tensor.node])


def fusion_plans(*tensors: Tensor) -> tuple[Plan, Plan]:
    """The plan before fusion and the plan after it, from one graph of ``tensors``: each fused
    kernel's ``members`` are the keys of the unfused plan's kernels it holds."""
    return fusion_plans_of([t.node for t in tensors])
