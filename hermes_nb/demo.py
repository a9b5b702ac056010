"""Headless demo: list the devices, then run a matmul and a blur+Sobel pipeline on each,
checking every result against NumPy/SciPy and printing timings.

Run with ``python -m hermes_nb.demo`` (or ``make demo``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

import hermes_nb as hm
from hermes_nb.doctor import reference_edges


def _median_seconds(fn: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(size: int = 512) -> int:
    print("Hermes devices:")
    for d in hm.devices():
        print(f"  {d.id:<10} {d.name} ({d.compute_units} compute units, "
              f"{d.memory_bytes / 2**30:.1f} GiB, fp64={'yes' if d.fp64 else 'no'})")

    rng = np.random.default_rng(0)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    image = rng.random((size, size), dtype=np.float32)
    expected_mm = a @ b
    expected_edges = reference_edges(image)
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())

    failures = 0
    print(f"\n{'device':<10} {'workload':<28} {'check':<6} {'max rel err':>12} {'median':>10}")
    for d in hm.devices():
        with hm.device(d):
            mm = hm.asarray(a) @ hm.asarray(b)
            edges = pipeline(hm.asarray(image))
        for label, tensor, expected in (
            (f"matmul {size}x{size} f32", mm, expected_mm),
            (f"blur5+sobel {size}x{size} f32", edges, expected_edges),
        ):
            result = tensor.numpy()  # first run compiles
            err = float(np.max(np.abs(result - expected)) / max(np.max(np.abs(expected)), 1e-30))
            ok = err < 1e-4
            failures += not ok
            seconds = _median_seconds(tensor.numpy)
            print(f"{d.id:<10} {label:<28} {'ok' if ok else 'FAIL':<6} {err:>12.2e} "
                  f"{seconds * 1e3:>8.1f} ms")
    print("\nall results match NumPy/SciPy" if not failures else f"\n{failures} check(s) FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
