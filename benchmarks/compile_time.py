"""Compile cost of a new fused kernel, and time to first result in a fresh process whose
disk caches are warm.

    python -m benchmarks.compile_time [--size 1024]

For each device, two fresh processes share one new cache directory and run the same
W1-style pipeline with a constant nobody has compiled before: in the first, the first
result pays the compile (and the compiler's start-up in that process; a second new
kernel there shows the compile alone); in the second, it pays only loading from the
disk caches.
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
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], float(args.child[1]), args.size)))
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
