"""C-family code generation for fused stencil pipelines (``fused_stencil``): OpenCL C and CUDA C++.

One kernel runs a whole :class:`~hermes_nb.compiler.stencil_program.StencilProgram`: each
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
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from hermes_nb.codegen.c_source import OpenCLRenderer
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
    layout,
    local_bytes,
    vector_dtype,
)
from hermes_nb.compiler.stencil_program import ConvStage, PointStage, StencilProgram

__all__ = [
    "CPU_TILE",
    "CUDA_CONFIG",
    "StencilConfig",
    "UnsupportedStencil",
    "cuda_stencil_source",
    "layout",
    "local_bytes",
    "opencl_stencil_source",
    "render_source",
    "vector_dtype",
]

# ---------------------------------------------------------------------------------------------
# The kernel


class _Writer:
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


def _weight_terms(weights: list[float], reads: list[str], dtype: str, vt: str, d: Dialect
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


def _render(stencil: StencilProgram, cfg: StencilConfig, d: Dialect) -> str:
    V = cfg.v
    if isinstance(d, CUDADialect) and V != 1:
        raise UnsupportedStencil("the CUDA rendering is scalar (v=1)")
    if V > 1 and vector_dtype(stencil) is None:
        raise UnsupportedStencil("vector width > 1 needs one float dtype and vectorisable stages")
    for i, st in enumerate(stencil.stages):
        if isinstance(st, ConvStage):
            pair = (stencil.value_dtypes[st.source], stencil.value_dtypes[i + 1])
            if not set(pair) <= set(FLOATS):  # accumulators and fma are float-only here
                raise UnsupportedStencil(f"convolution of {pair[0]} into {pair[1]}")
    lay = layout(stencil, cfg)
    r = d.renderer
    dts = stencil.value_dtypes

    def ct(v: int) -> str:
        return r.ctype(dts[v])

    def vt(v: int) -> str:
        return ct(v) + (str(V) if V > 1 else "")

    def load(ptr: str) -> str:
        return f"vload{V}(0, {ptr})" if V > 1 else f"(*({ptr}))"

    def store(val: str, ptr: str) -> str:
        return f"vstore{V}({val}, 0, {ptr});" if V > 1 else f"*({ptr}) = {val};"

    def buf(v: int, mode: str | None) -> str:
        modes = lay.modes[v]
        return f"t{v}_{modes.index(mode) if mode in modes else 0}"

    def convert(expr: str, src: int, dst: int) -> str:
        if dts[src] == dts[dst]:
            return expr
        return f"convert_{vt(dst)}({expr})" if V > 1 else f"(({ct(dst)}){expr})"

    lx, ly = ("0", "0") if cfg.wx == cfg.wy == 1 else ("lx", "ly")
    w = _Writer()

    def barrier() -> None:
        # A group of one work-item shares its tiles with no one: no barrier needed, and
        # PoCL's compile time doubles with each barrier a single-item group holds.
        if cfg.wx * cfg.wy > 1:
            w(d.barrier)

    def tile_loop(t: Tile, vector: bool = True) -> None:
        step = V if vector else 1
        start_c = f"{lx} * {step}" if lx != "0" and step > 1 else lx
        w.open(f"for (int r = {ly}; r < {t.rows}; r += {cfg.wy})")
        w.open(f"for (int c = {start_c}; c < {t.cols}; c += {cfg.wx * step})")

    def end_loop() -> None:
        w.close()
        w.close()

    def inside(t: Tile) -> str:
        """The whole tile lies inside the image (no border handling needed)."""
        return (f"(y0 >= {t.top} && y0 - {t.top} + {t.rows} <= H && "
                f"x0 >= {t.left} && x0 - {t.left} + {t.cols} <= W)")

    # ---- local buffers --------------------------------------------------------------------
    decls = []
    for v, t in sorted(lay.tiles.items()):
        for k in range(len(lay.modes[v])):
            decls.append(f"{d.local} {ct(v)} t{v}_{k}[{t.rows * t.cols}];")
    for s, t in sorted(lay.scratch.items()):
        decls.append(f"{d.local} {ct(s + 1)} s{s}[{t.rows * t.cols}];")

    # ---- value 0: global -> tiles ---------------------------------------------------------
    t0 = lay.tiles[0]
    w.open(f"for ({d.i64} b = {d.gid[2]}; b < nb; b += {d.ngroups_z})")
    w(f"const {ct(0)}* {d.restrict} src = in + b * H * W;")
    w(f"{ct(stencil.result)}* {d.restrict} dst = out + b * H * W;")
    w.open(f"if {inside(t0)}")  # interior groups: plain (vector) row loads
    tile_loop(t0)
    w(f"const {ct(0)}* p = src + (y0 - {t0.top} + r) * W + (x0 - {t0.left} + c);")
    w(f"const {vt(0)} x = {load('p')};")
    for k in range(len(lay.modes[0])):
        w(store("x", f"t0_{k} + r * {t0.cols} + c"))
    end_loop()
    w.close()
    w.open("else")
    tile_loop(t0, vector=False)
    w(f"const {d.i64} gy = y0 - {t0.top} + r, gx = x0 - {t0.left} + c;")
    for k, mode in enumerate(lay.modes[0]):
        fn = f"hb_{MODE_NAMES[mode]}"
        w(f"const {d.i64} my{k} = {fn}(gy, H), mx{k} = {fn}(gx, W);")
        w(f"t0_{k}[r * {t0.cols} + c] = (my{k} < 0 || mx{k} < 0) ? ({ct(0)})0 : "
          f"src[my{k} * W + mx{k}];")
    end_loop()
    w.close()
    barrier()

    # ---- tile stages ----------------------------------------------------------------------
    for s, stage in enumerate(stencil.stages):
        u = s + 1
        if u not in lay.tiles:
            continue
        tu = lay.tiles[u]
        if isinstance(stage, ConvStage):
            v = stage.source
            tv = lay.tiles[v]
            ry, rx = stage.radius
            sb = buf(v, stage.border)
            if stage.separable is not None:
                col, row = stage.separable
                ts = lay.scratch[s]
                dy, dx = tv.top - ts.top - ry, tv.left - ts.left
                w(f"// stage {s}: separable convolution of value {v} ({stage.border}), columns")
                tile_loop(ts)
                reads = [convert(load(f"{sb} + (r + {dy + i}) * {tv.cols} + c + {dx}"), v, u)
                         for i in range(len(col))]
                w(store(_weight_terms(list(col), reads, dts[u], vt(u), d),
                        f"s{s} + r * {ts.cols} + c"))
                end_loop()
                barrier()
                w(f"// stage {s}: rows")
                tile_loop(tu)
                dxs = ts.left - tu.left - rx
                reads = [load(f"s{s} + r * {ts.cols} + c + {dxs + j}") for j in range(len(row))]
                w(store(_weight_terms(list(row), reads, dts[u], vt(u), d),
                        f"{buf(u, lay.modes[u][0])} + r * {tu.cols} + c"))
                end_loop()
            else:
                dy, dx = tv.top - tu.top - ry, tv.left - tu.left - rx
                w(f"// stage {s}: convolution of value {v} ({stage.border})")
                tile_loop(tu)
                ws, reads = [], []
                for i, wrow in enumerate(stage.weights):
                    for j, wt in enumerate(wrow):
                        ws.append(wt)
                        reads.append(convert(
                            load(f"{sb} + (r + {dy + i}) * {tv.cols} + c + {dx + j}"), v, u))
                w(store(_weight_terms(ws, reads, dts[u], vt(u), d),
                        f"{buf(u, lay.modes[u][0])} + r * {tu.cols} + c"))
                end_loop()
        else:
            w(f"// stage {s}: pointwise on values {stage.sources}")
            tile_loop(tu)
            args = []
            for v in stage.sources:
                tv = lay.tiles[v]
                args.append(load(f"{buf(v, lay.modes[v][0])} + (r + {tv.top - tu.top}) * "
                                 f"{tv.cols} + c + {tv.left - tu.left}"))
            fn = f"hp{s}_vec" if V > 1 else f"hp{s}"
            w(store(f"{fn}({', '.join(args)})", f"{buf(u, lay.modes[u][0])} + r * {tu.cols} + c"))
            end_loop()
        barrier()
        modes = lay.modes[u]
        if len(modes) > 1:  # one copy per further border mode its readers use
            tile_loop(tu)
            x = load(f"t{u}_0 + r * {tu.cols} + c")
            w(f"const {vt(u)} x = {x};")
            for k in range(1, len(modes)):
                w(store("x", f"t{u}_{k} + r * {tu.cols} + c"))
            end_loop()
            barrier()
        if modes != [None]:
            # Border handling on the intermediate's own index space: out-of-image entries
            # take the in-image entry their reader's border mode maps them to.
            w.open(f"if (!{inside(tu)})")
            w(f"const {d.i64} ylo = y0 - {tu.top} < 0 ? 0 : y0 - {tu.top};")
            w(f"const {d.i64} yhi = (y0 - {tu.top} + {tu.rows} < H ? y0 - {tu.top} + {tu.rows} : H) - 1;")
            w(f"const {d.i64} xlo = x0 - {tu.left} < 0 ? 0 : x0 - {tu.left};")
            w(f"const {d.i64} xhi = (x0 - {tu.left} + {tu.cols} < W ? x0 - {tu.left} + {tu.cols} : W) - 1;")
            tile_loop(tu, vector=False)
            w(f"const {d.i64} gy = y0 - {tu.top} + r, gx = x0 - {tu.left} + c;")
            w("if (gy >= 0 && gy < H && gx >= 0 && gx < W) continue;")
            for k, mode in enumerate(modes):
                fn = f"hb_{MODE_NAMES[mode]}"
                w(f"const {d.i64} my{k} = {fn}(gy, H), mx{k} = {fn}(gx, W);")
                w(f"t{u}_{k}[r * {tu.cols} + c] = (my{k} < 0 || mx{k} < 0) ? ({ct(u)})0 : "
                  f"t{u}_{k}[(hb_clamp(my{k}, ylo, yhi) - (y0 - {tu.top})) * {tu.cols} + "
                  f"hb_clamp(mx{k}, xlo, xhi) - (x0 - {tu.left})];")
            end_loop()
            w.close()
            barrier()

    # ---- register stages and the result ---------------------------------------------------
    w("// per output pixel (V adjacent ones per work-item): the last stages and the store")
    start_c = f"{lx} * {V}" if lx != "0" and V > 1 else lx
    w.open(f"for (int r = {ly}; r < {cfg.th}; r += {cfg.wy})")
    w.open(f"for (int c = {start_c}; c < {cfg.tw}; c += {cfg.wx * V})")
    w(f"const {d.i64} oy = y0 + r, ox = x0 + c;")
    w("if (oy >= H || ox >= W) continue;")
    names: dict[int, str] = {}

    def value_at(v: int) -> str:
        if v in names:
            return names[v]
        tv = lay.tiles[v]
        name = f"a{v}"
        at = f"{buf(v, lay.modes[v][0])} + (r + {tv.top}) * {tv.cols} + c + {tv.left}"
        w(f"const {vt(v)} {name} = {load(at)};")
        names[v] = name
        return name

    for s, stage in enumerate(stencil.stages):
        u = s + 1
        if u not in lay.live or u in lay.tiles:
            continue
        if isinstance(stage, ConvStage):
            v = stage.source
            tv = lay.tiles[v]
            ry, rx = stage.radius
            sb = buf(v, stage.border)

            def at(i: int, j: int, v: int = v, tv: Tile = tv, ry: int = ry, rx: int = rx,
                   sb: str = sb, u: int = u) -> str:
                return convert(load(f"{sb} + (r + {tv.top - ry + i}) * {tv.cols} + c + "
                                    f"{tv.left - rx + j}"), v, u)

            if stage.separable is not None:
                # columns first (like the reference), one partial sum per nonzero row tap
                col, row = stage.separable
                parts = []
                for j, wr in enumerate(row):
                    if float(np.dtype(dts[u]).type(wr)) == 0.0:
                        parts.append("0")
                        continue
                    expr = _weight_terms(list(col), [at(i, j) for i in range(len(col))],
                                         dts[u], vt(u), d)
                    w(f"const {vt(u)} c{u}_{j} = {expr};")
                    parts.append(f"c{u}_{j}")
                expr = _weight_terms(list(row), parts, dts[u], vt(u), d)
            else:
                ws, reads = [], []
                for i, wrow in enumerate(stage.weights):
                    for j, wt in enumerate(wrow):
                        ws.append(wt)
                        reads.append(at(i, j))
                expr = _weight_terms(ws, reads, dts[u], vt(u), d)
        else:
            fn = f"hp{s}_vec" if V > 1 else f"hp{s}"
            expr = f"{fn}({', '.join(value_at(v) for v in stage.sources)})"
        w(f"const {vt(u)} a{u} = {expr};")
        names[u] = f"a{u}"
    res = value_at(stencil.result)
    if V > 1:
        w(f"if (ox + {V} <= W) {{ {store(res, 'dst + oy * W + ox')} }}")
        w.open("else")
        w(f"{ct(stencil.result)} lanes[{V}];")
        w(store(res, "lanes"))
        w(f"for (int k = 0; k < {V} && ox + k < W; ++k) dst[oy * W + ox + k] = lanes[k];")
        w.close()
    else:
        w(f"dst[oy * W + ox] = {res};")
    w.close()
    w.close()
    barrier()  # the next batch image overwrites the tiles
    w.close()

    # ---- assemble -------------------------------------------------------------------------
    functions: list[str] = []
    for s, stage in enumerate(stencil.stages):
        if isinstance(stage, PointStage) and s + 1 in lay.live:
            for h in r.helpers(stage.program):
                if h not in functions:
                    functions.append(h)
            functions.append(r.function(stage.program, name=f"hp{s}"))
            if V > 1:
                assert isinstance(r, OpenCLRenderer)
                functions.append(r.vector_function(stage.program, V, name=f"hp{s}_vec"))
    head = [f"// fused stencil: {stencil.signature}",
            f"// tile {cfg.th}x{cfg.tw}, {cfg.wx}x{cfg.wy} work-items of {V} pixels"]
    body = "\n".join(w.lines)
    L = d.i64
    prologue = [
        f"    const {L} x0 = {d.gid[0]} * {cfg.tw}, y0 = {d.gid[1]} * {cfg.th};",
    ]
    if lx != "0":
        prologue.append(f"    const int lx = {d.lid[0]}, ly = {d.lid[1]};")
    gl = "__global " if isinstance(d, OpenCLDialect) else ""
    params = (f"{gl}{ct(stencil.result)}* {d.restrict} out, {gl}const {ct(0)}* {d.restrict} in, "
              f"const {L} H, const {L} W, const {L} nb")
    if isinstance(d, OpenCLDialect):
        fp64 = any(dt == "float64" for dt in dts) or any(
            "float64" in (*st.program.input_dtypes, *(i.dtype for i in st.program.instrs))
            for st in stencil.stages if isinstance(st, PointStage))
        head += ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if fp64 else []
        head += ["// pointwise stages round like NumPy's separate ops: no contraction",
                 "#pragma OPENCL FP_CONTRACT OFF"]
        sig = (f"__kernel __attribute__((reqd_work_group_size({cfg.wx}, {cfg.wy}, 1)))\n"
               f"void fused_stencil({params})")
        body = body.replace(f"    const {ct(0)}* {d.restrict} src",
                            f"    __global const {ct(0)}* {d.restrict} src")
        body = body.replace(f"    {ct(stencil.result)}* {d.restrict} dst",
                            f"    __global {ct(stencil.result)}* {d.restrict} dst")
        body = body.replace(f"const {ct(0)}* p = ", f"__global const {ct(0)}* p = ")
    else:
        sig = (f'extern "C" __global__ void __launch_bounds__({cfg.wx * cfg.wy})\n'
               f"fused_stencil({params})")
    return "\n".join([
        *head, "", border_functions(d), "", *functions, "",
        f"{sig}\n{{", *("    " + x for x in decls), *prologue, body, "}", "",
    ])


_OPENCL_DIALECT = OpenCLDialect()
_CUDA_DIALECT = CUDADialect()


@functools.lru_cache(maxsize=256)
def opencl_stencil_source(stencil: StencilProgram, cfg: StencilConfig) -> str:
    """OpenCL kernel ``fused_stencil(out, in, H, W, nb)``: launch it on a grid of
    ``(ceil(W / tw) * wx, ceil(H / th) * wy, nb)`` with groups of ``(wx, wy, 1)``."""
    return _render(stencil, cfg, _OPENCL_DIALECT)


@functools.lru_cache(maxsize=256)
def cuda_stencil_source(stencil: StencilProgram, cfg: StencilConfig = CUDA_CONFIG) -> str:
    """CUDA kernel ``extern "C" fused_stencil(out, in, H, W, nb)``: blocks ``(wx, wy, 1)``,
    grid ``(ceil(W / tw), ceil(H / th), min(nb, 65535))`` (it loops over the batch)."""
    return _render(stencil, cfg, _CUDA_DIALECT)


def render_source(stencil: StencilProgram, device: str) -> str | None:
    """The source ``explain()`` shows for a stencil kernel on ``device`` (an id such as
    ``opencl:0`` or a kind); None where that device runs the stages one by one."""
    kind = device.split(":")[0]
    if kind == "cuda":
        return cuda_stencil_source(stencil)
    if kind != "opencl":
        raise ValueError(f"no C source for device kind {device!r}")
    from hermes_nb.backends import get_device
    from hermes_nb.backends.opencl import stencil as opencl_stencil

    try:
        dev: Any = get_device(device)
    except ValueError:  # not on this machine: show the CPU geometry
        f = vector_dtype(stencil)
        return opencl_stencil_source(stencil, opencl_config(f, 16 if f == "float32" else 8, True))
    cfg = opencl_stencil.stencil_config(dev, stencil)
    return None if cfg is None else opencl_stencil_source(stencil, cfg)


def opencl_config(vector: str | None, native_width: int, cpu: bool, max_group: int = 256
                  ) -> StencilConfig:
    """The geometry an OpenCL device starts from: on CPUs, one work-item per group walking
    its tile in vectors of the native width; on GPUs, scalar work-items in 32x8 groups
    (fewer rows where the device allows fewer than 256 work-items per group)."""
    if cpu and vector is not None and native_width >= 4:
        v = min(native_width, 16)
        return StencilConfig(v=v, wx=1, wy=1, th=CPU_TILE[0], tw=max(CPU_TILE[1], v))
    wx = min(32, max_group)
    wy = max(1, min(8, max_group // wx))
    return StencilConfig(v=1, wx=wx, wy=wy, th=16, tw=wx)


def smaller(cfg: StencilConfig) -> StencilConfig | None:
    """A geometry with a smaller tile (for devices with little local memory), or None."""
    if cfg.th > cfg.wy:
        return dataclasses.replace(cfg, th=max(cfg.wy, cfg.th // 2 // cfg.wy * cfg.wy))
    if cfg.tw > cfg.wx * cfg.v:
        return dataclasses.replace(cfg, tw=cfg.tw // 2 // (cfg.wx * cfg.v) * cfg.wx * cfg.v)
    if cfg.wx > 1:
        return dataclasses.replace(cfg, wx=cfg.wx // 2, tw=cfg.tw // 2)
    if cfg.v > 1:
        return dataclasses.replace(cfg, v=cfg.v // 2, tw=cfg.tw // 2)
    return None


def grid(shape: tuple[int, ...], cfg: StencilConfig) -> tuple[int, int, int]:
    """Work-groups along (W, H, batch) for an image batch of ``shape``."""
    h, w = shape[-2], shape[-1]
    nb = math.prod(shape[:-2])
    return -(-w // cfg.tw), -(-h // cfg.th), nb
