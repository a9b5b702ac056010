"""Compile cost of a new fused kernel, and time to first result in a fresh process whose
disk caches are warm.

    python -m benchmarks.compile_time [--size 1024]

For each device, two fresh processes share one new cache directory and run the same
W1-style pipeline with a constant nobody has compiled before: in the first, the first
result pays the compile (and the compiler's start-up in that process; a second new
kernel there shows the compile alone); in the second, it pays only loading from the
disk caches.

    python -m benchmarks.compile_time --first-cell [--runs 8] [--pause 1] [--repeat 3]

Tutorial 04's five-kernel cell (blur5+sobel, ``relu(a @ a.T - 190).mean(axis=1)``, a
max) in a fresh process with empty caches and an empty history: its first run's wall
time against the compile + run time of its kernels on the devices they finally run on
(measured in another fresh process, each kernel pinned to that device: the sum of its
kernels' times, each compile included). The cell runs ``--runs`` times, ``--pause``
seconds apart (a person re-running a cell); the figure is the median of ``--repeat``
such pairs of processes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from typing import Any


def child(device: str, constant: float, size: int) -> dict[str, float]:
    start = time.perf_counter()
    import numpy as np

    import hermes_nb as hm

    imported = time.perf_counter()
    image = np.random.default_rng(0).random((size, size), dtype=np.float32)
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
    with hm.device(device):
        out = pipeline(hm.asarray(image)) * constant
    t0 = time.perf_counter()
    out.numpy()
    first = time.perf_counter() - t0
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        out.numpy()
        runs.append(time.perf_counter() - t0)
    # a second new kernel in the same process: compile time without Numba's start-up
    with hm.device(device):
        other = pipeline(hm.asarray(image)) * (constant + 1.0)
    t0 = time.perf_counter()
    other.numpy()
    second = time.perf_counter() - t0
    return {"import_s": imported - start, "first_s": first, "run_s": sorted(runs)[1],
            "second_first_s": second}


def _cell(pins: dict[str, str]) -> tuple[float, list[tuple[str, str, float]]]:
    """Run tutorial 04's cell once, each kernel on ``pins[op]`` where given: its wall time
    and (op, device, seconds with any compile) per kernel."""
    import contextlib

    import hermes_nb as hm

    def on(op: str) -> Any:
        return hm.device(pins[op]) if op in pins else contextlib.nullcontext()

    image, a, pipeline = _CELL_INPUTS
    t0 = time.perf_counter()
    with on("fused_stencil"):
        edges = pipeline(image)
    with on("permute"):
        at = a.T
    with on("fused_matmul"):
        m = hm.relu(a @ at - 190.0)
    with on("fused_reduce"):
        scores = m.mean(axis=1)
    with on("max"):
        strongest = edges.max()
    hm.compute(edges, scores, strongest)
    wall = time.perf_counter() - t0
    profile = hm.runtime.last_profile()
    assert profile is not None
    return wall, [(k.op, k.device, k.end - k.start) for k in profile.kernels]


_CELL_INPUTS: tuple[Any, ...] = ()


def first_cell_child(pins: dict[str, str], runs: int, pause: float) -> dict[str, Any]:
    import hermes_nb as hm
    from hermes_nb.data import sample_image

    global _CELL_INPUTS
    a = hm.Tensor.random((768, 768), seed=0).compute()
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
    _CELL_INPUTS = (sample_image(), a, pipeline)
    first, kernels = _cell(pins)
    walls = []
    for _ in range(runs - 1):
        time.sleep(pause)
        wall, last = _cell(pins)
        walls.append(wall)
    final = {op: device for op, device, _ in (last if walls else kernels)}
    return {"first_s": first, "kernels": kernels, "final": final,
            "later_s": walls, "kernel_sum_s": sum(s for _, _, s in kernels)}


def first_cell(runs: int, pause: float) -> dict[str, Any]:
    """The first-run figure: the unpinned cell's first run, and the pinned reference."""
    with tempfile.TemporaryDirectory() as cache:
        free = _spawn_cell({}, runs, pause, cache)
    with tempfile.TemporaryDirectory() as cache:
        pinned = _spawn_cell(free["final"], 1, 0.0, cache)
    return {"first_run_s": free["first_s"], "first_run_kernels": free["kernels"],
            "later_runs_s": free["later_s"], "final_devices": free["final"],
            "reference_s": pinned["kernel_sum_s"], "reference_kernels": pinned["kernels"],
            "ratio": free["first_s"] / pinned["kernel_sum_s"]}


def _spawn_cell(pins: dict[str, str], runs: int, pause: float, cache: str) -> dict[str, Any]:
    env = dict(os.environ, HERMES_NB_CACHE_DIR=cache)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.compile_time", "--cell-child", json.dumps(pins),
         "--runs", str(runs), "--pause", str(pause)], capture_output=True, text=True, env=env,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _print_first_cell(r: dict[str, Any]) -> None:
    print("\ntutorial 04's cell, empty caches and history")
    print(f"  first run {r['first_run_s'] * 1e3:.0f} ms:",
          ", ".join(f"{op} on {d} {s * 1e3:.0f} ms" for op, d, s in r["first_run_kernels"]))
    print("  later runs:", ", ".join(f"{s * 1e3:.0f}" for s in r["later_runs_s"]), "ms")
    print(f"  compile + run on the final devices {r['reference_s'] * 1e3:.0f} ms:",
          ", ".join(f"{op} on {d} {s * 1e3:.0f} ms" for op, d, s in r["reference_kernels"]))
    print(f"  first run / (compile + run on the final devices) = {r['ratio']:.2f}")


def _first_cells(runs: int, pause: float, repeat: int) -> dict[str, Any]:
    results = sorted((first_cell(runs, pause) for _ in range(repeat)), key=lambda r: r["ratio"])
    for r in results:
        _print_first_cell(r)
    median = results[len(results) // 2]
    ratios = ", ".join(f"{r['ratio']:.2f}" for r in results)
    print(f"\nmedian of {repeat}: first run {median['first_run_s'] * 1e3:.0f} ms against "
          f"{median['reference_s'] * 1e3:.0f} ms of compile + run on the final devices: "
          f"{median['ratio']:.2f}x; ratios {ratios}")
    return {"median": median, "all": results}


def _spawn(device: str, constant: float, size: int, cache: str) -> dict[str, float]:
    env = dict(os.environ, HERMES_NB_CACHE_DIR=cache)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.compile_time", "--child", device, str(constant),
         "--size", str(size)], capture_output=True, text=True, env=env, check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(devices: list[str], size: int) -> list[dict[str, float | str]]:
    rows: list[dict[str, float | str]] = []
    for device in devices:
        constant = 1.0 + random.random()  # a program signature no cache has seen
        with tempfile.TemporaryDirectory() as cache:
            cold = _spawn(device, constant, size, cache)
            warm = _spawn(device, constant, size, cache)
        rows.append({
            "device": device,
            "compile_s": cold["first_s"] - cold["run_s"],
            "next_compile_s": cold["second_first_s"] - cold["run_s"],
            "warm_first_result_overhead_s": warm["first_s"] - warm["run_s"],
            "run_s": warm["run_s"],
            "import_s": warm["import_s"],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("DEVICE", "CONSTANT"), help=argparse.SUPPRESS)
    parser.add_argument("--cell-child", help=argparse.SUPPRESS)
    parser.add_argument("--first-cell", action="store_true",
                        help="tutorial 04's cell: first run against compile + run")
    parser.add_argument("--runs", type=int, default=8, help="runs of the cell (--first-cell)")
    parser.add_argument("--pause", type=float, default=1.0,
                        help="seconds between runs of the cell (--first-cell)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh pairs (--first-cell)")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], float(args.child[1]), args.size)))
        return 0
    if args.cell_child is not None:
        print(json.dumps(first_cell_child(json.loads(args.cell_child), args.runs, args.pause)))
        return 0
    if args.first_cell:
        result = _first_cells(args.runs, args.pause, args.repeat)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(result, fh, indent=2)
        return 0
    import hermes_nb as hm

    rows = measure([d.id for d in hm.devices()], args.size)
    print(f"\nfirst compile and warm-cache start, blur5+sobel x const, float32 {args.size}²")
    print(f"  {'device':<10} {'first new kernel':>18} {'next new kernel':>16} "
          f"{'warm cache, first result':>26} {'run':>10} {'import':>10}")
    for r in rows:
        print(f"  {r['device']:<10} {r['compile_s']:>16.2f} s {r['next_compile_s']:>14.2f} s "
              f"{r['warm_first_result_overhead_s']:>15.3f} s + run {r['run_s'] * 1e3:>7.1f} ms "
              f"{r['import_s']:>8.2f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
