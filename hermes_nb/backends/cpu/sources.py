"""The Numba module ``cpu:0`` compiles for each fused op of a spec.

Each is rendered by the op's code generator for the variant its launcher plans for the
spec's shapes (``numba_cpu.plan``, ``codegen.layout.layout``: the calls ``launch``,
``run_reduce`` and ``compile_stencil`` make), so it is the source Numba builds.
Whether that kernel runs at all (size thresholds, what Numba supports) is the device's
call: ``CPUDevice.runs_generated_kernel``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from hermes_nb.backends.cpu import jit
from hermes_nb.codegen.layout import layout
from hermes_nb.ir.node import OpSpec

__all__ = ["render"]


def _elementwise(spec: OpSpec) -> str:
    codegen = jit.numba_codegen()
    variant = codegen.plan(spec.shape, spec.in_shapes)[0]
    return codegen.render(spec.attrs["program"], variant)


def _matmul(spec: OpSpec) -> str:
    """The epilogue over the BLAS product (full size) and the extra inputs."""
    codegen = jit.numba_codegen()
    variant = codegen.plan(spec.shape, [spec.shape, *spec.in_shapes[2:]])[0]
    return codegen.render(spec.attrs["epilogue"], variant)


def _reduce(spec: OpSpec) -> str:
    a = spec.attrs
    n = a["n_prologue"]
    kind, classes, _ = layout(a["in_shape"], a["axes"], spec.in_shapes[:n])
    eclasses = tuple("s" if math.prod(s) == 1 else "f" for s in spec.in_shapes[n:])
    return jit.reduce_codegen().render(a, (kind, classes, eclasses))


def _stencil(spec: OpSpec) -> str:
    return jit.numba_stencil().render(spec.attrs["stencil"])


def _softmax(spec: OpSpec) -> str:
    from hermes_nb.backends.cpu import softmax

    return softmax.source(spec)


def _window(spec: OpSpec) -> str:
    from hermes_nb.backends.cpu import window

    return window.source(spec)


_RENDERERS: Mapping[str, Callable[[OpSpec], str]] = {
    "fused_elementwise": _elementwise,
    "fused_matmul": _matmul,
    "fused_reduce": _reduce,
    "fused_stencil": _stencil,
    "fused_softmax": _softmax,
    **dict.fromkeys(("conv", "pool", "fused_conv"), _window),
}


def render(spec: OpSpec) -> str | None:
    """The Numba source of ``spec``'s fused kernel; None for other ops, or without numba."""
    renderer = _RENDERERS.get(spec.op)
    if renderer is None or jit.numba_codegen() is None:
        return None
    return renderer(spec)
