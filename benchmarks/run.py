"""Run the workloads on every Hermes device and on the libraries a user would pick
instead, in one process, and print medians and ratios to the baseline.

    python -m benchmarks.run            # full sizes (W1 4096², W2 2²⁵, W3 2048²)
    python -m benchmarks.run --quick    # small sizes, a smoke run (CI)
    python -m benchmarks.run --json results.json --workloads W1,W2

Hermes inputs are made resident on the device first; each timing covers one
``compute()`` of the expression and the device's synchronisation, not host copies.
"hermes auto" leaves placement to the scheduler with the inputs on the host, after
the calibration runs, so its time includes any copies the scheduler chose to make.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

import hermes_nb as hm
from hermes_nb.backends import get_device


@dataclass
class Result:
    workload: str
    candidate: str
    median_s: float
    throughput: float
    unit: str
    ratio: float = 0.0
    max_error: float = 0.0


@dataclass
class Workload:
    name: str
    description: str
    unit: str
    amount: float  # units of work per run, for throughput (pixels, bytes, flops)
    baseline: str
    candidates: dict[str, Callable[[], Any]]
    reference: np.ndarray
    tolerance: float


def _hermes(build: Callable[..., hm.Tensor], arrays: list[np.ndarray], device: str
            ) -> Callable[[], Any]:
    """A callable computing ``build(*tensors)`` on ``device`` with inputs resident there."""
    with hm.device(device):
        resident = hm.compute(*(hm.asarray(a) for a in arrays))
        expr = build(*resident)
    dev = get_device(device)

    def run() -> Any:
        (out,) = hm.compute(expr)
        dev.synchronize()
        return out

    run.result = lambda: expr.numpy()  # type: ignore[attr-defined]
    return run


def _hermes_auto(build: Callable[..., hm.Tensor], arrays: list[np.ndarray]) -> Callable[[], Any]:
    """``build`` placed by the scheduler ("auto"), inputs on the host, after calibration."""
    inputs = hm.compute(*(hm.asarray(a) for a in arrays))
    expr = build(*inputs)
    for _ in range(3 * len(hm.devices()) + 1):  # calibration: each device is timed a few times
        hm.compute(expr)

    def run() -> Any:
        (out,) = hm.compute(expr)
        get_device(out.device).synchronize()
        return out

    run.result = lambda: expr.numpy()  # type: ignore[attr-defined]
    return run


def _value(fn: Callable[[], Any]) -> np.ndarray:
    getter = getattr(fn, "result", None)
    return np.asarray(getter() if getter else fn())


def w1_blur_sobel(n: int) -> Workload:
    import scipy.ndimage as ndi

    rng = np.random.default_rng(1)
    img = rng.random((n, n), dtype=np.float32)
    g = hm.image.gaussian_kernel(5).astype(np.float32)
    kx = np.outer([1, 2, 1], [-1, 0, 1]).astype(np.float32)

    def scipy_run() -> np.ndarray:
        b = ndi.correlate1d(ndi.correlate1d(img, g, axis=0, mode="mirror"), g, axis=1,
                            mode="mirror")
        return np.hypot(ndi.correlate(b, kx, mode="mirror"), ndi.correlate(b, kx.T, mode="mirror"))

    candidates: dict[str, Callable[[], Any]] = {"scipy.ndimage": scipy_run}
    try:
        import cv2

        def cv2_run() -> np.ndarray:
            b = cv2.GaussianBlur(img, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
            gx = cv2.Sobel(b, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101)
            gy = cv2.Sobel(b, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101)
            return cv2.magnitude(gx, gy)

        candidates["opencv"] = cv2_run
    except ImportError:
        pass
    try:
        import dask.array as da

        darr = da.from_array(img, chunks=(n // 2, n))

        def dask_run() -> np.ndarray:
            return darr.map_overlap(scipy_run_block, depth=3, boundary="none").compute()

        def scipy_run_block(block: np.ndarray) -> np.ndarray:
            b = ndi.correlate1d(ndi.correlate1d(block, g, axis=0, mode="mirror"), g, axis=1,
                                mode="mirror")
            return np.hypot(ndi.correlate(b, kx, mode="mirror"),
                            ndi.correlate(b, kx.T, mode="mirror"))

        candidates["dask.array map_overlap"] = dask_run
    except ImportError:
        pass
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
    for d in hm.devices():
        candidates[f"hermes {d.id}"] = _hermes(pipeline, [img], d.id)
    candidates["hermes auto"] = _hermes_auto(pipeline, [img])
    return Workload("W1", f"gaussian 5x5 + sobel magnitude, float32 {n}x{n}", "Mpix/s", n * n / 1e6,
                    "opencv" if "opencv" in candidates else "scipy.ndimage", candidates,
                    scipy_run(), 1e-4)


def w2_elementwise(n: int) -> Workload:
    rng = np.random.default_rng(2)
    a, b, c = (rng.random(n, dtype=np.float32) for _ in range(3))
    half = np.float32(0.5)

    def numpy_run() -> np.ndarray:
        return np.exp(-((a * b + c) ** 2) * half) + a

    candidates: dict[str, Callable[[], Any]] = {"numpy": numpy_run}
    try:
        import numexpr as ne

        candidates["numexpr"] = lambda: ne.evaluate("exp(-(a*b+c)**2*0.5)+a",
                                                    local_dict={"a": a, "b": b, "c": c})
    except ImportError:
        pass
    try:
        import dask.array as da

        chunks = max(n // 8, 1)
        da_a, da_b, da_c = (da.from_array(x, chunks=chunks) for x in (a, b, c))
        candidates["dask.array"] = lambda: (da.exp(-((da_a * da_b + da_c) ** 2) * half)
                                            + da_a).compute()
    except ImportError:
        pass
    def w2(x: hm.Tensor, y: hm.Tensor, z: hm.Tensor) -> hm.Tensor:
        return hm.exp(-((x * y + z) ** 2) * 0.5) + x

    for d in hm.devices():
        candidates[f"hermes {d.id}"] = _hermes(w2, [a, b, c], d.id)
    candidates["hermes auto"] = _hermes_auto(w2, [a, b, c])
    return Workload("W2", f"exp(-(a*b+c)**2*0.5)+a, float32 {n} elements", "GB/s",
                    16 * n / 1e9, "numpy", candidates, numpy_run(), 1e-5)


def w3_matmul(n: int) -> Workload:
    rng = np.random.default_rng(3)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    bias = rng.random(n, dtype=np.float32)

    def numpy_run() -> np.ndarray:
        return np.maximum(a @ b + bias, 0)

    candidates: dict[str, Callable[[], Any]] = {"numpy": numpy_run}
    def w3(x: hm.Tensor, y: hm.Tensor, z: hm.Tensor) -> hm.Tensor:
        return hm.relu(x @ y + z)

    for d in hm.devices():
        candidates[f"hermes {d.id}"] = _hermes(w3, [a, b, bias], d.id)
    candidates["hermes auto"] = _hermes_auto(w3, [a, b, bias])
    return Workload("W3", f"relu(a @ b + bias), float32 {n}x{n}", "GFLOP/s", 2 * n**3 / 1e9,
                    "numpy", candidates, numpy_run(), 1e-4)


def w4_row_sum(n: int) -> Workload:
    rng = np.random.default_rng(4)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))

    def numpy_run() -> np.ndarray:
        return ((a * b) ** 2).sum(axis=1)

    candidates: dict[str, Callable[[], Any]] = {"numpy": numpy_run}
    try:
        import numexpr as ne

        candidates["numexpr"] = lambda: ne.evaluate("sum((a*b)**2, axis=1)",
                                                    local_dict={"a": a, "b": b})
    except ImportError:
        pass
    def w4(x: hm.Tensor, y: hm.Tensor) -> hm.Tensor:
        return ((x * y) ** 2).sum(axis=1)

    for d in hm.devices():
        candidates[f"hermes {d.id}"] = _hermes(w4, [a, b], d.id)
    candidates["hermes auto"] = _hermes_auto(w4, [a, b])
    return Workload("W4", f"((a*b)**2).sum(axis=1), float32 {n}x{n}", "GB/s", 8 * n * n / 1e9,
                    "numpy", candidates, numpy_run(), 1e-4)


def scheduling_overhead(kernels: int = 200) -> float:
    """Seconds the runtime spends placing one kernel (estimates, policy, load), median."""
    from hermes_nb.compiler import optimize
    from hermes_nb.runtime.placement import place

    x = hm.asarray(np.ones((64, 64), np.float32))
    t = x
    for _ in range(kernels):  # a chain of matmuls: one kernel each, nothing fuses
        t = t @ x
    (root,) = optimize([t.node])
    place([root])
    times = []
    for _ in range(5):
        start = time.perf_counter()
        place([root])
        times.append(time.perf_counter() - start)
    return statistics.median(times) / (kernels + 1)


WORKLOADS = {"W1": w1_blur_sobel, "W2": w2_elementwise, "W3": w3_matmul, "W4": w4_row_sum}
FULL = {"W1": 4096, "W2": 2**25, "W3": 2048, "W4": 4096}
QUICK = {"W1": 256, "W2": 2**16, "W3": 128, "W4": 256}


def run(names: list[str], quick: bool, repeats: int) -> list[Result]:
    sizes = QUICK if quick else FULL
    results: list[Result] = []
    for name in names:
        wl = WORKLOADS[name](sizes[name])
        print(f"\n{wl.name}: {wl.description}  (median of {repeats} interleaved rounds; "
              f"ratio vs {wl.baseline})")
        rows = []
        working: dict[str, Callable[[], Any]] = {}
        for label, fn in wl.candidates.items():
            try:
                fn()  # warm-up: compiles, caches, page faults
                working[label] = fn
            except Exception as exc:  # a failing candidate is reported, not fatal
                print(f"  {label:<26} failed: {type(exc).__name__}: {exc}")
        # interleaved rounds: every candidate meets the same machine state (a device
        # that just ran leaves busy threads and caches behind for whoever runs next)
        times: dict[str, list[float]] = {label: [] for label in working}
        for _ in range(repeats):
            for label, fn in working.items():
                start = time.perf_counter()
                fn()
                times[label].append(time.perf_counter() - start)
        for label, fn in working.items():
            median = statistics.median(times[label])
            value = _value(fn)
            scale = max(float(np.max(np.abs(wl.reference))), 1e-30)
            error = float(np.max(np.abs(value - wl.reference))) / scale if value.size else 0.0
            rows.append(Result(wl.name, label, median, wl.amount / median, wl.unit,
                               max_error=error))
        base = next((r for r in rows if r.candidate == wl.baseline), rows[0])
        for r in rows:
            r.ratio = base.median_s / r.median_s
            flag = "" if r.max_error <= wl.tolerance else "  WRONG RESULT"
            print(f"  {r.candidate:<26} {r.median_s * 1e3:>10.2f} ms {r.throughput:>10.1f} "
                  f"{r.unit:<8} {r.ratio:>7.2f}x{flag}")
        results.extend(rows)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="e.g. W1,W2")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    repeats = args.repeats or (3 if args.quick else 5)
    print("devices:", ", ".join(f"{d.id} ({d.name})" for d in hm.devices()))
    with hm.options(progress=False):  # bars would interleave with the table
        results = run(names, args.quick, repeats)
    print(f"\nscheduling overhead: {scheduling_overhead() * 1e6:.1f} µs per kernel "
          "(estimates + policy + load snapshot; Dask's own per-task cost comes on top)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([asdict(r) for r in results], fh, indent=2)
    wrong = [r for r in results if r.max_error > 1e-3]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
