"""``explain()``: the kernels a graph runs, where, and why."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes_nb.ir.node import Node, toposort
from hermes_nb.ir.ops import Kind, kind_of

if TYPE_CHECKING:
    from hermes_nb.api.tensor import Tensor
    from hermes_nb.runtime.placement import Placement
    from hermes_nb.scheduler import Decision



def _estimates(decision: Decision | None) -> dict[str, float | None]:
    """Each candidate device's estimated finish time in seconds (None: not yet measured)."""
    if decision is None:
        return {}
    return {c.device: c.finish_s for c in decision.candidates}


@dataclass(frozen=True)
class Kernel:
    """One unit of work in a plan: the ops it holds and where it runs."""

    name: str
    ops: tuple[str, ...]
    device: str
    reason: str
    inputs: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    bytes_moved: int
    source: str | None = None
    calibrating: bool = False  # the scheduler is still measuring the candidates
    estimates: dict[str, float | None] = field(default_factory=dict)  # device -> finish (s)
    #: keys of the graph's nodes before fusion that this kernel computes
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    kernels: list[Kernel] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kernels)

    def __str__(self) -> str:
        lines = [f"Plan: {len(self.kernels)} kernel(s)"]
        for i, k in enumerate(self.kernels):
            lines.append(
                f"  [{i}] {k.name}: {'+'.join(k.ops)} -> {k.dtype}{list(k.shape)} on {k.device} "
                f"({k.reason}; {k.bytes_moved / 1e6:.2f} MB moved)"
            )
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{i}</td><td>{html.escape(k.name)}</td><td>{html.escape(' + '.join(k.ops))}"
            f"</td><td>{html.escape(k.dtype)}{list(k.shape)}</td><td>{html.escape(k.device)}</td>"
            f"<td>{html.escape(k.reason)}</td><td>{k.bytes_moved / 1e6:.2f} MB</td></tr>"
            for i, k in enumerate(self.kernels)
        )
        return (
            f"<div class='hermes-plan'><b>Plan</b>: {len(self.kernels)} kernel(s)"
            "<table><thead><tr><th>#</th><th>kernel</th><th>ops</th><th>output</th>"
            f"<th>device</th><th>why</th><th>traffic</th></tr></thead><tbody>{rows}</tbody>"
            "</table></div>"
        )


def kernel_source(node: Node, device: str) -> str | None:
    """The generated source of a fused kernel on ``device`` (None for library calls): from
    the device itself where it chooses its variants at run time (OpenCL: vector width,
    tiles, passes), so it is byte for byte the source that runs; else from its kind."""
    from hermes_nb.ir.node import OpSpec

    live = _live_device(device)
    if live is not None:
        spec = OpSpec.of(node, device)
        if hasattr(live, "kernel_source"):
            return live.kernel_source(spec)
        if not live.runs_generated_kernel(spec):
            return None  # library calls (NumPy, BLAS): nothing generated runs
    return _kind_source(node, device)


def _live_device(device: str) -> object | None:
    from hermes_nb.backends import get_device

    try:
        return get_device(device)
    except (ValueError, TypeError):  # a simulated or remote device: its kind's source
        return None


def _kind_source(node: Node, device: str) -> str | None:
    if node.op in ("fused_reduce", "fused_matmul"):
        from hermes_nb.codegen import fused_source

        return fused_source.kernel_source(node, device)
    if node.op == "fused_stencil" and device.split(":")[0] in ("opencl", "cuda"):
        from hermes_nb.codegen import stencil_c

        try:
            return stencil_c.render_source(node.attrs["stencil"], device)
        except stencil_c.UnsupportedStencil:  # the device runs the stages one by one
            return None
    if node.op == "fused_stencil" and device.split(":")[0] == "cpu":
        try:
            from hermes_nb.codegen import numba_stencil
        except ImportError:
            return None
        stencil = node.attrs["stencil"]
        return numba_stencil.render(stencil) if numba_stencil.supports(stencil) else None
    if node.op != "fused_elementwise":
        return None
    program = node.attrs["program"]
    kind = device.split(":")[0]
    if kind == "cpu":
        try:
            from hermes_nb.codegen import numba_cpu
        except ImportError:
            return None
        shapes = [tuple(i.shape) for i in node.inputs]
        return numba_cpu.render(program, numba_cpu.plan(node.shape, shapes)[0])
    from hermes_nb.codegen.c_kernels import render_source

    return render_source(program, kind)


def explain(tensor: Tensor) -> Plan:
    from hermes_nb.compiler import optimize
    from hermes_nb.context import current_options
    from hermes_nb.runtime import compile_target

    return plan_of(optimize([tensor.node], compile_target(), fuse=current_options().fuse))


def fusion_plans(*tensors: Tensor) -> tuple[Plan, Plan]:
    """The plan before fusion and the plan after it, from one graph of ``tensors``: each fused
    kernel's ``members`` are the keys of the unfused plan's kernels it holds."""
    from hermes_nb.compiler import fuse_graph, simplify
    from hermes_nb.runtime import compile_target

    unfused = simplify([t.node for t in tensors])
    return plan_of(unfused), plan_of(fuse_graph(unfused, compile_target()))


def _ops(node: Node) -> tuple[str, ...]:
    if node.op == "fused_elementwise":
        return node.attrs["program"].ops
    if node.op in ("fused_reduce", "fused_matmul"):  # prologue + reduction/matmul + epilogue
        from hermes_nb.codegen.fused_source import kernel_ops

        return kernel_ops(node)
    if node.op == "fused_stencil":
        return node.attrs["stencil"].ops
    return (node.op,)


def plan_of(outputs: list[Node], placed: dict[int, Placement] | None = None, *,
            sources: bool = True) -> Plan:
    """The kernels of an optimised graph, where ``placed`` puts them (default: where the
    scheduler would place them now); ``sources=False`` skips rendering generated sources."""
    from hermes_nb.compiler.rewrite import origin
    from hermes_nb.runtime.placement import place

    kernels = []
    if placed is None:
        placed = place(outputs, commit=False)
    for node in toposort(outputs):
        if kind_of(node.op) is Kind.SOURCE and node.op not in ("full", "arange"):
            continue
        where = placed[id(node)]
        device = where.device
        decision = where.decision
        moved = node.nbytes + sum(i.nbytes for i in node.inputs)
        kernels.append(Kernel(
            name=node.key, ops=_ops(node), device=device,
            source=kernel_source(node, device) if sources else None,
            reason=decision.reason if decision is not None else "value already lives there",
            calibrating=decision.calibrating if decision is not None else False,
            estimates=_estimates(decision),
            inputs=tuple(i.key for i in node.inputs), shape=node.shape, dtype=node.dtype.name,
            bytes_moved=moved, members=origin(node),
        ))
    return Plan(kernels)
