"""``opencl:N`` kernels of the fused ops ``fused_reduce`` and ``fused_matmul`` (sources
from :mod:`hermes_nb.codegen.c_fused`).

Reductions: one ``fred``/``fred_vec`` launch when there are enough outputs to fill the
device, else a first pass over ``parts`` chunks per output and a second over the
partials that applies the epilogue. Matmuls: the tiled kernel of ``matmul.cl`` with the
epilogue applied at its store (one kernel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.backends.base import PASS_SEPARATOR
from hermes_nb.backends.opencl.buffers import c_strides
from hermes_nb.backends.opencl.capabilities import KernelDevice
from hermes_nb.codegen import c_fused, c_kernels, c_source
from hermes_nb.codegen import opencl_templates as src
from hermes_nb.codegen.layout import broadcast_strides, layout
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.program import Program

__all__ = ["PASS_SEPARATOR", "fused_matmul", "fused_reduce", "matmul_source", "reduce_source"]

_I64 = np.dtype(np.int64)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def _host_fallback(dev: KernelDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """Zero-size reductions (identities, empty outputs): NumPy's rules on the host."""
    import scipy.ndimage

    from hermes_nb.ir.array_ops import ArrayOps

    host = ArrayOps(np, scipy.ndimage).run(spec, [dev.to_host(x) for x in inputs])
    return dev.from_host(np.asarray(host))


def _flat_to(dev: KernelDevice, x: Any, shape: Sequence[int], target: tuple[int, ...]) -> Any:
    """``x`` (of ``shape``) as a contiguous buffer of ``target``'s size, or itself when it
    is one element or already of that size (then its order is the target's)."""
    n = math.prod(target)
    if x.size in (1, n):
        return x
    out = dev.empty(target, x.dtype)
    dev.copy_strided(out, 0, c_strides(target), x, 0, broadcast_strides(shape, target), target)
    return out


def fused_reduce(dev: KernelDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    a = spec.attrs
    if math.prod(a["in_shape"]) == 0 or math.prod(spec.shape) == 0:
        return _host_fallback(dev, spec, inputs)
    n = a["n_prologue"]
    kind, classes, meta = layout(a["in_shape"], a["axes"], spec.in_shapes[:n])
    epi_in = [_flat_to(dev, x, s, spec.shape) for x, s in zip(inputs[n:], spec.in_shapes[n:])]
    out = _reduce_pass(dev, a["prologue"], a["epilogue"], a["reduce"], a["reduce_dtype"],
                       list(inputs[:n]), kind, classes, meta, epi_in)
    return out.reshape(spec.shape)


@dataclass(frozen=True)
class ReducePass:
    """One launch of a fused reduction: its source and geometry."""

    source: str
    name: str
    width: int
    parts: int
    chunk: int
    epilogue: Program | None
    eclasses: str


def _reduce_plan(dev: KernelDevice, prologue: Program, epilogue: Program | None, op: str,
                 acc: str, kind: str, classes: tuple[str, ...], meta: list[np.ndarray],
                 epi_sizes: Sequence[int]) -> ReducePass:
    """What one pass runs: vector width, chunks per output and the generated source."""
    oshape, _, rshape, _ = meta
    m, k = int(np.prod(oshape)), int(np.prod(rshape))
    rank1 = len(rshape) == 1
    caps = dev.capabilities
    width = 0
    if caps.is_cpu and kind == "rows" and rank1 and c_source.vector_dtype(prologue) == acc:
        width = caps.vector_width(acc)
    # enough work-items to fill the device; long reduced runs are split into parts
    target = (16 if caps.is_cpu else 1024) * dev.compute_units
    parts = 1
    if m < target:
        parts = max(1, min(-(-target // m), k // 4096))
    chunk = -(-k // parts)
    if width:
        chunk = _round_up(chunk, width)
    parts = -(-k // chunk)
    epi = epilogue if parts == 1 else None
    eclasses = "".join("s" if n == 1 else "f" for n in epi_sizes) if epi is not None else ""
    source = c_fused.opencl_reduce_source(prologue, epi, op, acc, rank1, eclasses,
                                          "".join(classes) if width else "", width, dev.fp64)
    return ReducePass(source, "fred_vec" if width else "fred", width, parts, chunk, epi, eclasses)


def _second_pass(acc: str, m: int, parts: int) -> tuple[Program, str, tuple[str, ...], list[Any]]:
    from hermes_nb.compiler.fuse_reduce import identity_program

    kind, classes, meta = layout((m, parts), (1,), [(m, parts)])
    return identity_program(acc), kind, classes, meta


def reduce_source(dev: KernelDevice, spec: OpSpec) -> str | None:
    """The source(s) ``fused_reduce`` builds for ``spec`` on ``dev``, pass by pass."""
    a = spec.attrs
    if math.prod(a["in_shape"]) == 0 or math.prod(spec.shape) == 0:
        return None  # NumPy's rules on the host
    n = a["n_prologue"]
    kind, classes, meta = layout(a["in_shape"], a["axes"], spec.in_shapes[:n])
    epi_sizes = [1 if math.prod(s) == 1 else math.prod(spec.shape) for s in spec.in_shapes[n:]]
    prologue, sources = a["prologue"], []
    while True:
        step = _reduce_plan(dev, prologue, a["epilogue"], a["reduce"], a["reduce_dtype"], kind,
                            classes, meta, epi_sizes)
        sources.append(step.source)
        if step.parts == 1:
            return PASS_SEPARATOR.join(sources)
        m = int(np.prod(meta[0]))
        prologue, kind, classes, meta = _second_pass(a["reduce_dtype"], m, step.parts)


def _reduce_pass(dev: KernelDevice, prologue: Program, epilogue: Program | None, op: str,
                 acc: str, pro_in: list[Any], kind: str, classes: tuple[str, ...],
                 meta: list[np.ndarray], epi_in: list[Any]) -> Any:
    oshape, ostr, rshape, rstr = meta
    m, k = int(np.prod(oshape)), int(np.prod(rshape))
    step = _reduce_plan(dev, prologue, epilogue, op, acc, kind, classes, meta,
                        [x.size for x in epi_in])
    epi, parts, chunk = step.epilogue, step.parts, step.chunk
    out_dtype = epi.dtype_of(epi.outputs[0]) if epi is not None else acc
    out = dev.empty((m * parts,), np.dtype(out_dtype))
    flat_meta = [len(oshape), len(rshape), *oshape.tolist(), *rshape.tolist(),
                 *ostr.reshape(-1).tolist(), *rstr.reshape(-1).tolist()]
    args = [out.data, *(x.data for x in pro_in), *(x.data for x in (epi_in if epi else [])),
            dev.meta([int(v) for v in flat_meta]).data, np.int64(m), np.int64(k),
            np.int64(parts), np.int64(chunk), np.int32(dev.capabilities.is_cpu),
            *c_fused.opencl_reduce_arguments(prologue, epi)]  # scalars: not in the source
    knl = dev.programs.kernel(step.source, step.name)
    wg = dev.group_size(knl)
    if dev.capabilities.is_cpu:  # one work-item walks a whole chunk: small groups spread over the cores
        per_core = max(1, (m * parts) // (4 * dev.compute_units))
        wg = min(wg, 1 << (per_core.bit_length() - 1))
    knl(dev.queue, (_round_up(m * parts, wg),), (wg,), *args)
    if parts == 1:
        return out
    # second pass: the (m, parts) partials, contiguous, then the epilogue
    identity, kind2, classes2, meta2 = _second_pass(acc, m, parts)
    return _reduce_pass(dev, identity, epilogue, op, acc, [out], kind2, classes2, meta2, epi_in)


def matmul_source(dev: KernelDevice, spec: OpSpec) -> str:
    """The tiled matmul with ``spec``'s epilogue at its store, as built on ``dev``."""
    hooks = c_fused.opencl_matmul_hooks(spec.attrs["epilogue"], spec.attrs["matmul_dtype"])
    return src.typed_source("matmul", np.dtype(spec.attrs["matmul_dtype"]), dev.fp64, **hooks)


def fused_matmul(dev: KernelDevice, spec: OpSpec, inputs: Sequence[Any]) -> Any:
    """The tiled matmul with the epilogue at its store."""
    (a_shape, b_shape), rest_shapes = spec.in_shapes[:2], spec.in_shapes[2:]
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    batch = spec.shape[:-2]
    nb = math.prod(batch)
    if nb * m * n == 0 or k == 0:
        return _host_fallback(dev, spec, inputs)

    def offsets(shape: Sequence[int], size: int) -> np.ndarray:
        # offset of each batch's matrix; broadcast batch dims repeat offsets, not data
        lead = tuple(shape[:-2]) if len(shape) >= 2 else ()
        base = np.arange(math.prod(lead), dtype=_I64).reshape(lead) * size
        return np.broadcast_to(base, batch).ravel()

    aoff = dev.from_host(offsets(a_shape, m * k))
    boff = dev.from_host(offsets(b_shape, k * n))
    out = dev.empty(spec.shape, spec.dtype)
    knl = dev.programs.kernel(matmul_source(dev, spec), "matmul")
    extra: list[Any] = [x.data for x in inputs[2:]]
    if rest_shapes:
        eoff, estr = [], []
        for shape in rest_shapes:
            st = broadcast_strides(shape, spec.shape)
            full = (1,) * (len(spec.shape) - len(shape)) + tuple(shape)
            # batch offsets over the input's own (broadcast) batch dims
            lead = np.zeros(batch, _I64)
            for d in range(len(batch)):
                idx = np.arange(batch[d], dtype=_I64).reshape(
                    (1,) * d + (batch[d],) + (1,) * (len(batch) - d - 1))
                lead = lead + idx * st[d]
            eoff.append(np.broadcast_to(lead, batch).ravel())
            estr.extend([st[-2] if full[-2] != 1 else 0, st[-1] if full[-1] != 1 else 0])
        extra += [dev.from_host(np.concatenate(eoff) if eoff else np.zeros(1, _I64)).data,
                  dev.from_host(np.array(estr, _I64)).data, np.int64(nb)]
    knl(
        dev.queue, (_round_up(n, 16), _round_up(m, 16), nb), (16, 16, 1),
        out.data, inputs[0].data, inputs[1].data, aoff.data, boff.data,
        np.int64(m), np.int64(n), np.int64(k), *extra,
        *c_kernels.opencl_arguments(spec.attrs["epilogue"]),  # scalars: not in the source
    )  # fmt: skip
    return out
