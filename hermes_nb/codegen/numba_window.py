"""Numba kernels for ``conv`` and ``pool`` over two spatial axes (``cpu:0``; one spatial
axis runs as two with a unit one).

Each kernel first copies every (image, channel) plane into a padded scratch plane, split
into ``SH x SW`` phases by the strides (phase ``(a, b)`` holds the padded rows ``a, a+SH,
...`` and columns ``b, b+SW, ...``, rows ``Wq`` long). Seen from there, every kernel tap of a
strided, dilated window is one contiguous run: output ``(oh, ow)`` reads phase ``((kh*DH) %
SH, (kw*DW) % SW)`` at row ``oh + kh*DH // SH``, column ``ow + kw*DW // SW``. So a whole
output plane, computed ``Wq`` wide (the columns past ``OW`` are dropped), is one loop over
``OH * Wq`` elements that adds every tap's shifted run: the loop the vectoriser turns into
AVX-512/AVX2 FMAs, with the taps' weights in registers.

A ``fused_conv``'s epilogue (bias, folded batch norm, activation: an ``ir.program``
``Program`` whose input 0 is the convolution) is computed where the valid columns are
copied out, so the result is written once. Its other inputs are 4-D arrays broadcast to the
output, its scalar parameters arguments.

The window's shape, strides and dilations are the kernel's source (one kernel per layer
shape, like a stencil's taps); sizes, channels and groups are arguments.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from hermes_nb.codegen import numba_cpu
from hermes_nb.codegen.numba_cpu import _Emitter, _literal
from hermes_nb.codegen.numba_support import codegen_hash, module_header
from hermes_nb.ir.program import Program

#: taps unrolled into one loop; a larger window loops over its rows (each row unrolled)
UNROLL_TAPS = 32


@dataclass(frozen=True)
class WindowShape:
    """What a window kernel's source depends on."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    dtype: str

    @property
    def phases(self) -> int:
        return self.strides[0] * self.strides[1]


def _scatter(ind: str, shape: WindowShape, array: str, job: str) -> list[str]:
    """Copy plane ``x[n, c]`` into the phases of ``{array}[job]`` (row ``Wq`` long)."""
    sh, sw = shape.strides
    return [
        f"{ind}for h in range(H):",
        f"{ind}    hp = h + ph",
        f"{ind}    row = (hp % {sh}) * {sw} * S + (hp // {sh}) * Wq",
        f"{ind}    for v in range(W):",
        f"{ind}        wp = v + pw",
        f"{ind}        {array}[{job}, row + (wp % {sw}) * S + wp // {sw}] = x[n, c, h, v]",
    ]


def _tap_offset(shape: WindowShape, kh: int | str, kw: int) -> str:
    """Where tap ``(kh, kw)``'s run starts in a (phases, S) scratch plane."""
    (sh, sw), (dh, dw) = shape.strides, shape.dilations
    if isinstance(kh, str):  # a row index known at run time
        rh = f"({kh} * {dh})"
        return (f"(({rh} % {sh}) * {sw} + {(kw * dw) % sw}) * S + ({rh} // {sh}) * Wq "
                f"+ {(kw * dw) // sw}")
    rh = kh * dh
    return f"{((rh % sh) * sw + (kw * dw) % sw)} * S + {rh // sh} * Wq + {(kw * dw) // sw}"


def _accumulate(ind: str, shape: WindowShape, combine: str, weights: bool) -> list[str]:
    kh, kw = shape.kernel
    if kh * kw <= UNROLL_TAPS:
        lines = []
        for t, (r, c) in enumerate((r, c) for r in range(kh) for c in range(kw)):
            off = _tap_offset(shape, r, c)
            lines.append(f"{ind}s{t} = src[{off}:{off} + L]")
            if weights:
                lines.append(f"{ind}w{t} = w[m, c, {r}, {c}]")
        body = [f"{ind}for i in range(L):", f"{ind}    t = acc[i]"]
        body += [f"{ind}    t = {combine.format(t=t)}" for t in range(kh * kw)]
        return lines + body + [f"{ind}    acc[i] = t"]
    lines = [f"{ind}for r in range(KH):"]
    for t in range(kw):
        off = _tap_offset(shape, "r", t)
        lines.append(f"{ind}    s{t} = src[{off}:{off} + L]")
        if weights:
            lines.append(f"{ind}    w{t} = w[m, c, r, {t}]")
    lines += [f"{ind}    for i in range(L):", f"{ind}        t = acc[i]"]
    lines += [f"{ind}        t = {combine.format(t=t)}" for t in range(kw)]
    return [*lines, f"{ind}        acc[i] = t"]


def _compact(ind: str, epilogue: _Epilogue | None = None) -> list[str]:
    """The valid ``OW`` columns of each ``Wq``-wide row of ``acc`` into ``out[n, ch]``,
    through the epilogue if any."""
    head = [f"{ind}o = out[n, ch]", f"{ind}for oh in range(OH):", f"{ind}    for ow in range(OW):"]
    if epilogue is None:
        return [*head, f"{ind}        o[oh, ow] = acc[oh * Wq + ow]"]
    return head + [f"{ind}        {line}" for line in epilogue.body]


@dataclass
class _Epilogue:
    """An epilogue program as lines of the copy-out loop, with what they need."""

    body: list[str]
    inputs: list[str]  # its other inputs' array names (after the convolution)
    params: list[str]  # its scalar parameters' names
    module_lines: list[str]  # constants and helper functions


def _epilogue(program: Program) -> _Epilogue:
    program = program.template  # a scalar parameter's value cannot reach the source
    emitter = _Emitter(program)
    n_in, n_const = program.n_inputs, len(program.consts)
    names = {0: "acc[oh * Wq + ow]"}
    inputs = [f"e{j}" for j in range(1, n_in)]
    names.update({j: f"e{j}[n, ch, oh, ow]" for j in range(1, n_in)})
    consts = []
    for j in program.baked:
        names[n_in + j] = f"K{j}"
        consts.append(f"K{j} = {_literal(*program.consts[j])}")
    params = [f"S{i}" for i in range(len(program.params))]
    names.update({n_in + j: f"S{i}" for i, j in enumerate(program.params)})
    body = []
    for q, instr in enumerate(program.instrs):
        code = emitter.expr(instr.op, [names[a] for a in instr.args], instr.args, instr.dtype)
        body.append(f"p{q} = {code}")
        names[n_in + n_const + q] = f"p{q}"
    body.append(f"o[oh, ow] = {names[program.outputs[0]]}")
    return _Epilogue(body, inputs, params, consts + [h.rstrip() + "\n" for h in
                                                     emitter.helpers.values()])


@functools.lru_cache(maxsize=256)
def supports_epilogue(program: Program) -> bool:
    """Whether a conv kernel can compute ``program`` at its copy-out (one output)."""
    if len(program.outputs) != 1:
        return False
    try:
        _epilogue(program)
    except NotImplementedError:
        return False
    return True


def _prologue(shape: WindowShape) -> list[str]:
    return ["    N, C, H, W = x.shape", "    OH, OW = out.shape[2], out.shape[3]",
            "    S = Hq * Wq + Wq  # one phase, with a row of slack the last taps run into",
            "    L = OH * Wq", f"    KH = {shape.kernel[0]}"]


_CODEGEN_HASH = codegen_hash(__file__, numba_cpu.__file__)


def render_conv(shape: WindowShape, epilogue: Program | None = None) -> str:
    """``kernel(x, w, out, groups, ph, pw, Hq, Wq, *others, *params)``: out (N, M, OH, OW)
    = conv(x, w), through ``epilogue`` (its other inputs and parameters follow) if any."""
    t = f"np.{shape.dtype}"
    epi = _epilogue(epilogue) if epilogue is not None else None
    extra = [*epi.inputs, *epi.params] if epi is not None else []
    note = f"conv {shape}" + (f", epilogue {epilogue.signature}" if epilogue else "")
    lines = module_header("numba_window", _CODEGEN_HASH, [note])
    lines += [*(epi.module_lines if epi is not None else []),
              '@njit(parallel=True, cache=True, boundscheck=False, nogil=True, '
              'error_model="numpy")',
              f"def kernel({', '.join(['x, w, out, groups, ph, pw, Hq, Wq', *extra])}):",
              *_prologue(shape),
              "    M, Cg = w.shape[0], w.shape[1]", "    Mg = M // groups",
              f"    xq = np.zeros((N * C, {shape.phases} * S), {t})",
              "    for job in prange(N * C):", "        n = job // C", "        c = job - n * C",
              *_scatter("        ", shape, "xq", "job"),
              "    for job in prange(N * M):", "        n = job // M", "        m = job - n * M",
              "        ch = m", "        base = n * C + (m // Mg) * Cg",
              f"        acc = np.zeros(L, {t})", "        for c in range(Cg):",
              "            src = xq[base + c]",
              *_accumulate("            ", shape, "fma_(w{t}, s{t}[i], t)", True),
              *_compact("        ", epi), ""]
    return "\n".join(lines)


def render_pool(shape: WindowShape, mode: str, identity: str) -> str:
    """``kernel(x, out, ph, pw, Hq, Wq)``: out (N, C, OH, OW) = each window's max or sum,
    the padding reading as ``identity``."""
    t = f"np.{shape.dtype}"
    combine = "s{t}[i] if s{t}[i] > t or s{t}[i] != s{t}[i] else t" if mode == "max" \
        else "t + s{t}[i]"
    lines = module_header("numba_window", _CODEGEN_HASH, [f"pool {mode} {shape}"])
    lines += ["@njit(parallel=True, cache=True, boundscheck=False, nogil=True)",
              "def kernel(x, out, ph, pw, Hq, Wq):", *_prologue(shape),
              f"    fill = {t}({identity})",
              "    for job in prange(N * C):", "        n = job // C", "        c = job - n * C",
              "        ch = c",
              f"        plane = np.full((1, {shape.phases} * S), fill, {t})",
              *_scatter("        ", shape, "plane", "0"),
              "        src = plane[0]",
              f"        acc = np.full(L, fill, {t})",
              *_accumulate("        ", shape, combine, False),
              *_compact("        "), ""]
    return "\n".join(lines)
