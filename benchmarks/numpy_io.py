"""W1 and W2 as a notebook cell runs them: NumPy arrays in, a NumPy array out.

    python -m benchmarks.numpy_io [--repeats 7] [--size 4096] [--n 33554432]

Each Hermes timing covers building the expression from host arrays, the run and
``.numpy()`` (copies included); the baselines are OpenCV (W1) and NumPy (W2), measured in
the same process. Prints medians, ratios to the baseline and the CPU.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import hermes_nb as hm
from benchmarks.isolation import _cpu


def _median_s(fn: Callable[[], object], repeats: int) -> float:
    fn()  # compile and calibrate outside the timing
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _hermes(device: str | None, build: Callable[[], hm.Tensor]) -> Callable[[], np.ndarray]:
    def run() -> np.ndarray:
        if device is None:
            return build().numpy()
        with hm.device(device):
            tensor = build()
        return tensor.numpy()

    return run


def main(argv: list[str] | None = None) -> int:
    import cv2

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--n", type=int, default=1 << 25)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    image = rng.random((args.size, args.size), dtype=np.float32)
    a, b, c = (rng.random(args.n, dtype=np.float32) for _ in range(3))
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())

    def opencv() -> np.ndarray:
        blur = cv2.GaussianBlur(image, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
        gx = cv2.Sobel(blur, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        gy = cv2.Sobel(blur, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        return cv2.magnitude(gx, gy)

    def numpy_w2() -> np.ndarray:
        return np.exp(-((a * b + c) ** 2) * np.float32(0.5)) + a

    def w2() -> hm.Tensor:
        x, y, z = hm.asarray(a), hm.asarray(b), hm.asarray(c)
        return hm.exp(-((x * y + z) ** 2) * 0.5) + x

    devices = [d.id for d in hm.devices() if d.kind != "cuda"] + [None]
    print(f"CPU: {_cpu()}; NumPy in, NumPy out; medians of {args.repeats}")
    print(f"{'workload':<28} {'candidate':<12} {'median':>10} {'ratio':>7}")
    for label, baseline, build in (("W1 blur5+Sobel " + f"{args.size}²", opencv,
                                    lambda: pipeline(hm.asarray(image))),
                                   (f"W2 elementwise {args.n}", numpy_w2, w2)):
        base = _median_s(baseline, args.repeats)
        print(f"{label:<28} {'baseline':<12} {base * 1e3:>8.1f}ms {1.0:>7.2f}")
        want = baseline()
        for device in devices:
            run = _hermes(device, build)
            got = run()
            err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
            t = _median_s(run, args.repeats)
            name = device or "auto"
            print(f"{label:<28} {name:<12} {t * 1e3:>8.1f}ms {base / t:>7.2f}  (max rel err {err:.1e})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
