"""What a run's kernels compute, counted when the run is planned (from shapes only, a few
microseconds): each kernel's floating-point operations and the kernels and bytes the same
graph has without fusion, so a report can give GFLOP/s and what fusion saved after the
graph is gone.

FLOPs are exact for a matmul (2·M·N·K) and a convolution (2 per weight per output);
elsewhere they are an estimate: one operation per instruction of a fused program per
element, two per stencil tap per pixel, one per window element pooled, one per reduced
element. Data movement (transpose, slicing, gathers) counts none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hermes_nb.ir.node import Node, toposort
from hermes_nb.ir.ops import Kind, kind_of
from hermes_nb.ir.windows import conv_flops


@dataclass(frozen=True)
class Flops:
    count: float
    estimated: bool  # False only where the count is exact (a matmul without an epilogue)


@dataclass(frozen=True)
class RunWork:
    """Per kernel key its FLOPs (absent: no arithmetic to count); the kernels and bytes read
    and written of the graph before fusion (the unfused plan of the same graph)."""

    flops: dict[str, Flops] = field(default_factory=dict)
    unfused_kernels: int = 0
    unfused_bytes: int = 0
    #: pre-fusion kernels whose bytes are unknown (rewritten before fusion); 0: exact
    unfused_unknown: int = 0


def _is_kernel(node: Node) -> bool:
    """As plans count kernels: every node but the sources (``full``/``arange`` run)."""
    return kind_of(node.op) is not Kind.SOURCE or node.op in ("full", "arange")


def _instrs(program: Any) -> int:
    return len(program.instrs) if program is not None else 0


def _stencil_flops(program: Any, elements: int) -> float:
    total = 0
    for stage in program.stages:
        if hasattr(stage, "weights"):
            taps = (sum(len(t) for t in stage.separable) if stage.separable is not None
                    else sum(len(row) for row in stage.weights))
            total += 2 * taps
        else:
            total += _instrs(stage.program)
    return float(total * elements)


def flops_of(node: Node) -> Flops | None:
    """The floating-point operations ``node`` runs (None: a kernel that only moves data)."""
    n = math.prod(node.shape)
    op, attrs = node.op, node.attrs
    if op in ("matmul", "fused_matmul"):
        k = node.inputs[0].shape[-1]
        epilogue = _instrs(attrs.get("epilogue"))
        return Flops(float(2 * n * k + epilogue * n), epilogue > 0)
    if op in ("conv", "fused_conv"):
        x, w = node.inputs[0].shape, node.inputs[1].shape
        conv_shape = attrs.get("conv_shape", node.shape)  # a joined pool makes it smaller
        epilogue = _instrs(attrs.get("epilogue")) * math.prod(conv_shape)
        pool = attrs.get("pool")
        pooled = n * math.prod(pool["kernel"]) if pool is not None else 0
        if "reduce" in attrs:  # every value of the result read once
            pooled = math.prod(conv_shape) + n * _instrs(attrs["reduce"]["epilogue"])
        return Flops(float(conv_flops(x, w, conv_shape) + epilogue + pooled),
                     epilogue + pooled > 0)
    if op == "pool":
        return Flops(float(n * math.prod(attrs["kernel"])), True)
    if op == "fused_elementwise":
        return Flops(float(_instrs(attrs["program"]) * n), True)
    if op == "fused_reduce":
        m = math.prod(attrs["in_shape"])
        return Flops(float(m * (1 + _instrs(attrs.get("prologue")))
                           + n * _instrs(attrs.get("epilogue"))), True)
    if op == "fused_stencil":
        return Flops(_stencil_flops(attrs["stencil"], n), True)
    if op == "conv2d":
        weights = attrs["weights"]
        return Flops(float(2 * sum(len(r) for r in weights) * n), True)
    kind = kind_of(op) if op not in ("full", "arange") else Kind.SOURCE
    if kind is Kind.ELEMENTWISE:
        return Flops(float(n), True)
    if kind is Kind.REDUCE:
        return Flops(float(math.prod(node.inputs[0].shape)), True)
    return None


def run_work(outputs: list[Node], optimized: list[Node], members: set[str]) -> RunWork:
    """The FLOPs of ``optimized``'s kernels and the unfused figures of the graph ``outputs``
    (as the user built it): its kernels whose keys are among ``members``, the pre-fusion
    keys the plan's kernels hold."""
    flops: dict[str, Flops] = {}
    for node in toposort(optimized):
        if _is_kernel(node):
            counted = flops_of(node)
            if counted is not None:
                flops[node.key] = counted
    found: dict[str, int] = {}
    sources: set[str] = set()
    for node in toposort(outputs):
        if node.key not in members:
            continue
        if _is_kernel(node):
            found[node.key] = node.nbytes + sum(i.nbytes for i in node.inputs)
        else:  # a constant folded into a fused kernel
            sources.add(node.key)
    unknown = len(members - found.keys() - sources)
    return RunWork(flops, len(found) + unknown, sum(found.values()), unknown)
