"""CPU code generator: a :class:`StencilProgram` as one parallel Numba kernel.

API
---
``render(stencil) -> str`` / ``compile_stencil(stencil) -> kernel`` / ``supports(stencil)``
    The generated module source, its compiled dispatcher, and whether every
    stage has a rendering here (else use the interpreter). ``devices.cpu_stencil``
    launches the kernel on ``cpu:0``'s cores.

How the kernel works
--------------------
The batch is flattened to ``(B, H, W)`` and cut into tasks of consecutive rows of
one image. A task streams its rows top to bottom: value ``v`` (a stage's output) is
needed ``reach[v]`` rows below the result row being made (the sum of conv radii on
the way to the result), so at step ``y`` every stage makes its row ``y + reach[v]``
into a ring of the few rows its readers still need, and the last stage writes row
``y`` of the output. Only the input is read from memory and only the result
written; the rings stay in cache. A task recomputes the halo rows above its first
row, so tasks are a few hundred rows where the image allows.

A separable conv is a vertical pass into a padded row buffer, whose pads are then
filled through the border map, and a horizontal pass (done inside the reading point
stage when that is its only reader: one row write and read fewer). Border maps are
OpenCV's ``borderInterpolate`` (valid for images smaller than the kernel), tabulated
per launch (:func:`border_maps`); ``constant`` reads a row of zeros. A conv's border
applies to its own input value, as in the reference interpreter. Taps are literals
in the source, zero taps skipped (they decide the loops). A point stage's scalar
parameters (``Program.params``) are kernel arguments ``S0, S1, ...`` after the border
maps, in ``stencil.arguments()`` order, so a changed threshold or gain runs the compiled
kernel. Point stages use ``numba_cpu``'s expression
renderer, except float32 ``hypot`` (:func:`hypot_f32`, which vectorises).

Parallelism: the kernel is a serial ``nogil`` function over a range of tasks, which
``devices.cpu_stencil`` hands to a few threads (Numba's ``parallel=True`` would add ~2 s
of compile time per kernel).

Kernels are cached in memory by ``stencil.signature`` and on disk as generated
modules with Numba's ``cache=True``, like ``numba_cpu`` (same directory). They are
not specialised on sizes: one compilation per stencil program.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba.core import types

from hermes_nb.codegen import numba_cpu
from hermes_nb.codegen.numba_cpu import _ctor, _Emitter, _literal
from hermes_nb.codegen.numba_support import KernelCache, build_kernel, codegen_hash, module_header
from hermes_nb.ir import dtypes
from hermes_nb.ir.program import Program
from hermes_nb.ir.stencil import ConvStage, PointStage, StencilProgram

__all__ = ["border_maps", "compile_stencil", "layout_of", "render", "supports"]

_FLOATS = dtypes.FLOAT_NAMES
_TYPES = dtypes.NAMES


_INF32 = np.float32(np.inf)


@numba.njit(cache=True, nogil=True)
def hypot_f32(a: Any, b: Any) -> Any:
    """float32 hypot that vectorises (libm hypotf does not; float64 sqrt is slow).

    Scaling by a power of two (exact) keeps the squares away from overflow and from
    subnormals: within ~1 ulp of hypotf. hypot(inf, nan) is inf, as in C. Compiled
    once per installation (cache=True), not per kernel.
    """
    ax = abs(a)
    bx = abs(b)
    m = max(ax, bx)
    big = m > np.float32(2.0 ** 60)
    tiny = m < np.float32(2.0 ** -60)
    s = np.float32(2.0 ** -100) if big else (np.float32(2.0 ** 100) if tiny else np.float32(1))
    u = np.float32(2.0 ** 100) if big else (np.float32(2.0 ** -100) if tiny else np.float32(1))
    x = ax * s
    y = bx * s
    r = np.float32(math.sqrt(x * x + y * y)) * u
    return _INF32 if (ax == _INF32) | (bx == _INF32) else r


class _StencilEmitter(_Emitter):
    def expr(self, op: str, args: Sequence[str], arg_ids: Sequence[int], dtype: str) -> str:
        if op == "hypot" and dtype == "float32" and \
                all(self.program.dtype_of(a) == "float32" for a in arg_ids):
            return f"hypot_f32({args[0]}, {args[1]})"
        return super().expr(op, args, arg_ids, dtype)


# generated files follow this file's rules and numba_cpu's expressions
_CODEGEN_HASH = codegen_hash(__file__, numba_cpu.__file__)


def _pairs(s: ConvStage | PointStage) -> list[tuple[int, int]]:
    """(value read, row radius) of each input of a stage."""
    return [(s.source, s.radius[0])] if isinstance(s, ConvStage) else [(u, 0) for u in s.sources]


@dataclass(frozen=True)
class _Layout:
    reach: tuple[int | None, ...]  # rows of each value the result needs either side (None: dead)
    ring: tuple[int, ...]  # rows of each value kept at once
    modes: tuple[str, ...]  # border modes with index maps (all but constant)
    radius: int  # how far the index maps reach outside the image
    inlined: frozenset[int]  # convs whose horizontal pass runs inside their one point reader


@functools.lru_cache(maxsize=256)
def _layout(stencil: StencilProgram) -> _Layout:
    n = len(stencil.stages) + 1
    reach: list[int | None] = [None] * n
    reach[-1] = 0
    for k in range(n - 2, -1, -1):
        a = reach[k + 1]
        if a is not None:
            for u, rad in _pairs(stencil.stages[k]):
                reach[u] = max(reach[u] or 0, a + rad)
    ring = [1] * n
    readers: dict[int, list[int]] = {}
    for k, s in enumerate(stencil.stages, start=1):
        a = reach[k]
        if a is None:
            continue
        for u, rad in _pairs(s):
            ring[u] = max(ring[u], reach[u] - a + rad + 1)  # type: ignore[operator]
            readers.setdefault(u, []).append(k)
    convs = [(k, s) for k, s in enumerate(stencil.stages, start=1)
             if isinstance(s, ConvStage) and reach[k] is not None]
    modes = tuple(sorted({s.border for _, s in convs} - {"constant"}))
    radius = max((max(s.radius) for _, s in convs), default=0)
    # A separable conv read by one point stage on the same row needs no ring: the
    # point stage finishes its horizontal pass (saves a row write and read).
    inlined = frozenset(
        k for k, s in convs
        if s.separable is not None and k != stencil.result and len(readers.get(k, ())) == 1
        and isinstance(stencil.stages[readers[k][0] - 1], PointStage)
        and reach[readers[k][0]] == reach[k])
    return _Layout(tuple(reach), tuple(ring), modes, radius, inlined)


class _Consts:
    """Literals as module globals: Numba freezes those, but cannot type float.fromhex."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def __call__(self, value: bool | int | float, dtype: str) -> str:
        text = _literal(value, dtype)
        return self.names.setdefault(text, f"K{len(self.names)}")

    def lines(self) -> list[str]:
        return [f"{name} = {text}" for text, name in self.names.items()]


def _taps(values: Sequence[float], dtype: str, consts: _Consts) -> list[tuple[int, str]]:
    return [(i, consts(float(w), dtype)) for i, w in enumerate(values) if w != 0]


def _row(offset: int) -> str:
    return f"r + {offset}" if offset > 0 else f"r - {-offset}" if offset < 0 else "r"


class _Writer:
    """Emits the kernel body, a method per kind of stage; knows where each value's rows live."""

    def __init__(self, stencil: StencilProgram, layout: _Layout) -> None:
        self.stencil = stencil
        self.layout = layout
        self.consts = _Consts()
        self.helpers: dict[str, str] = {}
        self.lines: list[str] = []
        self.pads: dict[str, int] = {}  # dtype -> widest pad of its shared row buffer
        self.first_param: dict[int, int] = {}  # point stage value -> its first parameter
        first = 0
        for k, st in enumerate(stencil.stages, start=1):
            if isinstance(st, PointStage):
                self.first_param[k] = first
                first += len(st.program.params)
        self.params = [f"S{n}" for n in range(first)]

    def emit(self, ind: int, line: str) -> None:
        self.lines.append(" " * ind + line)

    def array(self, v: int) -> str:
        """The 2-D array holding rows of value ``v``."""
        return "src" if v == 0 else "dst" if v == self.stencil.result else f"ring{v}"

    def slot(self, v: int, row: str) -> str:
        """Index into ``array(v)`` of image row ``row`` (already inside the image)."""
        ring = self.layout.ring[v]
        if v == 0 or v == self.stencil.result:
            return row
        return (f"{row} % {ring}" if row.isidentifier() or row.startswith("rmaps") else
                f"({row}) % {ring}") if ring > 1 else "0"

    def mapped(self, mode: str, offset: int) -> str:
        """Row ``r + offset`` (maybe outside the image) through the border map of ``mode``."""
        return f"rmaps[{self.layout.modes.index(mode)}, r + {offset + self.layout.radius}]"

    def stage(self, k: int) -> None:
        """Row ``y + reach[k]`` of value ``k``, where that row is one this task needs."""
        s = self.stencil.stages[k - 1]
        reach = self.layout.reach[k]
        self.emit(12, f"# value {k}: {'conv' if isinstance(s, ConvStage) else 'point'}")
        self.emit(12, f"r = y + {reach}")
        self.emit(12, f"if r >= lo{k} and r <= hi{k}:")
        if isinstance(s, PointStage):
            self.point(16, k, s)
            return
        if k not in self.layout.inlined:
            dt = self.stencil.value_dtypes[k]
            self.pads[dt] = max(self.pads.get(dt, 0), s.radius[1])
        if s.separable is None:
            self.conv_direct(16, k, s)
        else:
            self.conv_separable(16, k, s)

    def pad(self, ind: int, mode: str, tmp: str, p: int) -> None:
        """Fill the ``p`` columns either side of the row in ``tmp[p:p + W]``."""
        if p == 0:
            return
        self.emit(ind, f"for k in range({p}):")
        if mode == "constant":
            self.emit(ind + 4, f"{tmp}[k] = 0")
            self.emit(ind + 4, f"{tmp}[{p} + W + k] = 0")
            return
        m, r = self.layout.modes.index(mode), self.layout.radius
        self.emit(ind + 4, f"{tmp}[k] = {tmp}[{p} + cmaps[{m}, {r - p} + k]]")
        self.emit(ind + 4, f"{tmp}[{p} + W + k] = {tmp}[{p} + cmaps[{m}, {r} + W + k]]")

    def conv_direct(self, ind: int, k: int, s: ConvStage) -> None:
        """Row by row of weights: copy the source row, pad it, accumulate."""
        dt = self.stencil.value_dtypes[k]
        rh, p = s.radius
        src, dst, tmp = self.array(s.source), self.array(k), f"tmp_{dt}"
        self.emit(ind, f"sl = {self.slot(k, 'r')}")
        self.emit(ind, "for x in range(W):")
        self.emit(ind + 4, f"{dst}[sl, x] = {_ctor(dt)}(0)")
        for i, wrow in enumerate(s.weights):
            taps = _taps(wrow, dt, self.consts)
            if not taps:
                continue
            inner = ind
            if s.border == "constant":
                self.emit(ind, f"if {_row(i - rh)} >= 0 and {_row(i - rh)} < H:")
                inner += 4
                self.emit(inner, f"q = {self.slot(s.source, _row(i - rh))}")
            else:
                self.emit(inner, f"q = {self.slot(s.source, self.mapped(s.border, i - rh))}")
            self.emit(inner, "for x in range(W):")
            self.emit(inner + 4, f"{tmp}[{p} + x] = {src}[q, x]")
            self.pad(inner, s.border, tmp, p)
            terms = " + ".join(f"{c} * {tmp}[x + {j}]" for j, c in taps)
            self.emit(inner, "for x in range(W):")
            self.emit(inner + 4, f"{dst}[sl, x] += {terms}")

    def conv_separable(self, ind: int, k: int, s: ConvStage) -> None:
        """The vertical pass into a padded row, then (unless its reader does it) the
        horizontal pass into the value's ring."""
        assert s.separable is not None
        dt = self.stencil.value_dtypes[k]
        T = _ctor(dt)
        tmp = f"hbuf{k}" if k in self.layout.inlined else f"tmp_{dt}"
        vrows = [(i - s.radius[0], c) for i, c in _taps(s.separable[0], dt, self.consts)]
        self.vertical(ind, s, vrows, tmp, T)
        self.pad(ind, s.border, tmp, s.radius[1])
        if k in self.layout.inlined:
            return
        hor = _taps(s.separable[1], dt, self.consts)
        terms = " + ".join(f"{c} * {tmp}[x + {j}]" for j, c in hor) or f"{T}(0)"
        self.emit(ind, f"sl = {self.slot(k, 'r')}")
        self.emit(ind, "for x in range(W):")
        self.emit(ind + 4, f"{self.array(k)}[sl, x] = {terms}")

    def vertical(self, ind: int, s: ConvStage, vrows: list[tuple[int, str]], tmp: str,
                 T: str) -> None:
        """tmp[P:P+W] = the column taps over rows of the source around r."""
        p = s.radius[1]
        src = self.array(s.source)
        if not vrows:
            self.emit(ind, "for x in range(W):")
            self.emit(ind + 4, f"{tmp}[{p} + x] = {T}(0)")
            return

        arrays = [src] * len(vrows)
        for m, (o, _) in enumerate(vrows):
            if s.border != "constant":
                self.emit(ind, f"q{m} = {self.slot(s.source, self.mapped(s.border, o))}")
                continue
            # rows outside the image read a row of zeros (one loop either way)
            arrays[m] = f"A{m}"
            self.emit(ind, f"A{m} = {src}")
            self.emit(ind, f"q{m} = {_row(o)}")
            self.emit(ind, f"if q{m} < 0 or q{m} >= H:")
            self.emit(ind + 4, f"A{m} = zrow_{self.stencil.value_dtypes[s.source]}")
            self.emit(ind + 4, f"q{m} = 0")
            if s.source != 0 and self.layout.ring[s.source] > 1:
                self.emit(ind, "else:")
                self.emit(ind + 4, f"q{m} = {self.slot(s.source, f'q{m}')}")
        terms = " + ".join(f"{c} * {a}[q{m}, x]" for m, ((_, c), a) in enumerate(zip(vrows, arrays)))
        self.emit(ind, "for x in range(W):")
        self.emit(ind + 4, f"{tmp}[{p} + x] = {terms}")

    def point_reads(self, ind: int, s: PointStage, live: set[int]) -> list[str]:
        """The per-pixel reads of the program's live inputs (``a<m> = ...``); an inlined
        conv's horizontal pass is done here, from its padded row."""
        reads: list[str] = []
        for m, v in enumerate(s.sources):
            if m not in live:
                continue
            if v in self.layout.inlined:
                conv = self.stencil.stages[v - 1]
                assert isinstance(conv, ConvStage) and conv.separable is not None
                taps = _taps(conv.separable[1], self.stencil.value_dtypes[v], self.consts)
                T = _ctor(self.stencil.value_dtypes[v])
                reads.append(f"a{m} = " + (" + ".join(f"{c} * hbuf{v}[x + {j}]" for j, c in taps)
                                           or f"{T}(0)"))
            else:
                self.emit(ind, f"q{m} = {self.slot(v, 'r')}")
                reads.append(f"a{m} = {self.array(v)}[q{m}, x]")
        return reads

    def point(self, ind: int, k: int, s: PointStage) -> None:
        program: Program = s.program
        emitter = _StencilEmitter(program)
        n_in, n_const = program.n_inputs, len(program.consts)
        live = _live_values(program)
        names: dict[int, str] = {m: f"a{m}" for m in range(len(s.sources))}
        reads = self.point_reads(ind, s, live)
        for j in program.baked:
            names[n_in + j] = self.consts(*program.consts[j])
        for n, j in enumerate(program.params, start=self.first_param[k]):
            names[n_in + j] = f"S{n}"
        self.emit(ind, f"sl = {self.slot(k, 'r')}")
        self.emit(ind, "for x in range(W):")
        for line in reads:
            self.emit(ind + 4, line)
        for q, instr in enumerate(program.instrs):
            value = n_in + n_const + q
            if value not in live:
                continue
            names[value] = f"p{q}"
            code = emitter.expr(instr.op, [names[a] for a in instr.args], instr.args, instr.dtype)
            self.emit(ind + 4, f"p{q} = {code}")
        self.emit(ind + 4, f"{self.array(k)}[sl, x] = {names[program.outputs[0]]}")
        self.helpers.update(emitter.helpers)


def _live_values(program: Program) -> set[int]:
    """The values the program's outputs depend on (inputs, constants, instructions)."""
    n_in, n_const = program.n_inputs, len(program.consts)
    live: set[int] = set(program.outputs)
    for q in range(len(program.instrs) - 1, -1, -1):
        if n_in + n_const + q in live:
            live.update(program.instrs[q].args)
    return live


def _allocations(stencil: StencilProgram, layout: _Layout, live: list[int],
                 pads: dict[str, int]) -> list[str]:
    """Scratch per call, reused by its tasks: rings and padded row buffers."""
    dts = stencil.value_dtypes
    alloc = [f"    ring{v} = np.empty(({layout.ring[v]}, W), {_ctor(dts[v])})"
             for v in live[:-1] if v not in layout.inlined]
    alloc += [f"    tmp_{dt} = np.empty(W + {2 * p}, {_ctor(dt)})" for dt, p in pads.items()]
    alloc += [f"    hbuf{v} = np.empty(W + {2 * stencil.stages[v - 1].radius[1]}, {_ctor(dts[v])})"
              for v in sorted(layout.inlined)]
    zeros = sorted({dts[s.source] for k in live if isinstance(s := stencil.stages[k - 1], ConvStage)
                    and s.border == "constant" and s.separable is not None})
    alloc += [f"    zrow_{dt} = np.zeros((1, W), {_ctor(dt)})" for dt in zeros]
    return alloc


def _task_rows(reach: tuple[int | None, ...], live: list[int]) -> tuple[list[str], str]:
    """The rows ``lo<v>..hi<v>`` of each value a task makes, and its first step ``y``."""
    bounds = []
    for v in live:
        bounds.append(f"        lo{v} = max(0, r0 - {reach[v]})")
        bounds.append(f"        hi{v} = min(H - 1, r1 - 1 + {reach[v]})")
    firsts = sorted({f"lo{v} - {reach[v]}" if reach[v] else f"lo{v}" for v in live})
    start = f"min({', '.join(firsts)})" if len(firsts) > 1 else firsts[0]
    return bounds, start


def render(stencil: StencilProgram) -> str:
    """The Python source of the kernel module.

    ``kernel(out, img, nsplit, t0, t1, rmaps, cmaps, S0, ...)`` runs tasks ``t0 <= t < t1`` of
    ``(B, H, W)`` arrays, task ``t`` being rows ``[p*H//nsplit, (p+1)*H//nsplit)`` of
    image ``t // nsplit`` (``p = t % nsplit``); ``rmaps[m, y + R]`` / ``cmaps[m, x + R]``
    are the border maps (see :func:`border_maps`) of mode ``layout.modes[m]``; ``S<n>``
    are ``stencil.arguments()``.
    """
    if not supports(stencil):
        raise NotImplementedError(f"numba stencil codegen: unsupported {stencil.signature}")
    stencil = stencil.template  # a scalar parameter's value cannot reach the source
    layout = _layout(stencil)
    live = [k for k in range(1, stencil.result + 1) if layout.reach[k] is not None]
    w = _Writer(stencil, layout)
    for k in live:
        w.stage(k)
    bounds, start = _task_rows(layout.reach, live)
    lines = [
        *module_header("numba_stencil", _CODEGEN_HASH, [f"stencil: {stencil.signature}"],
                       extra_imports=["from hermes_nb.codegen.numba_stencil import hypot_f32"]),
        *w.consts.lines(),
        *(src.rstrip() + "\n" for src in w.helpers.values()),
        "",
        '@njit(cache=True, nogil=True, error_model="numpy")',
        f"def kernel({', '.join(['out, img, nsplit, t0, t1, rmaps, cmaps', *w.params])}):",
        "    H = img.shape[1]",
        "    W = img.shape[2]",
        *_allocations(stencil, layout, live, w.pads),
        "    for t in range(t0, t1):",
        "        b = t // nsplit",
        "        part = t - b * nsplit",
        "        r0 = part * H // nsplit",
        "        r1 = (part + 1) * H // nsplit",
        "        src = img[b]",
        "        dst = out[b]",
        *bounds,
        f"        for y in range({start}, r1 if r1 > r0 else r0):",
        *w.lines,
    ]
    return "\n".join(lines) + "\n"


def _border_index(p: np.ndarray, n: int, mode: str) -> np.ndarray:
    """OpenCV's borderInterpolate, vectorised (repeats reflections for tiny n)."""
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    if mode == "reflect101":
        if n == 1:
            return np.zeros_like(p)
        period = 2 * n - 2
        q = np.abs(p) % period
        return np.where(q < n, q, period - q)
    # reflect: period 2n, mirrored about -0.5
    q = np.where(p < 0, -p - 1, p) % (2 * n)
    return np.where(q < n, q, 2 * n - 1 - q)


@functools.lru_cache(maxsize=64)
def border_maps(modes: tuple[str, ...], radius: int, n: int) -> np.ndarray:
    """``maps[m, p + radius]``: the index inside ``[0, n)`` that ``p`` maps to under
    border ``modes[m]``, for ``-radius <= p < n + radius`` (read-only, shared)."""
    p = np.arange(-radius, n + radius, dtype=np.int64)
    maps = np.stack([_border_index(p, n, m) for m in modes]) if modes else \
        np.zeros((0, n + 2 * radius), np.int64)
    maps = np.ascontiguousarray(maps, dtype=np.int64)
    maps.flags.writeable = False
    return maps


def supports(stencil: StencilProgram) -> bool:
    """Whether this generator renders every stage of ``stencil``."""
    return _supports(stencil)


@functools.lru_cache(maxsize=256)
def _supports(stencil: StencilProgram) -> bool:
    dts = stencil.value_dtypes
    if len(dts) != len(stencil.stages) + 1 or any(d not in _TYPES for d in dts):
        return False
    for k, s in enumerate(stencil.stages, start=1):
        if isinstance(s, ConvStage):
            if dts[k] not in _FLOATS or dts[s.source] != dts[k] or s.border not in \
                    ("reflect101", "reflect", "replicate", "constant"):
                return False
            continue
        program = s.program
        if len(program.outputs) != 1 or program.dtype_of(program.outputs[0]) != dts[k] or \
                tuple(dts[v] for v in s.sources) != program.input_dtypes:
            return False
        try:
            emitter = _StencilEmitter(program)
            for instr in program.instrs:
                emitter.expr(instr.op, [f"v{a}" for a in instr.args], instr.args, instr.dtype)
        except NotImplementedError:
            return False
    return True


# ---- compilation and caches -------------------------------------------------------------
_KERNELS = KernelCache()  # stencil signature -> compiled kernel


def compile_stencil(stencil: StencilProgram) -> Any:
    """The compiled kernel ``kernel(out, img, nsplit, t0, t1, rmaps, cmaps, S0, ...)``
    (see :func:`render`)."""
    def build() -> Any:
        out_t = types.Array(numba.from_dtype(np.dtype(stencil.value_dtypes[-1])), 3, "C")
        img_t = types.Array(numba.from_dtype(np.dtype(stencil.value_dtypes[0])), 3, "C",
                            readonly=True)
        maps_t = types.Array(types.int64, 2, "C", readonly=True)
        params = [numba.from_dtype(a.dtype) for a in stencil.arguments()]
        return build_kernel(render(stencil), "", (out_t, img_t, types.int64, types.int64,
                                                  types.int64, maps_t, maps_t, *params))

    return _KERNELS.get_or_build(stencil.signature, build,
                                 f"fused_stencil kernel ({len(stencil.stages)} stages) for cpu:0")


def layout_of(stencil: StencilProgram) -> tuple[tuple[str, ...], int]:
    """The border modes the kernel's maps cover and its total radius (for ``border_maps``)."""
    layout = _layout(stencil)
    return layout.modes, layout.radius
