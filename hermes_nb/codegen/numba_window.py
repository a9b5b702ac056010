"""Numba kernels for ``conv`` and ``pool`` over two spatial axes (``cpu:0``; one spatial
axis runs as two with a unit one).

Each kernel first copies the input into a padded scratch copy, each (channel, image) plane
split into ``SH x SW`` phases by the strides: phase ``(a, b)`` holds the padded rows ``a,
a+SH, ...`` and columns ``b, b+SW, ...``, rows ``Wq`` long, and one phase of every image
follows the other (``S`` elements each, a row of slack included). Seen from there, every
kernel tap of a strided, dilated window is one contiguous run: output ``(oh, ow)`` reads
phase ``((kh*DH) % SH, (kw*DW) % SW)`` at row ``oh + kh*DH // SH``, column ``ow + kw*DW //
SW``, and so does the same output of the next image ``S`` elements further. So a block of
images' output planes, computed ``Wq`` wide and ``S`` apart (the columns past ``OW`` and the
rows past ``OH`` are dropped), is one long loop that adds every tap's shifted run: the loop
the vectoriser turns into AVX-512/AVX2 FMAs, with the taps' weights in registers, and long
enough that small planes (a 9 x 9 layer) still run at vector speed.

A ``fused_conv``'s epilogue (bias, folded batch norm, activation: an ``ir.program``
``Program`` whose input 0 is the convolution) is computed where the valid outputs are
copied out, so the result is written once. Its other inputs are 4-D arrays broadcast to the
output (those with one value per plane read once per plane), its scalar parameters
arguments. With a joined pool (``ConvPool``) the epilogue writes each image's result back
into the accumulator, still in cache, and the pool reads it from there.

Pools alone read their input directly, one output row at a time: the window rows combined
column by column, then the window columns of that.

The window's shape, strides and dilations are the kernel's source (one kernel per layer
shape, like a stencil's taps); sizes, channels, groups and the image block are arguments.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from hermes_nb.codegen import numba_cpu
from hermes_nb.codegen.numba_cpu import _Emitter, _literal
from hermes_nb.codegen.numba_support import codegen_hash, module_header
from hermes_nb.ir.program import Program
from hermes_nb.ir.windows import lowest

#: taps unrolled into one loop; a larger window loops over its rows (each row unrolled)
UNROLL_TAPS = 32


@dataclass(frozen=True)
class WindowShape:
    """What a window kernel's source depends on."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    dtype: str
    #: a conv's output channels per job, each tap read once for all of them (it divides the
    #: channels of a group)
    channels: int = 1
    #: a conv's input channels per group when few enough that one loop reads every input
    #: channel's taps and writes each accumulator once (``0``: one loop per input channel,
    #: each adding to the accumulators)
    in_channels: int = 0

    @property
    def phases(self) -> int:
        return self.strides[0] * self.strides[1]


def read_phases(shape: WindowShape) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The row phases and the column phases some tap reads: ``(kh * DH) % SH`` and ``(kw *
    DW) % SW``. A window dilated by its stride (a dilation-2, stride-2 layer) reads one
    phase of the ``SH x SW``."""
    (kh, kw), (sh, sw), (dh, dw) = shape.kernel, shape.strides, shape.dilations
    return (tuple(sorted({(r * dh) % sh for r in range(kh)})),
            tuple(sorted({(c * dw) % sw for c in range(kw)})))


def _scatter(ind: str, shape: WindowShape) -> list[str]:
    """Copy plane ``x[n, c]`` into the phases the taps read in ``xq`` (channel-major, then
    phase, then image: ``G = N * S`` elements per channel and phase), one row at a time:
    input column ``v`` goes to phase ``(v + pw) % SW`` at ``(v + pw) // SW``. The phases no
    tap reads are left as they are (3 of 4 of a dilation-2, stride-2 layer: their copy took
    most of its kernel's time)."""
    sh, sw = shape.strides
    rows, columns = read_phases(shape)
    lines = [f"{ind}for h in range(H):", f"{ind}    hp = h + ph"]
    if len(rows) < sh:
        unread = " and ".join(f"hp % {sh} != {r}" for r in rows)
        lines += [f"{ind}    if {unread}:", f"{ind}        continue"]
    lines += [f"{ind}    xr = x[n, c, h]",
              f"{ind}    row = (c * {shape.phases} + (hp % {sh}) * {sw}) * G + n * S "
              f"+ (hp // {sh}) * Wq"]
    if sw == 1:
        return [*lines, f"{ind}    xq[row + pw:row + pw + W] = xr"]
    for b in columns:  # the input columns of phase b: v = j * SW + first
        lines += [f"{ind}    first = ({b} - pw) % {sw}",
                  f"{ind}    dst = xq[row + {b} * G + (first + pw) // {sw}:]",
                  f"{ind}    for j in range((W - first + {sw - 1}) // {sw}):",
                  f"{ind}        dst[j] = xr[j * {sw} + first]"]
    return lines


def _tap_offset(shape: WindowShape, kh: int | str, kw: int, base: str = "base") -> str:
    """Where tap ``(kh, kw)``'s run starts, from a channel's first phase of image ``n0``
    (``base``)."""
    (sh, sw), (dh, dw) = shape.strides, shape.dilations
    if isinstance(kh, str):  # a row index known at run time
        rh = f"({kh} * {dh})"
        return (f"{base} + (({rh} % {sh}) * {sw} + {(kw * dw) % sw}) * G + ({rh} // {sh}) * Wq "
                f"+ {(kw * dw) // sw}")
    rh = kh * dh
    return (f"{base} + {(rh % sh) * sw + (kw * dw) % sw} * G + {rh // sh} * Wq "
            f"+ {(kw * dw) // sw}")


#: independent FMA chains a loop iteration runs at least: each chain waits on its previous
#: FMA's latency (4 cycles), and 4 of them keep both FMA units busy
CHAINS = 4


def _tap_chains(ind: str, taps: int, block: int, read_back: bool) -> list[str]:
    """The loop body adding ``sum(w<k>_<t> * s<t>[i])`` over ``taps`` to each output channel
    ``k`` of ``block``: tap by tap, each tap's value loaded once and multiplied into every
    channel's FMA chain, ``ceil(CHAINS / block)`` chains a channel (the taps dealt among
    them) so ``CHAINS`` run side by side. A chain of FMAs uses one instruction a tap where a
    tree of FMAs and adds takes one and a half; the loop is bound by them. ``read_back``:
    the accumulators' values start the first chain (``+=``), else they are overwritten."""
    chains = -(-CHAINS // block)
    lines, started = [], set()
    for t in range(taps):
        lines.append(f"{ind}u = s{t}[i]")
        for k in range(block):
            a, w = f"a{k}_{t % chains}", f"w{k}_{t}"
            if a in started:
                lines.append(f"{ind}{a} = fma_({w}, u, {a})")
            elif read_back and t == 0:
                lines.append(f"{ind}{a} = fma_({w}, u, acc{k}[i])")
            else:
                lines.append(f"{ind}{a} = {w} * u")
            started.add(a)
    for k in range(block):
        terms = [f"a{k}_{c}" for c in range(min(chains, taps))]
        while len(terms) > 1:
            terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + \
                (terms[-1:] if len(terms) % 2 else [])
        lines.append(f"{ind}acc{k}[i] = {terms[0]}")
    return lines


def _accumulate(ind: str, shape: WindowShape) -> list[str]:
    """``acc<k>[i] += sum over the taps`` of one input channel, for each output channel
    ``k`` of the job: all taps in one loop up to ``UNROLL_TAPS``, else one loop per kernel
    row (``r``). With several output channels each tap's value is loaded once for all of
    them (the accumulators' stores would otherwise make the loop load it again)."""
    kh, kw = shape.kernel
    if kh * kw <= UNROLL_TAPS:
        lines, row, taps = [], "", [(r, c) for r in range(kh) for c in range(kw)]
    else:
        lines, row, taps = [f"{ind}for r in range(KH):"], "    ", [("r", c) for c in range(kw)]
    block = shape.channels
    for t, (r, c) in enumerate(taps):
        off = _tap_offset(shape, r, c)
        lines.append(f"{ind}{row}s{t} = xq[{off}:{off} + L]")
        lines += [f"{ind}{row}w{k}_{t} = w[m0 + {k}, cl, {r}, {c}]" for k in range(block)]
    return [*lines, f"{ind}{row}for i in range(L):",
            *_tap_chains(f"{ind}{row}    ", len(taps), block, read_back=True)]


def _accumulate_all(ind: str, shape: WindowShape) -> list[str]:
    """``acc<k>[i] = sum over every input channel's taps``, for each output channel ``k`` of
    the job (its group's ``shape.in_channels``, which ``Cg`` must equal: the launcher builds
    the kernel for its layer's weights), in one loop (``shape.in_channels`` x taps of at
    most ``UNROLL_TAPS``): each accumulator is written once, never read back (a first
    layer's 3 input channels would otherwise load and store it three times). Taps are
    numbered channel by channel."""
    kh, kw = shape.kernel
    block, taps = shape.channels, []
    lines = [f"{ind}base = first * {shape.phases} * G + n0 * S"]
    for cl in range(shape.in_channels):
        lines.append(f"{ind}base{cl} = base + {cl * shape.phases} * G")
        taps += [(cl, r, c) for r in range(kh) for c in range(kw)]
    for t, (cl, r, c) in enumerate(taps):
        off = _tap_offset(shape, r, c, f"base{cl}")
        lines.append(f"{ind}s{t} = xq[{off}:{off} + L]")
        lines += [f"{ind}w{k}_{t} = w[m0 + {k}, {cl}, {r}, {c}]" for k in range(block)]
    return [*lines, f"{ind}for i in range(L):",
            *_tap_chains(f"{ind}    ", len(taps), block, read_back=False)]


#: weights one loop over every input channel keeps in (AVX-512's 32) vector registers,
#: beside its accumulators and the tap it reads
REGISTER_WEIGHTS = 24


def all_channels_fit(kernel: tuple[int, int], in_channels: int, channels: int) -> bool:
    """Whether one loop reads every input channel's taps (``WindowShape.in_channels``):
    where their weights for ``channels`` output channels stay in registers. Beyond, each
    multiply-add reloads its weight and a loop per input channel is faster (a batch-8 first
    layer, 3 x 3 taps of 3 colours for 4 channels: 10-27% faster per channel; a 1 x 1 conv of
    4 channels: 20% faster in one loop)."""
    taps = in_channels * kernel[0] * kernel[1]
    return taps <= UNROLL_TAPS and taps * channels <= REGISTER_WEIGHTS


def _compact(ind: str, epilogue: _Epilogue | None = None, in_place: bool = False) -> list[str]:
    """Each image's valid outputs (``OW`` of each ``Wq``-wide row) from ``acc`` into
    ``out[n, ch]``, through the epilogue if any, row by row (the loops vectorise); with
    ``in_place``, the epilogue's results go back into ``acc`` (a joined pool reads them),
    over whole planes where every other input is one value a plane."""
    setup = [f"{ind}    {line}" for line in epilogue.setup] if epilogue is not None else []
    start = [f"{ind}for k in range(nb):", f"{ind}    n = n0 + k", f"{ind}    o = out[n, ch]", *setup]
    if epilogue is not None and epilogue.flat:  # in place over the whole plane, one loop
        return [*start, f"{ind}    a = acc[k * S:k * S + OH * Wq]",
                f"{ind}    for ow in range(OH * Wq):  # the columns past OW too, never read",
                *(f"{ind}        {line}" for line in epilogue.body)]
    # a loop a row, not a slice copy: small planes (8 x 8) have many short rows
    head = [*start, f"{ind}    for oh in range(OH):", f"{ind}        a = acc[k * S + oh * Wq:]",
            *([] if in_place else [f"{ind}        orow = o[oh]"]), f"{ind}        for ow in range(OW):"]
    body = epilogue.body if epilogue is not None else ["orow[ow] = a[ow]"]
    return [*head, *(f"{ind}            {line}" for line in body)]


@dataclass(frozen=True)
class ConvPool:
    """A pool over a conv's result, computed in the conv's kernel (a ``fused_conv``'s attr
    ``pool``): the full-size result is never written out."""

    shape: WindowShape
    mode: str
    pads: tuple[int, int]  # before the rows, before the columns


@dataclass(frozen=True)
class ConvReduce:
    """A reduction of each plane of a conv's result to one value (a global pool), then an
    elementwise program over that value (a mean's division), computed in the conv's kernel
    (a ``fused_conv``'s attr ``reduce``): the full-size result is never written out."""

    mode: str  # sum, max or min
    epilogue: Program | None  # input 0: the reduced value


# a plane reduction's partial result (one a column) combined with value ``v``
_PLANE_COMBINE = {
    "sum": "{acc} += {v}",
    "max": "{acc} = {v} if {v} > {acc} or {v} != {v} else {acc}",  # NaN propagates
    "min": "{acc} = {v} if {v} < {acc} or {v} != {v} else {acc}",
}
_PLANE_IDENTITY = {"sum": "0.0", "max": "-np.inf", "min": "np.inf"}


def _reduced(ind: str, epilogue: _Epilogue, post: _Epilogue | None, reduce: ConvReduce,
             dtype: str) -> list[str]:
    """Each image's epilogue, reduced over its plane into ``out[n, ch, 0, 0]`` through the
    reduction's own epilogue (``post``): a partial result per column (the loop over a row's
    columns vectorises; one running value would chain every add), a sum's in float64."""
    mode = reduce.mode
    work = "np.float64" if mode == "sum" else f"np.{dtype}"

    def combine(acc: str, v: str) -> str:
        return _PLANE_COMBINE[mode].format(acc=acc, v=v)

    store = post.body if post is not None else ["out[n, ch, 0, 0] = red"]
    return [f"{ind}part = np.empty(OW, {work})", f"{ind}for k in range(nb):",
            f"{ind}    n = n0 + k", *(f"{ind}    {line}" for line in epilogue.setup),
            f"{ind}    for ow in range(OW):", f"{ind}        part[ow] = {_PLANE_IDENTITY[mode]}",
            f"{ind}    for oh in range(OH):", f"{ind}        a = acc[k * S + oh * Wq:]",
            f"{ind}        for ow in range(OW):",
            *(f"{ind}            {line}" for line in epilogue.body),
            f"{ind}            {combine('part[ow]', 'r')}",
            f"{ind}    t = {work}({_PLANE_IDENTITY[mode]})", f"{ind}    for ow in range(OW):",
            f"{ind}        {combine('t', 'part[ow]')}", f"{ind}    red = np.{dtype}(t)",
            *(f"{ind}    {line}" for line in store)]


# the pool code's names, as the conv kernel's pooled copy-out spells them
_POOL_NAMES = {"H": "OH", "W": "OW", "OH": "POH", "OW": "POW", "ph": "pph", "pw": "ppw",
               "k": "kp", "oh": "po", "r": "prow", "lo": "plo", "hi": "phi", "fill": "pfill"}


def _pooled(ind: str, epilogue: _Epilogue, pool: ConvPool) -> list[str]:
    """Each image's epilogue in place over ``acc``, then the pool from there into
    ``out[n, ch]``."""
    rows = [*_pool_bounds("", pool.shape), f"tmp = np.empty(W, np.{pool.shape.dtype})"]
    image = ["for oh in range(OH):", "    r = o[oh]", *_pool_rows("    ", pool.shape, pool.mode),
             *_pool_columns("    ", pool.shape, pool.mode)]
    names = re.compile(r"\b(" + "|".join(_POOL_NAMES) + r")\b")
    renamed = [[names.sub(lambda m: _POOL_NAMES[m.group(1)], line) for line in part]
               for part in (rows, image)]
    generic = ["xc = acc[k * S:k * S + OH * Wq].reshape((OH, Wq))", *renamed[1]]
    if _tiles(pool):
        (kh_, kw_), dtype = pool.shape.kernel, pool.shape.dtype
        renamed[0].append(f"hp = np.empty(OH * (Wq // {kw_}), np.{dtype})")
        # at run time: rows of whole windows (Wq a multiple of their width), every window
        # inside the result (a ceil-mode pool's last ones are not)
        generic = [f"if Wq % {kw_} == 0 and POH * {kh_} <= OH and POW * {kw_} <= OW:",
                   *(f"    {line}" for line in _tiled_pool(pool)),
                   "else:", *(f"    {line}" for line in generic)]
    return [f"{ind}pph, ppw = {pool.pads[0]}, {pool.pads[1]}",
            f"{ind}pfill = np.{pool.shape.dtype}({pool_identity(pool.mode, pool.shape.dtype)})",
            *(f"{ind}{line}" for line in renamed[0]),
            *_compact(ind, epilogue, in_place=True),
            *(f"{ind}    {line}" for line in generic)]


def _tiles(pool: ConvPool) -> bool:
    """Whether ``pool``'s windows tile the convolution's result: no padding, no dilation,
    the windows as far apart as they are wide (a 2 x 2 max pool of stride 2)."""
    shape = pool.shape
    return (pool.pads == (0, 0) and shape.dilations == (1, 1)
            and shape.kernel == shape.strides)


def _tiled_pool(pool: ConvPool) -> list[str]:
    """A tiling pool over one image's ``OH`` rows (``Wq`` apart in ``acc``): each row's
    windows combined across its columns in one loop over the whole image (``hp``, ``HW``
    windows a row; a long loop vectorises where ``POW``-long row loops would not), then
    each output row from its window's rows of ``hp``."""
    (kh_, kw_), mode = pool.shape.kernel, pool.mode
    return ["xc = acc[k * S:k * S + OH * Wq]", f"HW = Wq // {kw_}",
            "for q in range(OH * HW):", f"    t = xc[q * {kw_}]",
            *(f"    {_take(mode, f'xc[q * {kw_} + {c}]')}" for c in range(1, kw_)),
            "    hp[q] = t",
            "for po in range(POH):", "    prow = o[po]",
            *(f"    h{r} = hp[(po * {kh_} + {r}) * HW:]" for r in range(kh_)),
            "    for i in range(POW):", "        t = h0[i]",
            *(f"        {_take(mode, f'h{r}[i]')}" for r in range(1, kh_)),
            "        prow[i] = t"]


@dataclass
class _Epilogue:
    """An epilogue program as lines of the copy-out loop, with what they need."""

    setup: list[str]  # before the loop: the values of inputs constant over a plane
    body: list[str]
    inputs: list[str]  # its other inputs' array names (after the convolution)
    params: list[str]  # its scalar parameters' names
    module_lines: list[str]  # constants and helper functions
    #: every other input is one value per plane: the body runs over a plane's whole run
    #: (``a[ow]`` its flat index), not row by row
    flat: bool = False


def _epilogue(program: Program, planes: tuple[bool, ...], store: str = "orow[ow]",
              value: str = "a[ow]", prefix: str = "") -> _Epilogue:
    """``planes[j - 1]``: whether input ``j`` is one value per (image, channel) plane (a
    bias, a batch norm's scale), read once before the loop instead of per element; input 0
    is ``value``, the result goes to ``store``; ``prefix`` starts the names of its
    constants, parameters and temporaries (a second program in the same kernel)."""
    program = program.template  # a scalar parameter's value cannot reach the source
    emitter = _Emitter(program)
    n_in, n_const = program.n_inputs, len(program.consts)
    names = {0: value}
    inputs = [f"e{j}" for j in range(1, n_in)]
    setup = [f"v{j} = e{j}[n, ch, 0, 0]" for j in range(1, n_in) if planes[j - 1]]
    names.update({j: f"v{j}" if planes[j - 1] else f"e{j}[n, ch, oh, ow]"
                  for j in range(1, n_in)})
    consts = []
    for j in program.baked:
        names[n_in + j] = f"{prefix}K{j}"
        consts.append(f"{prefix}K{j} = {_literal(*program.consts[j])}")
    params = [f"{prefix}S{i}" for i in range(len(program.params))]
    names.update({n_in + j: f"{prefix}S{i}" for i, j in enumerate(program.params)})
    body = []
    for q, instr in enumerate(program.instrs):
        code = emitter.expr(instr.op, [names[a] for a in instr.args], instr.args, instr.dtype)
        body.append(f"{prefix}p{q} = {code}")
        names[n_in + n_const + q] = f"{prefix}p{q}"
    body.append(f"{store} = {names[program.outputs[0]]}")
    helpers = [h.rstrip() + "\n" for h in emitter.helpers.values()]
    return _Epilogue(setup, body, inputs, params, consts + helpers, store == "a[ow]" and all(planes))


@functools.lru_cache(maxsize=256)
def supports_epilogue(program: Program) -> bool:
    """Whether a conv kernel can compute ``program`` at its copy-out (one output)."""
    if len(program.outputs) != 1:
        return False
    try:
        _epilogue(program, (False,) * (program.n_inputs - 1))
    except NotImplementedError:
        return False
    return True


def _prologue(shape: WindowShape) -> list[str]:
    """Sizes, the scratch copy (zero where the padding reads it) and the loop over jobs:
    one output channel (``ch``) of a block of ``NB`` images each."""
    return [
        "    N, C, H, W = x.shape", "    OH, OW = out.shape[2], out.shape[3]",
        "    S = Hq * Wq + Wq  # one phase of one image, with a row of slack",
        "    G = N * S  # one phase of every image", f"    KH = {shape.kernel[0]}",
        "    for job in prange(N * C):", "        wide_vectors_()",
        "        n = job // C", "        c = job - n * C", *_scatter("        ", shape),
        "    blocks = (N + NB - 1) // NB",
        f"    MJ = M // {shape.channels}  # jobs per image block: a block of channels each",
        # the channels of one image block are neighbouring jobs: a thread's share of the
        # jobs reuses each block's scratch from its cache for every channel
        "    for job in prange(MJ * blocks):", "        wide_vectors_()",
        "        b = job // MJ", f"        m0 = (job - b * MJ) * {shape.channels}",
        "        n0 = b * NB", "        nb = min(NB, N - n0)",
        "        L = (nb - 1) * S + OH * Wq",
    ]


_CODEGEN_HASH = codegen_hash(__file__, numba_cpu.__file__)


def scratch_size(shape: WindowShape, channels: int, images: int, hq: int, wq: int) -> int:
    """The elements of a conv kernel's scratch copy ``xq``: every channel's phases of every
    image, ``hq * wq`` each with a row of slack, and one image's more at the end."""
    per_image = hq * wq + wq
    return channels * shape.phases * images * per_image + per_image


def render_conv(shape: WindowShape, epilogue: Program | None = None,
                planes: tuple[bool, ...] = (), pool: ConvPool | None = None,
                reduce: ConvReduce | None = None) -> str:
    """``kernel(x, w, out, xq, groups, ph, pw, Hq, Wq, NB, *others, *params)``: out (N, M, OH,
    OW) = conv(x, w), through ``epilogue`` (its other inputs and parameters follow) if any;
    ``planes`` says which of those inputs hold one value per plane. With ``pool`` (and an
    epilogue), ``out`` is the pooled result and the convolution's size follows ``NB``:
    ``kernel(x, w, out, xq, groups, ph, pw, Hq, Wq, NB, COH, COW, *others, *params)``. With
    ``reduce`` instead, ``out`` is (N, M, 1, 1), each plane's reduction, and the parameters of
    the reduction's epilogue follow the others.
    ``xq`` is the padded scratch copy of ``x`` (``scratch_size`` elements), zero where the
    padding is: the kernel writes only the input's positions, so a scratch kept for a layer
    stays zero there from one run to the next."""
    t = f"np.{shape.dtype}"
    # in place in the accumulator for a joined pool to read, else straight to each output
    # row (one pass: an in-place pass over whole planes and a copy of each row costs more)
    store = "a[ow]" if pool is not None else "r" if reduce is not None else "orow[ow]"
    epi = _epilogue(epilogue, planes, store) if epilogue is not None else None
    post = _epilogue(reduce.epilogue, (), "out[n, ch, 0, 0]", "red", "r") \
        if reduce is not None and reduce.epilogue is not None else None
    extra = [*epi.inputs, *epi.params] if epi is not None else []
    if pool is not None or reduce is not None:
        extra = ["COH", "COW", *extra, *(post.params if post is not None else [])]
    note = f"conv {shape}" + (f", epilogue {epilogue.signature}" if epilogue else "") + \
        (f", {pool.mode} pool {pool.shape} pads {pool.pads}" if pool else "") + \
        (f", {reduce.mode} over each plane" if reduce else "") + \
        (f", epilogue {reduce.epilogue.signature}" if reduce and reduce.epilogue else "")
    module_lines = [*(epi.module_lines if epi is not None else []),
                    *(post.module_lines if post is not None else [])]
    lines = module_header("numba_window", _CODEGEN_HASH, [note])
    lines += [*dict.fromkeys(module_lines),  # a helper both programs use, defined once
              '@njit(parallel=True, cache=True, boundscheck=False, nogil=True, '
              'error_model="numpy")',
              f"def kernel({', '.join(['x, w, out, xq, groups, ph, pw, Hq, Wq, NB', *extra])}):",
              "    M, Cg = w.shape[0], w.shape[1]", "    Mg = M // groups",
              *_prologue(shape),
              f"        accs = np.{'empty' if shape.in_channels else 'zeros'}"
              f"(({shape.channels}, L), {t})",
              *(f"        acc{k} = accs[{k}]" for k in range(shape.channels)),
              "        first = (m0 // Mg) * Cg  # the group's first input channel",
              *(_accumulate_all("        ", shape) if shape.in_channels else
                ["        for cl in range(Cg):",
                 f"            base = (first + cl) * {shape.phases} * G + n0 * S",
                 *_accumulate("            ", shape)]),
              f"        for mi in range({shape.channels}):",
              "            ch = m0 + mi", "            acc = accs[mi]",
              *(_reduced("            ", epi, post, reduce, shape.dtype)
                if reduce is not None and epi is not None else
                _compact("            ", epi) if pool is None or epi is None else
                _pooled("            ", epi, pool)), ""]
    at = lines.index("    OH, OW = out.shape[2], out.shape[3]")
    if pool is not None:  # the convolution's size is an argument, the output is pooled
        lines[at:at + 1] = ["    OH, OW = COH, COW", "    POH, POW = out.shape[2], out.shape[3]"]
    elif reduce is not None:  # the convolution's size is an argument, the output reduced
        lines[at:at + 1] = ["    OH, OW = COH, COW"]
    return "\n".join(lines)


def _take(mode: str, value: str) -> str:
    """``t`` combined with ``v = value``: the larger (NaN propagating, as NumPy's maximum),
    or the sum."""
    return f"v = {value}; t = v if v > t or v != v else t" if mode == "max" else \
        f"t = t + {value}"


def _pool_rows(ind: str, shape: WindowShape, mode: str) -> list[str]:
    """``tmp[j]``: output row ``oh``'s window rows combined, column by column (contiguous
    loops: they vectorise); rows outside the input are the identity."""
    kh_, (sh, dh) = shape.kernel[0], (shape.strides[0], shape.dilations[0])
    return [
        f"{ind}y0 = oh * {sh} - ph",
        f"{ind}if y0 >= 0 and y0 + {(kh_ - 1) * dh} < H:  # every window row inside",
        *(f"{ind}    r{k} = xc[y0 + {k * dh}]" for k in range(kh_)),
        f"{ind}    for j in range(W):", f"{ind}        t = r0[j]",
        *(f"{ind}        {_take(mode, f'r{k}[j]')}" for k in range(1, kh_)),
        f"{ind}        tmp[j] = t",
        f"{ind}else:", f"{ind}    tmp[:] = fill", f"{ind}    for k in range({kh_}):",
        f"{ind}        y = y0 + k * {dh}", f"{ind}        if y >= 0 and y < H:",
        f"{ind}            rk = xc[y]", f"{ind}            for j in range(W):",
        f"{ind}                t = tmp[j]", f"{ind}                {_take(mode, 'rk[j]')}",
        f"{ind}                tmp[j] = t",
    ]


def _pool_columns(ind: str, shape: WindowShape, mode: str) -> list[str]:
    """``r[i]``: the window columns of ``tmp`` combined; outputs whose every column lies
    inside (``lo <= i < hi``) in one loop, the others column by column with bounds."""
    kw_, (sw, dw) = shape.kernel[1], (shape.strides[1], shape.dilations[1])
    edge = [f"{ind}    t = fill", f"{ind}    for k in range({kw_}):",
            f"{ind}        col = i * {sw} + k * {dw} - pw",
            f"{ind}        if col >= 0 and col < W:", f"{ind}            {_take(mode, 'tmp[col]')}",
            f"{ind}    r[i] = t"]
    return [f"{ind}ts = tmp[lo * {sw} - pw:]", f"{ind}for i in range(hi - lo):",
            f"{ind}    t = ts[i * {sw}]",
            *(f"{ind}    {_take(mode, f'ts[i * {sw} + {k * dw}]')}" for k in range(1, kw_)),
            f"{ind}    r[lo + i] = t",
            f"{ind}for i in range(lo):", *edge, f"{ind}for i in range(hi, OW):", *edge]


def pool_identity(mode: str, dtype: str) -> str:
    """What a pool's padding reads as (its combination's identity), spelled for the source."""
    return repr(lowest(np.dtype(dtype))).replace("inf", "np.inf") if mode == "max" else "0"


def _pool_bounds(ind: str, shape: WindowShape) -> list[str]:
    """``[lo, hi)``: the outputs whose window columns all lie inside the input."""
    kw_, (sw, dw) = shape.kernel[1], (shape.strides[1], shape.dilations[1])
    return [f"{ind}lo = min(OW, max(0, -(-pw // {sw})))",
            f"{ind}hi = max(lo, min(OW, (W - 1 + pw - {(kw_ - 1) * dw}) // {sw} + 1))"]


def render_pool(shape: WindowShape, mode: str) -> str:
    """``kernel(x, out, ph, pw)``: out (N, C, OH, OW) = each window's max or sum, the
    padding reading as the identity. Pools read the input directly (a window reads each
    input about once, so a scratch copy would cost more than it saves), one output row at a
    time: its window rows combined column by column, then the window columns of that."""
    t = f"np.{shape.dtype}"
    lines = module_header("numba_window", _CODEGEN_HASH, [f"pool {mode} {shape}"])
    lines += ["@njit(parallel=True, cache=True, boundscheck=False, nogil=True)",
              "def kernel(x, out, ph, pw):",
              "    N, C, H, W = x.shape", "    OH, OW = out.shape[2], out.shape[3]",
              f"    fill = {t}({pool_identity(mode, shape.dtype)})", *_pool_bounds("    ", shape),
              "    for job in prange(N * C):", "        wide_vectors_()",
              "        n = job // C", "        c = job - n * C", "        xc = x[n, c]",
              "        o = out[n, c]", f"        tmp = np.empty(W, {t})",
              "        for oh in range(OH):", "            r = o[oh]",
              *_pool_rows("            ", shape, mode),
              *_pool_columns("            ", shape, mode), ""]
    return "\n".join(lines)
