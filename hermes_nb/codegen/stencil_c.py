"""C-family code generation for fused stencil pipelines (``fused_stencil``): OpenCL C and CUDA C++.

One kernel runs a whole :class:`~hermes_nb.ir.stencil.StencilProgram`: each
work-group owns a ``TH x TW`` tile of the output of one image of the batch and

1. loads the input tile plus its apron (``stencil.halo()`` on each side) into local/shared
   memory, mapping out-of-image coordinates through the border mode of the stage reading it;
2. computes every intermediate value that a later convolution reads on its own tile (the
   output tile grown by what its consumers still need), separable convolutions as a column
   pass into a scratch tile, then a row pass;
3. re-applies border handling on the intermediate's own index space: in work-groups at an
   image edge, out-of-image entries of an intermediate's tile are overwritten by the
   in-image entry its consumer's border mode maps them to (or 0 for ``constant``), so a
   Sobel after a blur reflects the blurred image exactly as the unfused stages do;
4. computes the last stages (convolutions and pointwise maths feeding only the result) in
   registers, per output pixel, and writes the result once.

Each work-item handles ``V`` adjacent pixels of a row as one vector (OpenCL ``floatV``;
PoCL turns these into SIMD code, which it does not reliably do across work-items for
loops like these). CUDA always uses ``V = 1``: threads already run in lock-step warps.
A value a convolution reads in two different border modes gets one tile per mode.

Convolutions accumulate with ``fma`` in the value's dtype (the reference accumulates in
double, so neither rounding is "NumPy's"); pointwise stages reuse
:mod:`hermes_nb.codegen.c_source`, so they round exactly like the elementwise kernels.
Their scalar parameters are kernel arguments ``sp<n>`` after ``nb`` (a changed threshold
runs the built program); the convolution taps are literals, since they decide which taps
exist and how the registers are laid out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hermes_nb.codegen.stencil_dialect import (
    MODE_NAMES,
    CUDADialect,
    Dialect,
    OpenCLDialect,
    border_functions,
)
from hermes_nb.codegen.stencil_layout import (
    CPU_TILE,
    CUDA_CONFIG,
    FLOATS,
    StencilConfig,
    Tile,
    UnsupportedStencil,
    grid,
    layout,
    local_bytes,
    opencl_config,
    smaller,
    vector_dtype,
)
from hermes_nb.ir.stencil import ConvStage, PointStage, StencilProgram

__all__ = [
    "CPU_TILE",
    "CUDA_CONFIG",
    "StencilConfig",
    "UnsupportedStencil",
    "cuda_stencil_source",
    "grid",
    "layout",
    "local_bytes",
    "opencl_config",
    "opencl_stencil_source",
    "render_source",
    "smaller",
    "vector_dtype",
]

# ---------------------------------------------------------------------------------------------
# Pieces of the kernel


class _Lines:
    """Indented source lines; the kernel body starts one level inside the function."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1

    def __call__(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def open(self, text: str) -> None:
        self(text + " {")
        self.depth += 1

    def close(self) -> None:
        self.depth -= 1
        self("}")


def _weight_terms(weights: Sequence[float], reads: list[str], dtype: str, vt: str, d: Dialect
                  ) -> str:
    """Σ weights[k] * reads[k] as one expression: zero taps skipped, ±1 taps without a
    multiply, the rest fused multiply-adds (weights rounded to ``dtype`` like the reference)."""
    r = d.renderer
    acc = ""
    for w, x in zip(weights, reads):
        w = float(np.dtype(dtype).type(w))
        if w == 0.0:
            continue
        if not acc:
            acc = x if w == 1.0 else f"(-{x})" if w == -1.0 else f"(({vt}){r.literal(w, dtype)} * {x})"
        elif w == 1.0:
            acc = f"({acc} + {x})"
        elif w == -1.0:
            acc = f"({acc} - {x})"
        else:
            acc = f"{d.fma(dtype)}(({vt}){r.literal(w, dtype)}, {x}, {acc})"
    return acc or f"(({vt}){r.literal(0.0, dtype)})"


def _check_expressible(stencil: StencilProgram, cfg: StencilConfig, d: Dialect) -> None:
    if not d.vectors and cfg.v != 1:
        raise UnsupportedStencil(f"the {d.name} rendering is scalar (v=1)")
    if cfg.v > 1 and vector_dtype(stencil) is None:
        raise UnsupportedStencil("vector width > 1 needs one float dtype and vectorisable stages")
    for i, st in enumerate(stencil.stages):
        if isinstance(st, ConvStage):
            pair = (stencil.value_dtypes[st.source], stencil.value_dtypes[i + 1])
            if not set(pair) <= set(FLOATS):  # accumulators and fma are float-only here
                raise UnsupportedStencil(f"convolution of {pair[0]} into {pair[1]}")


def _uses_fp64(stencil: StencilProgram) -> bool:
    return any(dt == "float64" for dt in stencil.value_dtypes) or any(
        "float64" in (*st.program.input_dtypes, *(i.dtype for i in st.program.instrs))
        for st in stencil.stages if isinstance(st, PointStage))


def _taps(stage: ConvStage) -> tuple[list[float], list[tuple[int, int]]]:
    """The 2-D weights in row-major order, with the (row, column) of each."""
    weights, at = [], []
    for i, wrow in enumerate(stage.weights):
        for j, wt in enumerate(wrow):
            weights.append(wt)
            at.append((i, j))
    return weights, at


# ---------------------------------------------------------------------------------------------
# The kernel


class _StencilKernel:
    """Writes one ``fused_stencil`` kernel, a phase per method: the input tile, each stage
    computed on a tile (then its border fix-up), the per-pixel stages and the store, and
    the declarations around them. Spellings come from the dialect."""

    def __init__(self, stencil: StencilProgram, cfg: StencilConfig, d: Dialect) -> None:
        _check_expressible(stencil, cfg, d)
        self.lay = layout(stencil, cfg)
        self.stencil, self.cfg, self.d = stencil, cfg, d
        self.dts = stencil.value_dtypes
        self.V = cfg.v
        self.lx, self.ly = ("0", "0") if cfg.wx == cfg.wy == 1 else ("lx", "ly")
        self.w = _Lines()
        self.names: dict[int, str] = {}  # values already in registers in the pixel loop
        # each point stage's scalar parameters: kernel arguments sp<n>, in
        # stencil.arguments() order, passed on to its hp<s>
        self.params: dict[int, list[str]] = {}
        for s, stage in enumerate(stencil.stages):
            if isinstance(stage, PointStage):
                first = sum(len(p) for p in self.params.values())
                self.params[s] = [f"sp{first + n}" for n in range(len(stage.program.params))]

    # ---- spellings ----------------------------------------------------------------------

    def ct(self, v: int) -> str:
        return self.d.renderer.ctype(self.dts[v])

    def vt(self, v: int) -> str:
        return self.d.vector_type(self.ct(v), self.V)

    def load(self, ptr: str) -> str:
        return self.d.load(ptr, self.V)

    def store(self, value: str, ptr: str) -> str:
        return self.d.store(value, ptr, self.V)

    def convert(self, expr: str, src: int, dst: int) -> str:
        return expr if self.dts[src] == self.dts[dst] else self.d.convert(expr, self.ct(dst), self.V)

    def buf(self, v: int, mode: str | None) -> str:
        modes = self.lay.modes[v]
        return f"t{v}_{modes.index(mode) if mode in modes else 0}"

    def first_buf(self, v: int) -> str:
        return self.buf(v, self.lay.modes[v][0])

    def point_fn(self, s: int) -> str:
        return f"hp{s}_vec" if self.V > 1 else f"hp{s}"

    def point_call(self, s: int, args: list[str]) -> str:
        return f"{self.point_fn(s)}({', '.join(args + self.params[s])})"

    @staticmethod
    def at(buf: str, t: Tile, dy: int, dx: int) -> str:
        """Pointer to entry (r + dy, c + dx) of ``buf`` laid out as tile ``t``."""
        return f"{buf} + (r + {dy}) * {t.cols} + c + {dx}"

    def out_at(self, u: int) -> str:
        """Pointer to entry (r, c) of value ``u``'s own tile."""
        return f"{self.first_buf(u)} + r * {self.lay.tiles[u].cols} + c"

    def weighted(self, weights: Sequence[float], reads: list[str], u: int) -> str:
        return _weight_terms(list(weights), reads, self.dts[u], self.vt(u), self.d)

    # ---- loops and synchronisation ------------------------------------------------------

    def barrier(self) -> None:
        # A group of one work-item shares its tiles with no one: no barrier needed, and
        # PoCL's compile time doubles with each barrier a single-item group holds.
        if self.cfg.wx * self.cfg.wy > 1:
            self.w(self.d.barrier)

    def loop(self, rows: int, cols: int, vector: bool = True) -> None:
        """Open the loops of this work-item over a rows x cols area (V columns a step)."""
        step = self.V if vector else 1
        lx, cfg = self.lx, self.cfg
        start_c = f"{lx} * {step}" if lx != "0" and step > 1 else lx
        self.w.open(f"for (int r = {self.ly}; r < {rows}; r += {cfg.wy})")
        self.w.open(f"for (int c = {start_c}; c < {cols}; c += {cfg.wx * step})")

    def tile_loop(self, t: Tile, vector: bool = True) -> None:
        self.loop(t.rows, t.cols, vector)

    def end_loop(self) -> None:
        self.w.close()
        self.w.close()

    @staticmethod
    def inside(t: Tile) -> str:
        """The whole tile lies inside the image (no border handling needed)."""
        return (f"(y0 >= {t.top} && y0 - {t.top} + {t.rows} <= H && "
                f"x0 >= {t.left} && x0 - {t.left} + {t.cols} <= W)")

    def mapped_entries(self, v: int, read: Callable[[int], str]) -> None:
        """Each of value ``v``'s tiles takes, at (r, c), ``read(k)`` at the in-image indices
        ``(my{k}, mx{k})`` its border mode maps (gy, gx) to, or 0 outside (constant)."""
        L, t = self.d.i64, self.lay.tiles[v]
        for k, mode in enumerate(self.lay.modes[v]):
            fn = f"hb_{MODE_NAMES[mode]}"
            self.w(f"const {L} my{k} = {fn}(gy, H), mx{k} = {fn}(gx, W);")
            self.w(f"t{v}_{k}[r * {t.cols} + c] = (my{k} < 0 || mx{k} < 0) ? ({self.ct(v)})0 : "
                   f"{read(k)};")

    # ---- phases -------------------------------------------------------------------------

    def batch_loop(self) -> None:
        d, w = self.d, self.w
        w.open(f"for ({d.i64} b = {d.gid[2]}; b < nb; b += {d.ngroups_z})")
        w(f"{d.global_}const {self.ct(0)}* {d.restrict} src = in + b * H * W;")
        w(f"{d.global_}{self.ct(self.stencil.result)}* {d.restrict} dst = out + b * H * W;")
        self.input_tile()
        for s, stage in enumerate(self.stencil.stages):
            if s + 1 in self.lay.tiles:
                self.tile_stage(s, stage)
        self.pixels()
        w.close()

    def input_tile(self) -> None:
        """Value 0 from global memory into its tiles: plain (vector) row loads in interior
        groups, element by element through the border maps at the image's edges."""
        d, w, t0 = self.d, self.w, self.lay.tiles[0]
        w.open(f"if {self.inside(t0)}")
        self.tile_loop(t0)
        w(f"{d.global_}const {self.ct(0)}* p = src + (y0 - {t0.top} + r) * W + (x0 - {t0.left} + c);")
        w(f"const {self.vt(0)} x = {self.load('p')};")
        for k in range(len(self.lay.modes[0])):
            w(self.store("x", f"t0_{k} + r * {t0.cols} + c"))
        self.end_loop()
        w.close()
        w.open("else")
        self.tile_loop(t0, vector=False)
        w(f"const {d.i64} gy = y0 - {t0.top} + r, gx = x0 - {t0.left} + c;")
        self.mapped_entries(0, lambda k: f"src[my{k} * W + mx{k}]")
        self.end_loop()
        w.close()
        self.barrier()

    def tile_stage(self, s: int, stage: ConvStage | PointStage) -> None:
        if isinstance(stage, PointStage):
            self.point_tile(s, stage)
        elif stage.separable is not None:
            self.separable_tile(s, stage)
        else:
            self.conv_tile(s, stage)
        self.barrier()
        self.copy_modes(s + 1)
        self.fix_borders(s + 1)

    def separable_tile(self, s: int, stage: ConvStage) -> None:
        """A column pass from the source's tile into scratch, then a row pass."""
        assert stage.separable is not None
        u, v = s + 1, stage.source
        tu, tv, ts = self.lay.tiles[u], self.lay.tiles[v], self.lay.scratch[s]
        ry, rx = stage.radius
        col, row = stage.separable
        sb = self.buf(v, stage.border)
        self.w(f"// stage {s}: separable convolution of value {v} ({stage.border}), columns")
        self.tile_loop(ts)
        reads = [self.convert(self.load(self.at(sb, tv, tv.top - ts.top - ry + i, tv.left - ts.left)),
                              v, u) for i in range(len(col))]
        self.w(self.store(self.weighted(col, reads, u), f"s{s} + r * {ts.cols} + c"))
        self.end_loop()
        self.barrier()
        self.w(f"// stage {s}: rows")
        self.tile_loop(tu)
        dx = ts.left - tu.left - rx
        reads = [self.load(f"s{s} + r * {ts.cols} + c + {dx + j}") for j in range(len(row))]
        self.w(self.store(self.weighted(row, reads, u), self.out_at(u)))
        self.end_loop()

    def conv_tile(self, s: int, stage: ConvStage) -> None:
        u, v = s + 1, stage.source
        tu, tv = self.lay.tiles[u], self.lay.tiles[v]
        ry, rx = stage.radius
        sb = self.buf(v, stage.border)
        self.w(f"// stage {s}: convolution of value {v} ({stage.border})")
        self.tile_loop(tu)
        weights, taps = _taps(stage)
        reads = [self.convert(self.load(self.at(sb, tv, tv.top - tu.top - ry + i,
                                                tv.left - tu.left - rx + j)), v, u)
                 for i, j in taps]
        self.w(self.store(self.weighted(weights, reads, u), self.out_at(u)))
        self.end_loop()

    def point_tile(self, s: int, stage: PointStage) -> None:
        tu = self.lay.tiles[s + 1]
        self.w(f"// stage {s}: pointwise on values {stage.sources}")
        self.tile_loop(tu)
        args = []
        for v in stage.sources:
            tv = self.lay.tiles[v]
            args.append(self.load(self.at(self.first_buf(v), tv, tv.top - tu.top, tv.left - tu.left)))
        self.w(self.store(self.point_call(s, args), self.out_at(s + 1)))
        self.end_loop()

    def copy_modes(self, u: int) -> None:
        """One copy of the tile per further border mode its readers use."""
        modes, tu = self.lay.modes[u], self.lay.tiles[u]
        if len(modes) <= 1:
            return
        self.tile_loop(tu)
        self.w(f"const {self.vt(u)} x = {self.load(f't{u}_0 + r * {tu.cols} + c')};")
        for k in range(1, len(modes)):
            self.w(self.store("x", f"t{u}_{k} + r * {tu.cols} + c"))
        self.end_loop()
        self.barrier()

    def fix_borders(self, u: int) -> None:
        """Border handling on the intermediate's own index space: out-of-image entries
        take the in-image entry their reader's border mode maps them to."""
        if self.lay.modes[u] == [None]:
            return
        L, w, tu = self.d.i64, self.w, self.lay.tiles[u]
        top, left = tu.top, tu.left
        w.open(f"if (!{self.inside(tu)})")
        w(f"const {L} ylo = y0 - {top} < 0 ? 0 : y0 - {top};")
        w(f"const {L} yhi = (y0 - {top} + {tu.rows} < H ? y0 - {top} + {tu.rows} : H) - 1;")
        w(f"const {L} xlo = x0 - {left} < 0 ? 0 : x0 - {left};")
        w(f"const {L} xhi = (x0 - {left} + {tu.cols} < W ? x0 - {left} + {tu.cols} : W) - 1;")
        self.tile_loop(tu, vector=False)
        w(f"const {L} gy = y0 - {top} + r, gx = x0 - {left} + c;")
        w("if (gy >= 0 && gy < H && gx >= 0 && gx < W) continue;")
        self.mapped_entries(u, lambda k: (
            f"t{u}_{k}[(hb_clamp(my{k}, ylo, yhi) - (y0 - {top})) * {tu.cols} + "
            f"hb_clamp(mx{k}, xlo, xhi) - (x0 - {left})]"))
        self.end_loop()
        w.close()
        self.barrier()

    def pixels(self) -> None:
        """Per output pixel (V adjacent ones per work-item): the last stages and the store."""
        w, st = self.w, self.stencil
        w("// per output pixel (V adjacent ones per work-item): the last stages and the store")
        self.loop(self.cfg.th, self.cfg.tw)
        w(f"const {self.d.i64} oy = y0 + r, ox = x0 + c;")
        w("if (oy >= H || ox >= W) continue;")
        for s, stage in enumerate(st.stages):
            u = s + 1
            if u not in self.lay.live or u in self.lay.tiles:
                continue
            if isinstance(stage, ConvStage):
                expr = self.register_conv(s, stage)
            else:
                expr = self.point_call(s, [self.value_at(v) for v in stage.sources])
            w(f"const {self.vt(u)} a{u} = {expr};")
            self.names[u] = f"a{u}"
        self.store_result(self.value_at(st.result))
        self.end_loop()
        self.barrier()  # the next batch image overwrites the tiles

    def value_at(self, v: int) -> str:
        """Value ``v`` at this pixel in a register (loaded from its tile once)."""
        if v not in self.names:
            tv = self.lay.tiles[v]
            self.w(f"const {self.vt(v)} a{v} = {self.load(self.at(self.first_buf(v), tv, tv.top, tv.left))};")
            self.names[v] = f"a{v}"
        return self.names[v]

    def register_read(self, stage: ConvStage, u: int, i: int, j: int) -> str:
        tv = self.lay.tiles[stage.source]
        ry, rx = stage.radius
        ptr = self.at(self.buf(stage.source, stage.border), tv, tv.top - ry + i, tv.left - rx + j)
        return self.convert(self.load(ptr), stage.source, u)

    def register_conv(self, s: int, stage: ConvStage) -> str:
        """The convolution at this pixel; separable ones columns first (like the
        reference), one partial sum per nonzero row tap."""
        u = s + 1
        if stage.separable is None:
            weights, taps = _taps(stage)
            return self.weighted(weights, [self.register_read(stage, u, i, j) for i, j in taps], u)
        col, row = stage.separable
        parts = []
        for j, wr in enumerate(row):
            if float(np.dtype(self.dts[u]).type(wr)) == 0.0:
                parts.append("0")
                continue
            expr = self.weighted(col, [self.register_read(stage, u, i, j) for i in range(len(col))], u)
            self.w(f"const {self.vt(u)} c{u}_{j} = {expr};")
            parts.append(f"c{u}_{j}")
        return self.weighted(row, parts, u)

    def store_result(self, res: str) -> None:
        """Write the result: V lanes at once where the row has room for them."""
        w, V = self.w, self.V
        if V == 1:
            w(f"dst[oy * W + ox] = {res};")
            return
        w(f"if (ox + {V} <= W) {{ {self.store(res, 'dst + oy * W + ox')} }}")
        w.open("else")
        w(f"{self.ct(self.stencil.result)} lanes[{V}];")
        w(self.store(res, "lanes"))
        w(f"for (int k = 0; k < {V} && ox + k < W; ++k) dst[oy * W + ox + k] = lanes[k];")
        w.close()

    # ---- around the body ----------------------------------------------------------------

    def functions(self) -> list[str]:
        """The live pointwise stages as functions ``hp<s>`` (and ``hp<s>_vec``)."""
        r, functions = self.d.renderer, []
        for s, stage in enumerate(self.stencil.stages):
            if isinstance(stage, PointStage) and s + 1 in self.lay.live:
                functions += [h for h in r.helpers(stage.program) if h not in functions]
                functions.append(r.function(stage.program, name=f"hp{s}", params=True))
                if self.V > 1:
                    functions.append(self.d.vector_function(stage.program, self.V, f"hp{s}_vec"))
        return functions

    def declarations(self) -> list[str]:
        """The local (shared) buffers: one tile per value and border mode, scratch tiles."""
        lay, local = self.lay, self.d.local
        decls = [f"{local} {self.ct(v)} t{v}_{k}[{t.rows * t.cols}];"
                 for v, t in sorted(lay.tiles.items()) for k in range(len(lay.modes[v]))]
        decls += [f"{local} {self.ct(s + 1)} s{s}[{t.rows * t.cols}];"
                  for s, t in sorted(lay.scratch.items())]
        return decls

    def prologue(self) -> list[str]:
        d, cfg = self.d, self.cfg
        lines = [f"    const {d.i64} x0 = {d.gid[0]} * {cfg.tw}, y0 = {d.gid[1]} * {cfg.th};"]
        if self.lx != "0":
            lines.append(f"    const int lx = {d.lid[0]}, ly = {d.lid[1]};")
        return lines

    def signature(self) -> str:
        d, gl, L = self.d, self.d.global_, self.d.i64
        params = (f"{gl}{self.ct(self.stencil.result)}* {d.restrict} out, "
                  f"{gl}const {self.ct(0)}* {d.restrict} in, "
                  f"const {L} H, const {L} W, const {L} nb")
        r = self.d.renderer
        for s, names in self.params.items():
            program = self.stencil.stages[s].program  # type: ignore[union-attr]
            for name, j in zip(names, program.params):
                params += f", const {r.ctype(program.consts[j][1])} {name}"
        return d.kernel_signature(self.cfg.wx, self.cfg.wy, params)

    def source(self) -> str:
        self.batch_loop()
        cfg = self.cfg
        head = [f"// fused stencil: {self.stencil.signature}",
                f"// tile {cfg.th}x{cfg.tw}, {cfg.wx}x{cfg.wy} work-items of {self.V} pixels",
                *self.d.pragmas(_uses_fp64(self.stencil))]
        return "\n".join([
            *head, "", border_functions(self.d), "", *self.functions(), "",
            f"{self.signature()}\n{{", *("    " + x for x in self.declarations()),
            *self.prologue(), *self.w.lines, "}", "",
        ])


_OPENCL_DIALECT = OpenCLDialect()
_CUDA_DIALECT = CUDADialect()


def opencl_stencil_source(stencil: StencilProgram, cfg: StencilConfig) -> str:
    """OpenCL kernel ``fused_stencil(out, in, H, W, nb, sp0, ...)``: launch it on a grid of
    ``(ceil(W / tw) * wx, ceil(H / th) * wy, nb)`` with groups of ``(wx, wy, 1)``; ``sp<n>``
    are the point stages' scalar parameters (``kernel_arguments``)."""
    return _opencl_stencil_source(stencil.template, cfg)


@functools.lru_cache(maxsize=256)
def _opencl_stencil_source(stencil: StencilProgram, cfg: StencilConfig) -> str:
    return _StencilKernel(stencil, cfg, _OPENCL_DIALECT).source()


def cuda_stencil_source(stencil: StencilProgram, cfg: StencilConfig = CUDA_CONFIG) -> str:
    """CUDA kernel ``extern "C" fused_stencil(out, in, H, W, nb, sp0, ...)``: blocks
    ``(wx, wy, 1)``, grid ``(ceil(W / tw), ceil(H / th), min(nb, 65535))`` (it loops over the
    batch); ``sp<n>`` as in :func:`opencl_stencil_source`."""
    return _cuda_stencil_source(stencil.template, cfg)


@functools.lru_cache(maxsize=256)
def _cuda_stencil_source(stencil: StencilProgram, cfg: StencilConfig) -> str:
    return _StencilKernel(stencil, cfg, _CUDA_DIALECT).source()


def kernel_arguments(stencil: StencilProgram) -> tuple[Any, ...]:
    """The scalar arguments after ``nb``: ``stencil.arguments()``, bools as the 0/1 byte
    of the kernels' ``uchar``/``unsigned char``."""
    return tuple(np.uint8(a) if a.dtype == np.bool_ else a  # type: ignore[attr-defined]
                 for a in stencil.arguments())


def render_source(stencil: StencilProgram, device: str) -> str | None:
    """The source ``explain()`` shows for a stencil kernel on ``device`` (an id such as
    ``opencl:0`` or a kind) when that device is not on this machine: CUDA's, or OpenCL's
    in the geometry of a CPU device. (A live OpenCL device shows its own choice:
    ``OpenCLDevice.kernel_source``.)"""
    kind = device.split(":")[0]
    if kind == "cuda":
        return cuda_stencil_source(stencil)
    if kind != "opencl":
        raise ValueError(f"no C source for device kind {device!r}")
    f = vector_dtype(stencil)
    return opencl_stencil_source(stencil, opencl_config(f, 16 if f == "float32" else 8, True))
