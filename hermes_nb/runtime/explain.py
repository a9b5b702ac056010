"""Building plans: the kernels of an optimised graph, where they run, why, and the
source each generated kernel runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_nb.ir.node import Node, OpSpec, toposort
from hermes_nb.ir.ops import Kind, kind_of
from hermes_nb.runtime.placement import Placement, place
from hermes_nb.runtime.plan import Kernel, Plan
from hermes_nb.runtime.targets import compile_target

if TYPE_CHECKING:
    from hermes_nb.backends.base import Device
    from hermes_nb.scheduler import Decision


def _estimates(decision: Decision | None) -> dict[str, float | None]:
    """Each candidate device's estimated finish time in seconds (None: not yet measured)."""
    if decision is None:
        return {}
    return {c.device: c.finish_s for c in decision.candidates}


def kernel_source(node: Node, device: str) -> str | None:
    """The generated source of a fused kernel on ``device`` (None for library calls): the
    live device's own ``kernel_source``, from the function its execution builds with, so it
    is byte for byte the source that runs; for an id not in this process, its kind's."""
    spec = OpSpec.of(node, device)
    live = _live_device(device)
    if live is not None:
        return live.kernel_source(spec)
    return _kind_source(spec)


def _live_device(device: str) -> Device | None:
    from hermes_nb.backends import get_device

    try:
        return get_device(device)
    except (ValueError, TypeError):  # a simulated or remote device: its kind's source
        return None


def _kind_source(spec: OpSpec) -> str | None:
    """Only for a device id not present in this process (a simulated or remote device):
    what a device of its kind builds, from the renderers the live devices use (``cpu``
    without its size threshold, ``opencl`` as a model CPU device); other kinds: None."""
    kind = spec.device.split(":")[0]
    if kind == "cpu":
        from hermes_nb.backends.cpu import sources as cpu_sources

        try:
            return cpu_sources.render(spec)
        except NotImplementedError:  # an op Numba's generator lacks: NumPy runs it
            return None
    if kind == "opencl":
        from hermes_nb.backends.opencl import sources as opencl_sources

        return opencl_sources.kernel_source(opencl_sources.OFFLINE, spec)
    if kind == "cuda":
        from hermes_nb.backends.cuda import kernels as cuda_kernels

        return cuda_kernels.kernel_source(spec)
    return None


def _ops(node: Node) -> tuple[str, ...]:
    if node.op == "fused_elementwise":
        return node.attrs["program"].ops
    if node.op in ("fused_reduce", "fused_matmul", "fused_conv"):  # (prologue +) core + epilogue
        from hermes_nb.codegen.fused_source import kernel_ops

        return kernel_ops(node)
    if node.op == "fused_stencil":
        return node.attrs["stencil"].ops
    if node.op == "fused_softmax":
        from hermes_nb.compiler.fuse_softmax import SOFTMAX_STEPS

        return SOFTMAX_STEPS
    return (node.op,)


def _names(node: Node) -> tuple[str, ...]:
    """The kernel's ops as the user named them: a fused stencil's stages in short ("blur5",
    "sobel"), an unfused convolution's op ("gaussian_blur")."""
    if node.op == "fused_stencil":
        return node.attrs["stencil"].stage_names
    if node.op == "conv2d" and "stage" in node.attrs:
        return (node.attrs["stage"][0],)
    return ()


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
            bytes_moved=moved, members=origin(node), names=_names(node),
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
