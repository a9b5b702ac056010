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
as one element (class ``"s"``).
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
from hermes_nb.compiler.program import Program

__all__ = ["layout", "render", "run_reduce", "supports"]

Variant = tuple[str, tuple[str, ...], tuple[str, ...]]  # kind, prologue classes, epilogue classes

_BLOCK = 2048  # elements per vectorised partial sum of a row (bounds float error growth)
_CHUNK = 256  # outputs per task of the cols kernel


def _identity(op: str, dtype: str) -> str:
    if op == "sum":
        return "np.bool_(False)" if dtype == "bool" else f"{_ctor(dtype)}(0)"
    if op == "prod":
        return "np.bool_(True)" if dtype == "bool" else f"{_ctor(dtype)}(1)"
    low = op == "max"
    if dtype == "bool":
        return f"np.bool_({not low})"
    if dtype.startswith("float"):
        return f"{_ctor(dtype)}({'-' if low else ''}np.inf)"
    info = np.iinfo(dtype)
    return f"{_ctor(dtype)}({info.min if low else info.max})"


def _work_dtype(op: str, dtype: str) -> str:
    """The accumulator's dtype: float32 sums accumulate in float64 (as accurate as NumPy's
    pairwise summation at any length, and cheap on a CPU); the result is rounded once."""
    return "float64" if op == "sum" and dtype == "float32" else dtype


def _combine(op: str, dtype: str, a: str, x: str) -> str:
    if dtype == "bool":
        return f"({a} | {x})" if op in ("sum", "max") else f"({a} & {x})"
    if op == "sum":
        return f"{a} + {x}"
    if op == "prod":
        return f"{a} * {x}"
    cmp = ">=" if op == "max" else "<="
    if dtype.startswith("float"):  # NaN propagates: a NaN held stays, a NaN seen wins
        return f"{a} if ({a} {cmp} {x}) | ({a} != {a}) else {x}"
    return f"{a} if {a} {cmp} {x} else {x}"


def _function(program: Program, name: str, prefix: str, helpers: dict[str, str]) -> list[str]:
    """``program`` as ``@njit def name(v0, ...)`` returning its output; constants become
    module globals ``<prefix>C<j>``; helper sources are collected in ``helpers``."""
    emitter = _Emitter(program)
    n_in, n_const = program.n_inputs, len(program.consts)
    names = [f"v{m}" for m in range(n_in)] + [f"{prefix}C{j}" for j in range(n_const)]
    lines = [f"{prefix}C{j} = {_literal(v, d)}" for j, (v, d) in enumerate(program.consts)]
    lines += ["", "", "@njit", f"def {name}({', '.join(names[:n_in])}):"]
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


def render(attrs: dict[str, Any], variant: Variant) -> str:
    """The Python source of the kernel module for one variant."""
    kind, classes, eclasses = variant
    prologue: Program = attrs["prologue"]
    epilogue: Program | None = attrs["epilogue"]
    op, acc_t = attrs["reduce"], attrs["reduce_dtype"]
    work_t = _work_dtype(op, acc_t)
    n_in = prologue.n_inputs
    helpers: dict[str, str] = {}
    functions = _function(prologue, "pro", "P", helpers)
    if epilogue is not None:
        functions += _function(epilogue, "epi", "E", helpers)
    ins = [f"in{m}" for m in range(n_in)]
    eps = [f"ep{m}" for m in range(len(eclasses))]
    lines = [
        *module_header("numba_reduce", _CODEGEN_HASH, [
            f"reduce: {op} -> {acc_t}; variant: {variant!r}",
            f"prologue: {prologue.signature}",
            f"epilogue: {epilogue.signature if epilogue is not None else None}",
        ]),
        "U0 = np.uint64(0)",
        "U1 = np.uint64(1)",
        f"BLOCK = np.uint64({_BLOCK})",
        f"CHUNK = np.uint64({_CHUNK})",
        f"IDENT = {_identity(op, work_t)}",
        *[src.rstrip() + "\n" for src in helpers.values()],
        *functions,
        "",
        "",
        '@njit(parallel=True, cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})',
        f"def kernel({', '.join(['out', 'oshape', 'ostrides', 'rshape', 'rstrides', *ins, *eps])}):",
        "    no = oshape.shape[0]",
        "    nr = rshape.shape[0]",
        "    total = np.uint64(out.shape[0])",
    ]
    pro_args = ", ".join(f"w{m}" for m in range(n_in))

    def offsets(indent: str, index: str, shape: str, strides: str, dims: str, names: list[str]
                ) -> list[str]:
        # decompose `index` over shape[dims] (innermost last), adding to the offsets
        body = [f"{indent}rem = {index}", f"{indent}for d in range({dims}, -1, -1):",
                f"{indent}    q = rem // {shape}[d]", f"{indent}    c = rem - q * {shape}[d]",
                f"{indent}    rem = q"]
        body += [f"{indent}    {n} += c * {strides}[{m}, d]" for m, n in enumerate(names)]
        return body

    def epilogue_value(acc: str, at: str) -> str:
        if work_t != acc_t:  # back to the reduction's dtype before the epilogue sees it
            acc = f"{_ctor(acc_t)}({acc})"
        if epilogue is None:
            return acc
        args = [acc] + [f"ep{m}[{'0' if c == 's' else at}]" for m, c in enumerate(eclasses)]
        return f"epi({', '.join(args)})"

    body: list[str] = []
    if kind == "rows":
        body += [
            "    inner = rshape[nr - 1]",
            "    nouter = U1",
            "    for d in range(nr - 1):",
            "        nouter *= rshape[d]",
            "    for t in prange(np.int64(total)):",
        ]
        body += [f"        b{m} = U0" for m in range(n_in)]
        body += offsets("        ", "np.uint64(t)", "oshape", "ostrides", "no - 1",
                        [f"b{m}" for m in range(n_in)])
        body += ["        acc = IDENT", "        for r in range(nouter):"]
        body += [f"            o{m} = b{m}" for m in range(n_in)]
        body += offsets("            ", "np.uint64(r)", "rshape", "rstrides", "nr - 2",
                        [f"o{m}" for m in range(n_in)])
        body += [f"            w{m} = in{m}[o{m}]" for m, c in enumerate(classes) if c == "o"]
        body += [
            "            j = U0",
            "            while j < inner:",
            "                stop = min(j + BLOCK, inner)",
            "                part = IDENT",
            "                for jj in range(j, stop):",
        ]
        body += [f"                    w{m} = in{m}[o{m} + jj]" for m, c in enumerate(classes)
                 if c == "i"]
        body += [
            f"                    part = {_combine(op, work_t, 'part', f'pro({pro_args})')}",
            f"                acc = {_combine(op, work_t, 'acc', 'part')}",
            "                j = stop",
            f"        out[t] = {epilogue_value('acc', 't')}",
        ]
    else:
        body += [
            "    inner = oshape[no - 1]",
            "    nchunk = (inner + CHUNK - U1) // CHUNK",
            "    nred = U1",
            "    for d in range(nr):",
            "        nred *= rshape[d]",
            "    for t in prange(np.int64((total // inner) * nchunk)):",
            "        row = np.uint64(t) // nchunk",
            "        j0 = (np.uint64(t) - row * nchunk) * CHUNK",
            "        m = min(CHUNK, inner - j0)",
        ]
        body += [f"        b{m} = j0 * ostrides[{m}, no - 1]" for m in range(n_in)]
        body += offsets("        ", "row", "oshape", "ostrides", "no - 2",
                        [f"b{m}" for m in range(n_in)])
        body += [
            f"        acc = np.empty(np.int64(m), np.{'bool_' if work_t == 'bool' else work_t})",
            "        for jj in range(m):",
            "            acc[jj] = IDENT",
            "        for r in range(nred):",
        ]
        body += [f"            o{m} = b{m}" for m in range(n_in)]
        body += offsets("            ", "r", "rshape", "rstrides", "nr - 1",
                        [f"o{m}" for m in range(n_in)])
        body += [f"            w{m} = in{m}[o{m}]" for m, c in enumerate(classes) if c == "o"]
        body.append("            for jj in range(m):")
        body += [f"                w{m} = in{m}[o{m} + jj]" for m, c in enumerate(classes)
                 if c == "i"]
        body += [
            f"                acc[jj] = {_combine(op, work_t, 'acc[jj]', f'pro({pro_args})')}",
            "        base = row * inner + j0",
            "        for jj in range(m):",
            f"            out[base + jj] = {epilogue_value('acc[jj]', 'base + jj')}",
        ]
    return "\n".join(lines + body) + "\n"


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
        return build_kernel(render(attrs, variant), "r",
                            (numba_array(out_t, False), *meta, *ins, *eps))

    return _KERNELS.get_or_build((_key(attrs), variant), build)


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
        kernel(out.reshape(-1), *meta, *flat_in, *flat_epi)
    finally:
        numba.set_parallel_chunksize(previous)
    return out
