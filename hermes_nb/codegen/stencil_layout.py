"""Tiles of a fused stencil kernel: launch geometry (:class:`StencilConfig`), which values
live in local/shared-memory tiles and how far each reaches beyond the output tile, the local
memory that needs, whether every stage can run on vectors, and the geometry each kind of
device starts from."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from hermes_nb.codegen.c_source import OpenCLRenderer
from hermes_nb.ir import dtypes
from hermes_nb.ir.stencil import ConvStage, PointStage, StencilProgram

__all__ = ["CPU_TILE", "CUDA_CONFIG", "FLOATS", "Layout", "StencilConfig", "Tile", "UnsupportedStencil",
           "grid", "layout", "local_bytes", "opencl_config", "smaller", "vector_dtype"]

FLOATS = dtypes.FLOAT_NAMES


class UnsupportedStencil(ValueError):
    """The generator cannot express this program (e.g. a convolution of integers)."""


@dataclass(frozen=True)
class StencilConfig:
    """Launch geometry: ``wx x wy`` work-items per group, each handling vectors of ``v``
    adjacent pixels; a group's output tile is ``th`` rows by ``tw`` columns (``th`` a
    multiple of ``wy``, ``tw`` of ``wx * v``)."""

    v: int = 1
    wx: int = 32
    wy: int = 8
    th: int = 16
    tw: int = 32

    def __post_init__(self) -> None:
        if self.th % self.wy or self.tw % (self.wx * self.v):
            raise ValueError(f"tile {self.th}x{self.tw} does not split over {self}")


CPU_TILE = (16, 64)  # (rows, columns) of a CPU work-group's output tile
CUDA_CONFIG = StencilConfig(v=1, wx=32, wy=8, th=16, tw=32)  # small enough for 48 KiB static shared


@dataclass
class Tile:
    top: int  # rows above the output tile
    left: int  # columns left of the output tile
    rows: int
    cols: int  # a multiple of V


@dataclass
class Layout:
    tiles: dict[int, Tile] = field(default_factory=dict)  # value -> tile (else in registers)
    modes: dict[int, list[str | None]] = field(default_factory=dict)  # value -> tile buffers
    scratch: dict[int, Tile] = field(default_factory=dict)  # separable stage -> column pass
    live: set[int] = field(default_factory=set)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def layout(stencil: StencilProgram, cfg: StencilConfig) -> Layout:
    """Walk the stages backwards from the result: a value is a tile if a convolution (or a
    pointwise stage computed on a tile) reads it; its tile covers what every consumer needs."""
    stages = stencil.stages
    if not stages:
        raise UnsupportedStencil("a stencil program needs at least one stage")
    lay = Layout()
    need: dict[int, list[int]] = {}  # value -> [top, bottom, left, right]
    tile_flag: set[int] = set()
    result = stencil.result
    lay.live.add(result)

    def require(v: int, ext: tuple[int, int, int, int], tile: bool) -> None:
        lay.live.add(v)
        old = need.setdefault(v, [0, 0, 0, 0])
        need[v] = [max(a, b) for a, b in zip(old, ext)]
        if tile:
            tile_flag.add(v)

    def finalize(v: int) -> tuple[int, int, int, int]:
        if v not in tile_flag:
            return (0, 0, 0, 0)
        top, bottom, left, right = need.get(v, [0, 0, 0, 0])
        cols = _round_up(left + cfg.tw + right, cfg.v)
        lay.tiles[v] = Tile(top, left, top + cfg.th + bottom, cols)
        return (top, bottom, left, cols - left - cfg.tw)

    for s in range(len(stages) - 1, -1, -1):
        u = s + 1
        if u not in lay.live:
            continue
        stage = stages[s]
        ext = finalize(u)
        is_tile = u in tile_flag
        if isinstance(stage, ConvStage):
            ry, rx = stage.radius
            v = stage.source
            modes = lay.modes.setdefault(v, [])
            if stage.border not in modes:
                modes.append(stage.border)
            if stage.separable is not None and is_tile:
                t = lay.tiles[u]
                left = t.left + rx
                cols = _round_up(left + cfg.tw + ext[3] + rx, cfg.v)
                lay.scratch[s] = Tile(t.top, left, t.rows, cols)
                require(v, (ext[0] + ry, ext[1] + ry, left, cols - left - cfg.tw), True)
            else:
                require(v, (ext[0] + ry, ext[1] + ry, ext[2] + rx, ext[3] + rx), True)
        else:
            for v in stage.sources:
                require(v, ext, is_tile)
    tile_flag.add(0)  # the input is always staged in a tile: every read of it is local
    lay.live.add(0)
    finalize(0)
    for v in lay.tiles:
        if not lay.modes.get(v):
            lay.modes[v] = [None]  # read only pointwise: out-of-image entries never matter
    return lay


def local_bytes(stencil: StencilProgram, cfg: StencilConfig) -> int:
    """Local (shared) memory one work-group of this configuration needs."""
    lay = layout(stencil, cfg)
    total = 0
    for v, t in lay.tiles.items():
        total += t.rows * t.cols * np.dtype(stencil.value_dtypes[v]).itemsize * len(lay.modes[v])
    for s, t in lay.scratch.items():
        total += t.rows * t.cols * np.dtype(stencil.value_dtypes[s + 1]).itemsize
    return total


@functools.lru_cache(maxsize=256)
def vector_dtype(stencil: StencilProgram) -> str | None:
    """The one float dtype of all values if every stage can run on vectors, else None."""
    dtypes = set(stencil.value_dtypes)
    if len(dtypes) != 1 or not dtypes <= set(FLOATS):
        return None
    (f,) = dtypes
    for st in stencil.stages:
        if isinstance(st, PointStage):
            p = st.program
            if OpenCLRenderer.vector_float(p) != f or set(p.input_dtypes) != {f} \
                    or p.dtype_of(p.outputs[0]) != f:
                return None
    return f


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
