"""CPU code generator for ``fused_reduce``: prologue, reduction and epilogue as one
parallel Numba kernel (one read of the inputs, no temporaries).

API
---
``run_reduce(attrs, inputs, out_shape, out_dtype) -> np.ndarray | None``
    Run the node (``attrs`` as ``fused_reduce`` documents them); ``None`` when this
    generator cannot (an op without a Numba rendering, a zero-size reduction), so the
    caller interprets it with NumPy instead.
``render(attrs, variant) -> str``
    The kernel module's source (what ``explain()`` shows).
``layout(in_shape, axes, in_shapes)``
    The variant and kernel arguments for one shape combination.

Layout: the prologue's inputs are broadcast (stride 0) to ``in_shape``; size-1
dimensions are dropped and neighbouring dimensions of the same kind (kept or reduced)
that every input walks contiguously are merged, leaving kept dimensions ``oshape`` and
reduced dimensions ``rshape`` with per-input element strides.

Variants, each with one class per prologue input, ``"i"`` (stride 1 along the innermost
dimension) or ``"o"`` (stride 0 along it; read once per inner loop):

float32 sums accumulate in float64 and are rounded to float32 once, before the epilogue.

``("rows", classes)``: the innermost dimension is reduced. ``prange`` over the outputs;
    each walks its reduced elements with the innermost dimension as a contiguous inner
    loop, in blocks whose partial results LLVM vectorises (the kernel is compiled with
    ``fastmath={"reassoc"}``: only the accumulation is reassociated; the prologue and
    epilogue are separate ``@njit`` functions without fast-math flags, inlined by LLVM
    with their strict semantics).
``("cols", classes)``: the innermost dimension is kept. ``prange`` over chunks of
    ``_CHUNK`` neighbouring outputs, each accumulating a vector of partial results while
    walking the reduced elements (vectorised across outputs, no reassociation).

Epilogue inputs other than the reduced value arrive flattened to the output's size, or
as one element (class ``"s"``). The prologue's and epilogue's scalar parameters
(``Program.params``) are the kernel's last arguments, ``PC<j>`` then ``EC<j>``, passed on to
``pro`` and ``epi``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
from numba.core import types

from hermes_nb.codegen.layout import layout
from hermes_nb.codegen.numba_cpu import _CODEGEN_HASH, _ctor, _Emitter, _literal
from hermes_nb.codegen.numba_support import KernelCache, build_kernel, module_header, numba_array
from hermes_nb.ir.program import Program
from hermes_nb.ir.reduce import reduce_def

__all__ = ["NUMBA_COMBINE", "layout", "numba_combine", "render", "run_reduce", "supports"]

Variant = tuple[str, tuple[str, ...], tuple[str, ...]]  # kind, prologue classes, epilogue classes

_BLOCK = 2048  # elements per vectorised partial sum of a row (bounds float error growth)
_CHUNK = 256  # outputs per task of the cols kernel


# How Numba folds ``{x}`` into ``{a}``, per dtype kind: (float, int, bool). Arg
# reductions never reach fused_reduce (compiler.fuse_reduce), so they have no form here.
NUMBA_COMBINE: dict[str, tuple[str, str, str]] = {
    "sum": ("{a} + {x}", "{a} + {x}", "({a} | {x})"),
    "prod": ("{a} * {x}", "{a} * {x}", "({a} & {x})"),
    # NaN propagates: a NaN held stays, a NaN seen wins
    "max": ("{a} if ({a} >= {x}) | ({a} != {a}) else {x}", "{a} if {a} >= {x} else {x}",
            "({a} | {x})"),
    "min": ("{a} if ({a} <= {x}) | ({a} != {a}) else {x}", "{a} if {a} <= {x} else {x}",
            "({a} & {x})"),
}


def numba_combine(op: str, dtype: str, a: str, x: str) -> str:
    """Numba's expression folding ``x`` into ``a`` for reduction ``op`` over ``dtype``."""
    float_form, int_form, bool_form = NUMBA_COMBINE[op]
    form = bool_form if dtype == "bool" else float_form if dtype.startswith("float") else int_form
    return form.format(a=a, x=x)


def numba_literal(value: bool | int | float, dtype: str) -> str:
    """An identity from ``ir.reduce`` as a Numba constant of ``dtype``."""
    if dtype == "bool":
        return f"np.bool_({bool(value)})"
    if isinstance(value, float) and math.isinf(value):
        return f"{_ctor(dtype)}({'-' if value < 0 else ''}np.inf)"
    return f"{_ctor(dtype)}({int(value)})"


def _function(program: Program, name: str, prefix: str, helpers: dict[str, str]) -> list[str]:
    """``program`` as ``@njit def name(v0, ..., <prefix>C<j>, ...)`` returning its output:
    scalar parameters follow the inputs, baked constants are module globals
    ``<prefix>C<j>``; helper sources are collected in ``helpers``."""
    emitter = _Emitter(program)
    n_in, n_const = program.n_inputs, len(program.consts)
    names = [f"v{m}" for m in range(n_in)] + [f"{prefix}C{j}" for j in range(n_const)]
    lines = [f"{prefix}C{j} = {_literal(*program.consts[j])}" for j in sorted(program.baked)]
    params = names[:n_in] + _params(program, prefix)
    lines += ["", "", "@njit", f"def {name}({', '.join(params)}):"]
    for k, instr in enumerate(program.instrs):
        value = n_in + n_const + k
        code = emitter.expr(instr.op, [names[a] for a in instr.args], instr.args, instr.dtype)
        lines.append(f"    v{value} = {code}")
        names.append(f"v{value}")
    out = program.outputs[0]
    result = names[out]
    if out < n_in + n_const:  # an input or literal as the output
        result = f"{_ctor(program.dtype_of(out))}({result})"
    lines.append(f"    return {result}")
    helpers.update(emitter.helpers)
    return lines


def _params(program: Program | None, prefix: str) -> list[str]:
    return [f"{prefix}C{j}" for j in program.params] if program is not None else []


class _NumbaReduceWriter:
    """Writes the kernel module of one variant, one method per part."""

    def __init__(self, attrs: dict[str, Any], variant: Variant) -> None:
        self.variant = variant
        self.kind, self.classes, self.eclasses = variant
        self.prologue: Program = attrs["prologue"]
        self.epilogue: Program | None = attrs["epilogue"]
        self.op, self.acc_t = attrs["reduce"], attrs["reduce_dtype"]
        self.work_t = reduce_def(self.op).work_dtype(self.acc_t)
        self.n_in = self.prologue.n_inputs

    def source(self) -> str:
        body = self.rows_body() if self.kind == "rows" else self.cols_body()
        return "\n".join(self.module() + self.signature() + body) + "\n"

    def module(self) -> list[str]:
        """Header, constants and the prologue/epilogue functions."""
        helpers: dict[str, str] = {}
        functions = _function(self.prologue, "pro", "P", helpers)
        if self.epilogue is not None:
            functions += _function(self.epilogue, "epi", "E", helpers)
        epilogue = self.epilogue.signature if self.epilogue is not None else None
        return [
            *module_header("numba_reduce", _CODEGEN_HASH, [
                f"reduce: {self.op} -> {self.acc_t}; variant: {self.variant!r}",
                f"prologue: {self.prologue.signature}",
                f"epilogue: {epilogue}",
            ]),
            "U0 = np.uint64(0)",
            "U1 = np.uint64(1)",
            f"BLOCK = np.uint64({_BLOCK})",
            f"CHUNK = np.uint64({_CHUNK})",
            f"IDENT = {self.identity()}",
            *[src.rstrip() + "\n" for src in helpers.values()],
            *functions,
        ]

    def identity(self) -> str:
        return numba_literal(reduce_def(self.op).identity(self.work_t), self.work_t)

    def signature(self) -> list[str]:
        ins = [f"in{m}" for m in range(self.n_in)]
        eps = [f"ep{m}" for m in range(len(self.eclasses))]
        args = ", ".join(["out", "oshape", "ostrides", "rshape", "rstrides", *ins, *eps,
                          *_params(self.prologue, "P"), *_params(self.epilogue, "E")])
        return [
            "",
            "",
            '@njit(parallel=True, cache=True, nogil=True, error_model="numpy", '
            'fastmath={"reassoc"})',
            f"def kernel({args}):",
            "    no = oshape.shape[0]",
            "    nr = rshape.shape[0]",
            "    total = np.uint64(out.shape[0])",
        ]

    # ---- pieces shared by both variants ------------------------------------------------------

    def offsets(self, indent: str, index: str, shape: str, strides: str, dims: str,
                names: list[str]) -> list[str]:
        """Decompose ``index`` over ``shape[dims]`` (innermost last), adding to ``names``."""
        body = [f"{indent}rem = {index}", f"{indent}for d in range({dims}, -1, -1):",
                f"{indent}    q = rem // {shape}[d]", f"{indent}    c = rem - q * {shape}[d]",
                f"{indent}    rem = q"]
        body += [f"{indent}    {n} += c * {strides}[{m}, d]" for m, n in enumerate(names)]
        return body

    def reads(self, indent: str, cls: str, at: str) -> list[str]:
        """The prologue arguments ``w<m>`` of class ``cls`` read at ``o<m>`` + ``at``."""
        return [f"{indent}w{m} = in{m}[o{m}{at}]" for m, c in enumerate(self.classes) if c == cls]

    def reduced_offsets(self, index: str, dims: str) -> list[str]:
        """Per reduced element ``index``: the offsets ``o<m>`` from the bases ``b<m>``."""
        body = [f"            o{m} = b{m}" for m in range(self.n_in)]
        return body + self.offsets("            ", index, "rshape", "rstrides", dims,
                                   [f"o{m}" for m in range(self.n_in)])

    def combine(self, a: str, x: str) -> str:
        return numba_combine(self.op, self.work_t, a, x)

    def prologue_call(self) -> str:
        args = [f"w{m}" for m in range(self.n_in)] + _params(self.prologue, "P")
        return f"pro({', '.join(args)})"

    def store_value(self, acc: str, at: str) -> str:
        """What ``out`` gets: ``acc`` in the reduction's dtype, through the epilogue."""
        if self.work_t != self.acc_t:  # back to the reduction's dtype before the epilogue
            acc = f"{_ctor(self.acc_t)}({acc})"
        if self.epilogue is None:
            return acc
        args = [acc] + [f"ep{m}[{'0' if c == 's' else at}]" for m, c in enumerate(self.eclasses)]
        args += _params(self.epilogue, "E")
        return f"epi({', '.join(args)})"

    # ---- the variants ------------------------------------------------------------------------

    def rows_body(self) -> list[str]:
        """Innermost dimension reduced: one task per output, blocks of partial results."""
        bases = [f"b{m}" for m in range(self.n_in)]
        body = [
            "    inner = rshape[nr - 1]",
            "    nouter = U1",
            "    for d in range(nr - 1):",
            "        nouter *= rshape[d]",
            "    for t in prange(np.int64(total)):",
            *[f"        {b} = U0" for b in bases],
            *self.offsets("        ", "np.uint64(t)", "oshape", "ostrides", "no - 1", bases),
            "        acc = IDENT",
            "        for r in range(nouter):",
            *self.reduced_offsets("np.uint64(r)", "nr - 2"),
            *self.reads("            ", "o", ""),
            "            j = U0",
            "            while j < inner:",
            "                stop = min(j + BLOCK, inner)",
            "                part = IDENT",
            "                for jj in range(j, stop):",
            *self.reads("                    ", "i", " + jj"),
            f"                    part = {self.combine('part', self.prologue_call())}",
            f"                acc = {self.combine('acc', 'part')}",
            "                j = stop",
            f"        out[t] = {self.store_value('acc', 't')}",
        ]
        return body

    def cols_body(self) -> list[str]:
        """Innermost dimension kept: one task per chunk of outputs, a vector of partials."""
        work = "bool_" if self.work_t == "bool" else self.work_t
        return [
            "    inner = oshape[no - 1]",
            "    nchunk = (inner + CHUNK - U1) // CHUNK",
            "    nred = U1",
            "    for d in range(nr):",
            "        nred *= rshape[d]",
            "    for t in prange(np.int64((total // inner) * nchunk)):",
            "        row = np.uint64(t) // nchunk",
            "        j0 = (np.uint64(t) - row * nchunk) * CHUNK",
            "        m = min(CHUNK, inner - j0)",
            *[f"        b{m} = j0 * ostrides[{m}, no - 1]" for m in range(self.n_in)],
            *self.offsets("        ", "row", "oshape", "ostrides", "no - 2",
                          [f"b{m}" for m in range(self.n_in)]),
            f"        acc = np.empty(np.int64(m), np.{work})",
            "        for jj in range(m):",
            "            acc[jj] = IDENT",
            "        for r in range(nred):",
            *self.reduced_offsets("r", "nr - 1"),
            *self.reads("            ", "o", ""),
            "            for jj in range(m):",
            *self.reads("                ", "i", " + jj"),
            f"                acc[jj] = {self.combine('acc[jj]', self.prologue_call())}",
            "        base = row * inner + j0",
            "        for jj in range(m):",
            f"            out[base + jj] = {self.store_value('acc[jj]', 'base + jj')}",
        ]


def render(attrs: dict[str, Any], variant: Variant) -> str:
    """The Python source of the kernel module for one variant (rendered from the
    programs' templates: a scalar parameter's value cannot reach the source)."""
    epi = attrs["epilogue"]
    templates = {**attrs, "prologue": attrs["prologue"].template,
                 "epilogue": epi.template if epi is not None else None}
    return _NumbaReduceWriter(templates, variant).source()


def supports(attrs: dict[str, Any]) -> bool:
    """Whether every prologue/epilogue instruction has a Numba rendering."""
    key = _key(attrs)
    known = _SUPPORTED.get(key)
    if known is None:
        known = _SUPPORTED[key] = _renders(attrs)
    return known


_SUPPORTED: dict[str, bool] = {}


def _renders(attrs: dict[str, Any]) -> bool:
    try:
        render(attrs, ("rows", ("i",) * attrs["prologue"].n_inputs,
                       ("f",) * (attrs["epilogue"].n_inputs - 1 if attrs["epilogue"] else 0)))
    except NotImplementedError:
        return False
    return True


_KERNELS = KernelCache()  # (reduction key, variant) -> compiled kernel


def _key(attrs: dict[str, Any]) -> str:
    epi = attrs["epilogue"]
    return (f"{attrs['reduce']}:{attrs['reduce_dtype']}|{attrs['prologue'].signature}|"
            f"{epi.signature if epi is not None else ''}")


def compile_reduce(attrs: dict[str, Any], variant: Variant) -> Any:
    """The compiled kernel of one variant (source written to disk so that Numba's
    ``cache=True`` lets a new process skip compilation)."""
    def build() -> Any:
        epi = attrs["epilogue"]
        out_t = epi.dtype_of(epi.outputs[0]) if epi is not None else attrs["reduce_dtype"]
        meta = [types.Array(types.uint64, 1, "C", readonly=True),
                types.Array(types.uint64, 2, "C", readonly=True)] * 2
        ins = [numba_array(d, True) for d in attrs["prologue"].input_dtypes]
        eps = [numba_array(d, True) for d in (epi.input_dtypes[1:] if epi is not None else ())]
        params = [numba.from_dtype(np.dtype(a.dtype)) for a in _arguments(attrs)]
        return build_kernel(render(attrs, variant), "r",
                            (numba_array(out_t, False), *meta, *ins, *eps, *params))

    return _KERNELS.get_or_build((_key(attrs), variant), build)


def _arguments(attrs: dict[str, Any]) -> tuple[np.generic, ...]:
    """The kernel's scalar arguments: the prologue's parameters, then the epilogue's."""
    epi = attrs["epilogue"]
    return attrs["prologue"].arguments() + (epi.arguments() if epi is not None else ())


def run_reduce(attrs: dict[str, Any], inputs: Sequence[np.ndarray], out_shape: Sequence[int],
               out_dtype: np.dtype | str) -> np.ndarray | None:
    """The node's value as a new array, or None where the caller should interpret it."""
    in_shape = tuple(attrs["in_shape"])
    if math.prod(in_shape) == 0:
        return None  # identities and empty outputs: NumPy's rules, nothing to speed up
    n = attrs["n_prologue"]
    pro_in, epi_in = inputs[:n], inputs[n:]
    kind, classes, meta = layout(in_shape, attrs["axes"], [x.shape for x in pro_in])
    out = np.empty(tuple(out_shape), np.dtype(out_dtype))
    eclasses = tuple("s" if x.size == 1 else "f" for x in epi_in)
    # epilogue inputs are small (output-sized): flatten them to the output's order
    flat_epi = [x.reshape(-1) if x.size == 1 else
                np.ascontiguousarray(np.broadcast_to(x, out.shape)).reshape(-1) for x in epi_in]
    flat_in = [np.ascontiguousarray(x).reshape(-1) for x in pro_in]
    kernel = compile_reduce(attrs, (kind, classes, eclasses))
    for array in meta:
        array.flags.writeable = False
    # dynamic scheduling in chunks: a busy core then delays only its current chunk
    tasks = out.size
    if kind == "cols":
        inner = int(meta[0][-1])
        tasks = out.size // inner * -(-inner // _CHUNK)
    previous = numba.set_parallel_chunksize(max(1, tasks // (8 * numba.get_num_threads())))
    try:
        kernel(out.reshape(-1), *meta, *flat_in, *flat_epi, *_arguments(attrs))
    finally:
        numba.set_parallel_chunksize(previous)
    return out
