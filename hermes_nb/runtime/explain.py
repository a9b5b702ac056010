"""Building plans: the kernels of an optimised graph, where they run, why, and the
source each generated kernel runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_nb.ir.node import Node, toposort
from hermes_nb.ir.ops import Kind, kind_of
from hermes_nb.runtime.placement import Placement, place
from hermes_nb.runtime.plan import Kernel, Plan
from hermes_nb.runtime.targets import compile_target

if TYPE_CHECKING:
    from hermes_nb.scheduler import Decision


def _estimates(decision: Decision | None) -> dict[str, float | None]:
    """Each candidate device's estimated finish time in seconds (None: not yet measured)."""
    if decision is None:
        return {}
    return {c.device: c.finish_s for c in decision.candidates}


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


def explain_nodes(outputs: list[Node]) -> Plan:
    """The plan of ``outputs`` as ``compute`` would run it now (optimised, placed)."""
    from hermes_nb.compiler import optimize
    from hermes_nb.context import current_options

    return plan_of(optimize(outputs, compile_target(), fuse=current_options().fuse))


def fusion_plans_of(outputs: list[Node]) -> tuple[Plan, Plan]:
    """The plan before fusion and the plan after it, from one graph of ``outputs``: each
    fused kernel's ``members`` are the keys of the unfused plan's kernels it holds."""
    from hermes_nb.compiler import fuse_graph, simplify

    unfused = simplify(outputs)
    return plan_of(unfused), plan_of(fuse_graph(unfused, compile_target()))
