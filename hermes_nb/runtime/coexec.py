"""Co-execution: one data-parallel kernel split by rows across devices.

A kernel is splittable when each block of output rows needs only the matching rows
of its full-size inputs (elementwise, a 2-D matmul by rows of its left operand,
a batched stencil by images) or those rows plus a halo (a 2-D stencil). Tiles run on
their devices concurrently; a gather task joins the rows on the host, so the result
is the one the single-device kernel gives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hermes_nb.ir.node import Node, OpSpec
from hermes_nb.runtime import profile
from hermes_nb.runtime.cluster_devices import bind
from hermes_nb.runtime.cluster_reports import report
from hermes_nb.runtime.resident import Resident
from hermes_nb.runtime.timing import timed

HOST = "cpu:0"
MIN_ROWS_PER_TILE = 16


@dataclass(frozen=True)
class Tile:
    device: str
    start: int  # output rows [start, stop)
    stop: int


def split_axis(node: Node) -> tuple[int, int] | None:
    """(rows, halo) of a splittable node, or None when it cannot be split by rows."""
    if node.ndim == 0 or node.shape[0] < 2 * MIN_ROWS_PER_TILE:
        return None
    if node.op == "fused_elementwise":
        return node.shape[0], 0
    if node.op == "matmul" and node.ndim == 2 and all(i.ndim == 2 for i in node.inputs):
        return node.shape[0], 0
    if node.op == "fused_stencil":
        # batches split by image; a single image by rows, with the stencil's reach as halo
        return node.shape[0], (node.attrs["stencil"].halo()[0] if node.ndim == 2 else 0)
    return None


def _input_rows(node: Node, index: int) -> bool:
    """Whether input ``index`` is sliced along with the output rows (else passed whole)."""
    inp = node.inputs[index]
    if node.op == "matmul":
        return index == 0
    return inp.ndim == node.ndim and inp.shape[0] == node.shape[0]


def tile_key(spec: OpSpec, tile: Tile) -> str:
    """The name a tile's run is recorded (and reported from a worker) under."""
    return f"{spec.key}[{tile.start}:{tile.stop}]"


def tile_task(spec: OpSpec, node_rows: tuple[bool, ...], tile: Tile, halo: int, run_id: int,
              *inputs: Resident) -> tuple[int, Any]:
    """Run rows ``[start - halo, stop + halo)`` of the kernel on the tile's device; returns
    how many leading rows to trim and the host rows. On a cluster worker the tile runs on the
    device the worker offers for it, and its run is reported to the client."""
    lo = max(0, tile.start - halo)
    hi = min(spec.shape[0], tile.stop + halo)
    arrays = [r.host()[lo:hi] if sliced else r.host() for r, sliced in zip(inputs, node_rows)]
    shape = (hi - lo, *spec.shape[1:])
    in_shapes = tuple(a.shape for a in arrays)
    tile_spec = replace(spec, shape=shape, in_shapes=in_shapes, key=tile_key(spec, tile))
    device = bind(tile.device, tile_spec)
    tile_spec = replace(tile_spec, device=device.id)

    def work() -> tuple[float, Any, float, profile.CompileRecorder]:
        # row slices of C-contiguous arrays are contiguous views: the host device reads
        # them in place, others get one upload
        buffers = [np.ascontiguousarray(a) if device.shares_host_cores and device.kind == "cpu"
                   else device.from_host(np.ascontiguousarray(a)) for a in arrays]
        start, out, end, built = timed(device, tile_spec, buffers)
        return start, device.to_host(out), end, built

    start, rows, end, built = device.run(work)
    for event in built.events:  # a tile's builds are compile events, as a kernel's are
        profile.record(run_id, event)
    run = profile.KernelRun(tile_spec.key, spec.op, device.id, start, end, None,
                            "co-execution tile", compile_s=built.seconds)
    if not report(run_id, run, tile_spec, device.id):  # on a worker its client records it
        profile.record(run_id, run)
    return tile.start - lo, rows


def gather_task(spec: OpSpec, tiles: tuple[Tile, ...], *parts: tuple[int, Any]) -> Resident:
    """Join the tiles' rows, trimming their halos, into the full result on the host."""
    pieces = [rows[skip:skip + (t.stop - t.start)] for t, (skip, rows) in zip(tiles, parts)]
    out = np.concatenate(pieces, axis=0).reshape(spec.shape).astype(spec.dtype, copy=False)
    return Resident(HOST, np.ascontiguousarray(out))


def lower_split(node: Node, spec: OpSpec, tiles: tuple[Tile, ...], run_id: int,
                graph: dict[str, Any]) -> None:
    """Add the tile tasks and the gather task (under the node's key) to ``graph``."""
    _, halo = split_axis(node) or (0, 0)
    sliced = tuple(_input_rows(node, i) for i in range(len(node.inputs)))
    keys = []
    for i, tile in enumerate(tiles):
        key = f"{node.key}-tile{i}"
        graph[key] = (tile_task, spec, sliced, tile, halo, run_id, *(n.key for n in node.inputs))
        keys.append(key)
    graph[node.key] = (gather_task, spec, tiles, *keys)
