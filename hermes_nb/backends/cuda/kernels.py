"""What ``cuda:N`` hands CuPy for each generated kernel, as plain data.

A :class:`CupyKernel` is a CuPy kernel class and the arguments it is made with. Execution
builds from it (:func:`built`) and ``explain()`` shows its text (:meth:`CupyKernel.source`),
so the source explain() shows is what CuPy compiled. Nothing here needs a GPU until
:func:`built`, so a device not on this machine shows the same source.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_nb.backends.base import PASS_SEPARATOR
from hermes_nb.codegen import c_fused
from hermes_nb.codegen.c_kernels import CUDA_OPTIONS, cuda_elementwise_parts
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.program import Program

__all__ = ["CupyKernel", "built", "describe", "elementwise", "kernel_source", "reduce_kernels",
           "reduction", "stencil"]

# the names of each kernel class's positional parameters (as CuPy calls them)
_POSITIONAL = {
    "ElementwiseKernel": ("in_params", "out_params", "operation"),
    "ReductionKernel": ("in_params", "out_params", "map_expr", "reduce_expr", "post_map_expr",
                        "identity"),
    "RawKernel": ("code", "name"),
}
_STATIC_SHARED = 48 * 1024  # static __shared__ arrays may not exceed 48 KiB


@dataclass(frozen=True)
class CupyKernel:
    """A CuPy kernel class (``ElementwiseKernel``, ``ReductionKernel``, ``RawKernel``) and
    the positional and keyword arguments it is made with."""

    cls: str
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def build(self) -> Any:
        import cupy

        return getattr(cupy, self.cls)(*self.args, **dict(self.kwargs))

    def source(self) -> str:
        return describe(self.cls, self.args, dict(self.kwargs))


def describe(cls: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """The text of a CuPy kernel made as ``cupy.<cls>(*args, **kwargs)``: a RawKernel's
    code as given; else its preamble, then every other argument by name, verbatim."""
    named = {**dict(zip(_POSITIONAL[cls], args)), **kwargs}
    if cls == "RawKernel":
        return str(named["code"])
    lines = [f"// cupy.{cls}"]
    lines += [f"// {key}: {value}" for key, value in named.items() if key != "preamble"]
    return f"{named.get('preamble', '')}\n\n" + "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=1024)  # every kind's kernels together
def built(kernel: CupyKernel) -> Any:
    """The CuPy kernel object of ``kernel`` (made once; CuPy compiles it on first launch,
    which is timed as its build)."""
    from hermes_nb.backends.cuda.first_launch import FirstLaunchTimed

    return FirstLaunchTimed(kernel.build(), f"CUDA {kernel.cls} for cuda")


def elementwise(program: Program) -> CupyKernel:
    """The ElementwiseKernel computing ``program``; call it as
    ``k(*inputs, *program.arguments(), out)`` (CuPy broadcasts the inputs to ``out``). One
    kernel for any values of the scalar parameters (keyed by ``program.template``)."""
    return _elementwise(program.template)


@functools.lru_cache(maxsize=512)
def _elementwise(program: Program) -> CupyKernel:
    in_params, out_params, operation, preamble = cuda_elementwise_parts(program)
    return CupyKernel("ElementwiseKernel", (in_params, out_params, operation), (
        ("name", "hermes_fused"), ("preamble", preamble), ("options", CUDA_OPTIONS)))


@functools.lru_cache(maxsize=256)
def reduction(prologue: Program, epilogue: Program | None, op: str, acc: str) -> CupyKernel:
    """The ReductionKernel: the prologue as its map, the epilogue (if any) after it."""
    p = c_fused.cuda_reduce_parts(prologue, epilogue, op, acc)
    args = (p["in_params"], p["out_params"], p["map_expr"], p["reduce_expr"],
            p["post_map_expr"], p["identity"])
    return CupyKernel("ReductionKernel", args, (
        ("name", "hermes_fused_reduce"), ("reduce_type", p["reduce_type"]),
        ("preamble", p["preamble"]), ("options", CUDA_OPTIONS)))


@functools.lru_cache(maxsize=256)
def stencil(program: Any) -> CupyKernel | None:
    """The RawKernel of a stencil pipeline, or None when the generator cannot express it
    or its tiles exceed static shared memory (then cupyx runs its stages)."""
    from hermes_nb.codegen import stencil_c

    try:
        if stencil_c.local_bytes(program, stencil_c.CUDA_CONFIG) > _STATIC_SHARED:
            return None
        source = stencil_c.cuda_stencil_source(program)
    except stencil_c.UnsupportedStencil:
        return None
    return CupyKernel("RawKernel", (source, "fused_stencil"), (("options", CUDA_OPTIONS),))


def reduce_kernels(spec: OpSpec) -> tuple[CupyKernel, CupyKernel | None]:
    """A ``fused_reduce``'s ReductionKernel, and the ElementwiseKernel of its epilogue when
    that reads more than the reduced value (else the reduction applies it)."""
    a = spec.attrs
    epilogue = a["epilogue"]
    inline = epilogue is None or epilogue.n_inputs == 1
    kernel = reduction(a["prologue"], epilogue if inline else None, a["reduce"],
                       a["reduce_dtype"])
    return kernel, None if inline else elementwise(epilogue)


def _elementwise_launches(spec: OpSpec) -> tuple[CupyKernel, ...]:
    program = spec.attrs["program"]
    return (elementwise(program),) if program.n_inputs else ()  # all literals: CuPy calls


def _reduce_launches(spec: OpSpec) -> tuple[CupyKernel, ...]:
    if math.prod(spec.attrs["in_shape"]) == 0:
        return ()  # identities: CuPy's own reduction
    return tuple(k for k in reduce_kernels(spec) if k is not None)


def _stencil_launches(spec: OpSpec) -> tuple[CupyKernel, ...]:
    kernel = stencil(spec.attrs["stencil"])
    return () if kernel is None else (kernel,)


# fused op -> the CuPy kernels execution launches for it, in order (cuBLAS, cupyx: none)
_LAUNCHES: Mapping[str, Callable[[OpSpec], tuple[CupyKernel, ...]]] = {
    "fused_elementwise": _elementwise_launches,
    "fused_matmul": lambda spec: (elementwise(spec.attrs["epilogue"]),),  # after cuBLAS
    "fused_reduce": _reduce_launches,
    "fused_stencil": _stencil_launches,
}


def kernel_source(spec: OpSpec) -> str | None:
    """The text of the CuPy kernels ``spec`` launches on ``cuda:N``, joined by
    ``PASS_SEPARATOR``; None where none is launched (library calls, nothing to compute)."""
    launches = _LAUNCHES.get(spec.op)
    if launches is None or math.prod(spec.shape) == 0:
        return None
    kernels = launches(spec)
    return PASS_SEPARATOR.join(k.source() for k in kernels) if kernels else None
