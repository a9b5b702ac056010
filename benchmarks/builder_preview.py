"""The pipeline builder's fused preview after a scalar parameter changes, caches warm.

    python -m benchmarks.builder_preview            # 1024² float32 on cpu:0, 15 changes
    python -m benchmarks.builder_preview --size 512 --changes 5 --device opencl:0

A builder holds Gaussian blur 5×5, Sobel magnitude, gain/offset and a threshold. After a
warm-up, each round sets a new ``gain`` and a new threshold (scalars: kernel arguments, so
nothing compiles) and times ``builder.set(...)`` until the fused preview is delivered
(``builder.wait()``): the figure a person moving a slider sees, wanted ≤ 200 ms. Side by
side, in the same rounds, the same pipeline written by hand with OpenCV and with SciPy, NumPy
arrays in and out. Printed: medians, their ratios, the preview's kernel compile time (0 when
nothing compiled) and the machine's facts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np

import hermes_nb as hm
from benchmarks import machine


def _builder(image: np.ndarray, device: str) -> Any:
    builder = hm.PipelineBuilder(image=image, device=device)
    builder.add("gaussian_blur", kernel_size=5)
    builder.add("sobel_edge_detection")
    builder.add("gain_offset", gain=1.0, offset=0.0)
    builder.add("threshold", thresh=0.5)
    return builder.wait()


def _opencv(image: np.ndarray, gain: float, thresh: float) -> np.ndarray:
    import cv2

    blur = cv2.GaussianBlur(image, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
    gx = cv2.Sobel(blur, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101)
    gy = cv2.Sobel(blur, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101)
    out = cv2.magnitude(gx, gy) * np.float32(gain)
    return cv2.threshold(out, thresh, 1.0, cv2.THRESH_BINARY)[1]


def _scipy(image: np.ndarray, gain: float, thresh: float) -> np.ndarray:
    from scipy import ndimage

    blur = ndimage.gaussian_filter(image, sigma=1.1, truncate=2 / 1.1, mode="mirror")
    mag = np.hypot(ndimage.sobel(blur, axis=1, mode="mirror"),
                   ndimage.sobel(blur, axis=0, mode="mirror")) * np.float32(gain)
    return (mag > thresh).astype(np.float32)


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(size: int, changes: int, device: str) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    image = rng.random((size, size), dtype=np.float32)
    builder = _builder(image, device)
    builder.set(2, gain=1.5).wait()  # warm: the kernels exist, the threads are awake
    times: dict[str, list[float]] = {"builder preview": [], "OpenCV": [], "SciPy": []}
    compile_s = []
    for k in range(changes):
        gain, thresh = 1.0 + (k + 1) * 0.37, 0.2 + 0.05 * (k % 7)
        times["builder preview"].append(_timed(
            lambda g=gain: builder.set(2, gain=g).wait()))
        compile_s.append(builder.profile.compile_s)
        times["OpenCV"].append(_timed(lambda g=gain, t=thresh: _opencv(image, g, t)))
        times["SciPy"].append(_timed(lambda g=gain, t=thresh: _scipy(image, g, t)))
    builder.close()
    return {"size": size, "changes": changes, "device": device,
            "median_ms": {k: statistics.median(v) * 1e3 for k, v in times.items()},
            "max_compile_ms": max(compile_s) * 1e3}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--changes", type=int, default=15)
    parser.add_argument("--device", default="cpu:0")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    facts = machine.facts(bandwidth=False)
    print("\n".join(machine.describe(facts)))
    figures = measure(args.size, args.changes, args.device)
    medians = figures["median_ms"]
    print(f"\n{args.size}² float32, {args.changes} scalar changes, builder on {args.device}")
    for name, ms in medians.items():
        ratio = ms / medians["builder preview"]
        print(f"{name:16s} median {ms:8.1f} ms   {ratio:5.2f}× the builder's preview")
    print(f"largest compile time in a changed preview: {figures['max_compile_ms']:.1f} ms "
          f"(wanted: 0, scalars are kernel arguments); preview wanted ≤ 200 ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": facts, **figures}, f, indent=2)


if __name__ == "__main__":
    main()
