"""Run the workloads on every Hermes device and on the libraries a user would pick
instead, in one process, and print medians and ratios to the baseline.

    python -m benchmarks.run            # full sizes (W1 4096², W2 2²⁵, W3 2048², W4 4096²)
    python -m benchmarks.run --quick    # small sizes, a smoke run (CI)
    python -m benchmarks.run --json results.json --workloads W1,W2

Two columns per Hermes candidate (each device, and "auto", placed by the scheduler):

* in→out, the headline: what a notebook cell gets. The timing starts from host NumPy
  arrays (``hm.asarray``), builds the expression and ends with a NumPy array
  (``.numpy()``), copies included. The libraries (NumPy, OpenCV, ...) are always this.
* resident: the inputs are already on the device and the output stays there; the timing
  covers one ``compute()`` and the device's synchronisation.

Ratios are the baseline's in→out median over the candidate's; medians are of interleaved
rounds. Memory-bound workloads (W2, W4) also report their fraction of the memory limit:
the time their essential bytes (inputs read once, output written once) take at this
machine's STREAM-triad bandwidth, over the measured time. The triad counts 12 B per element
although its ordinary stores also read the line they write, so a kernel with streaming
stores can pass 100%; on a shared machine, so can noise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

import hermes_nb as hm
from benchmarks import machine
from hermes_nb.backends import get_device

Build = Callable[..., hm.Tensor]
Run = Callable[[], Any]


@dataclass
class Result:
    workload: str
    candidate: str
    in_out_median_s: float
    in_out_ratio: float
    resident_median_s: float | None
    resident_ratio: float | None
    max_error: float
    throughput: float  # in→out, in ``unit``
    unit: str
    memory_limit_in_out: float | None = None  # fraction of the triad-bandwidth limit
    memory_limit_resident: float | None = None


@dataclass
class Workload:
    name: str
    description: str
    unit: str
    amount: float  # units of work per run, for throughput (pixels, bytes, flops)
    arrays: list[np.ndarray]
    build: Build  # the Hermes expression from one tensor per array
    libraries: dict[str, Callable[[], np.ndarray]]  # NumPy in, NumPy out by nature
    baseline: str
    tolerance: float
    memory_bound: bool = False


@dataclass
class Candidate:
    label: str
    in_out: Run
    resident: Run | None = None
    resident_value: Callable[[], np.ndarray] | None = None
    warmups: int = 1  # "auto" needs calibration runs before it settles
    times: dict[str, list[float]] = field(default_factory=dict)


# -- Hermes candidates ---------------------------------------------------------------------

def _in_out(build: Build, arrays: list[np.ndarray], device: str | None) -> Run:
    """NumPy arrays in, a NumPy array out, on ``device`` (None: the scheduler places it)."""
    def run() -> np.ndarray:
        with hm.device(device) if device else hm.policy("auto"):
            return build(*(hm.asarray(a) for a in arrays)).numpy()

    return run


def _resident(build: Build, arrays: list[np.ndarray], device: str) -> tuple[Run, Run]:
    """One ``compute()`` of ``build`` with inputs resident on ``device``, synchronised."""
    with hm.device(device):
        inputs = hm.compute(*(hm.asarray(a) for a in arrays))
        expr = build(*inputs)
    dev = get_device(device)

    def run() -> Any:
        (out,) = hm.compute(expr)
        dev.synchronize()
        return out

    return run, expr.numpy


def _resident_auto(build: Build, arrays: list[np.ndarray]) -> tuple[Run, Run]:
    """``build`` placed by the scheduler, inputs computed where it put them."""
    with hm.policy("auto"):
        inputs = hm.compute(*(hm.asarray(a) for a in arrays))
        expr = build(*inputs)

    def run() -> Any:
        with hm.policy("auto"):
            (out,) = hm.compute(expr)
        get_device(out.device).synchronize()
        return out

    return run, expr.numpy


def hermes_candidates(wl: Workload) -> list[Candidate]:
    found = []
    for d in hm.devices():
        resident, value = _resident(wl.build, wl.arrays, d.id)
        found.append(Candidate(f"hermes {d.id}", _in_out(wl.build, wl.arrays, d.id),
                               resident, value))
    resident, value = _resident_auto(wl.build, wl.arrays)
    calibration = 3 * len(hm.devices()) + 1  # the scheduler times each device a few times
    found.append(Candidate("hermes auto", _in_out(wl.build, wl.arrays, None), resident, value,
                           warmups=calibration))
    return found


# -- workloads -----------------------------------------------------------------------------

def _opencv_blur_sobel(img: np.ndarray) -> Callable[[], np.ndarray] | None:
    try:
        import cv2
    except ImportError:
        return None

    def run() -> np.ndarray:
        b = cv2.GaussianBlur(img, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
        gx = cv2.Sobel(b, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        gy = cv2.Sobel(b, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101)
        return cv2.magnitude(gx, gy)

    return run


def _scipy_blur_sobel(g: np.ndarray, kx: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    import scipy.ndimage as ndi

    def run(block: np.ndarray) -> np.ndarray:
        b = ndi.correlate1d(ndi.correlate1d(block, g, axis=0, mode="mirror"), g, axis=1,
                            mode="mirror")
        return np.hypot(ndi.correlate(b, kx, mode="mirror"), ndi.correlate(b, kx.T, mode="mirror"))

    return run


def w1_blur_sobel(n: int) -> Workload:
    img = np.random.default_rng(1).random((n, n), dtype=np.float32)
    g = hm.image.gaussian_kernel(5).astype(np.float32)
    kx = np.outer([1, 2, 1], [-1, 0, 1]).astype(np.float32)
    scipy_run = _scipy_blur_sobel(g, kx)
    libraries: dict[str, Callable[[], np.ndarray]] = {}
    opencv = _opencv_blur_sobel(img)
    if opencv is not None:
        libraries["opencv"] = opencv
    libraries["scipy.ndimage"] = lambda: scipy_run(img)
    try:
        import dask.array as da

        darr = da.from_array(img, chunks=(n // 2, n))
        libraries["dask.array map_overlap"] = lambda: darr.map_overlap(
            scipy_run, depth=3, boundary="none").compute()
    except ImportError:
        pass
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
    return Workload("W1", f"gaussian 5x5 + sobel magnitude, float32 {n}x{n}", "Mpix/s",
                    n * n / 1e6, [img], pipeline, libraries, next(iter(libraries)), 1e-4)


def w2_elementwise(n: int) -> Workload:
    rng = np.random.default_rng(2)
    a, b, c = (rng.random(n, dtype=np.float32) for _ in range(3))
    half = np.float32(0.5)
    libraries: dict[str, Callable[[], np.ndarray]] = {
        "numpy": lambda: np.exp(-((a * b + c) ** 2) * half) + a}
    try:
        import numexpr as ne

        libraries["numexpr"] = lambda: ne.evaluate("exp(-(a*b+c)**2*0.5)+a",
                                                   local_dict={"a": a, "b": b, "c": c})
    except ImportError:
        pass
    try:
        import dask.array as da

        da_a, da_b, da_c = (da.from_array(x, chunks=max(n // 8, 1)) for x in (a, b, c))
        libraries["dask.array"] = lambda: (da.exp(-((da_a * da_b + da_c) ** 2) * half)
                                           + da_a).compute()
    except ImportError:
        pass

    def w2(x: hm.Tensor, y: hm.Tensor, z: hm.Tensor) -> hm.Tensor:
        return hm.exp(-((x * y + z) ** 2) * 0.5) + x

    return Workload("W2", f"exp(-(a*b+c)**2*0.5)+a, float32 {n} elements", "GB/s",
                    16 * n / 1e9, [a, b, c], w2, libraries, "numpy", 1e-5, memory_bound=True)


def w3_matmul(n: int) -> Workload:
    rng = np.random.default_rng(3)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    bias = rng.random(n, dtype=np.float32)

    def w3(x: hm.Tensor, y: hm.Tensor, z: hm.Tensor) -> hm.Tensor:
        return hm.relu(x @ y + z)

    return Workload("W3", f"relu(a @ b + bias), float32 {n}x{n}", "GFLOP/s", 2 * n**3 / 1e9,
                    [a, b, bias], w3, {"numpy": lambda: np.maximum(a @ b + bias, 0)}, "numpy",
                    1e-4)


def w4_row_sum(n: int) -> Workload:
    rng = np.random.default_rng(4)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    libraries: dict[str, Callable[[], np.ndarray]] = {
        "numpy": lambda: ((a * b) ** 2).sum(axis=1)}
    try:
        import numexpr as ne

        libraries["numexpr"] = lambda: ne.evaluate("sum((a*b)**2, axis=1)",
                                                   local_dict={"a": a, "b": b})
    except ImportError:
        pass

    def w4(x: hm.Tensor, y: hm.Tensor) -> hm.Tensor:
        return ((x * y) ** 2).sum(axis=1)

    return Workload("W4", f"((a*b)**2).sum(axis=1), float32 {n}x{n}", "GB/s", 8 * n * n / 1e9,
                    [a, b], w4, libraries, "numpy", 1e-4, memory_bound=True)


WORKLOADS = {"W1": w1_blur_sobel, "W2": w2_elementwise, "W3": w3_matmul, "W4": w4_row_sum}
FULL = {"W1": 4096, "W2": 2**25, "W3": 2048, "W4": 4096}
QUICK = {"W1": 256, "W2": 2**16, "W3": 128, "W4": 256}


# -- measuring -----------------------------------------------------------------------------

def candidates_for(wl: Workload) -> list[Candidate]:
    libraries = [Candidate(label, fn) for label, fn in wl.libraries.items()]
    return libraries + hermes_candidates(wl)


def _modes(c: Candidate) -> dict[str, Run]:
    return {"in_out": c.in_out} | ({"resident": c.resident} if c.resident else {})


def warm_up(candidates: list[Candidate]) -> list[Candidate]:
    """Run each candidate (compiles, caches, page faults, calibration); drop those that fail."""
    working = []
    for c in candidates:
        try:
            for run in _modes(c).values():
                for _ in range(c.warmups):
                    run()
            working.append(c)
        except Exception as exc:  # a failing candidate is reported, not fatal
            print(f"  {c.label:<24} failed: {type(exc).__name__}: {exc}")
    return working


def time_rounds(candidates: list[Candidate], repeats: int) -> None:
    """Interleaved rounds: every candidate meets the same machine state (a device that just
    ran leaves busy threads and caches behind for whoever runs next)."""
    for c in candidates:
        c.times = {mode: [] for mode in _modes(c)}
    for _ in range(repeats):
        for c in candidates:
            for mode, run in _modes(c).items():
                start = time.perf_counter()
                run()
                c.times[mode].append(time.perf_counter() - start)


def relative_error(value: np.ndarray, reference: np.ndarray) -> float:
    if not value.size:
        return 0.0
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    return float(np.max(np.abs(np.asarray(value) - reference))) / scale


def max_error(c: Candidate, reference: np.ndarray) -> float:
    """The worse of the in→out and the resident result, against the baseline's result."""
    values = [c.in_out()] + ([c.resident_value()] if c.resident_value else [])
    return max(relative_error(np.asarray(v), reference) for v in values)


def essential_bytes(wl: Workload, reference: np.ndarray) -> float:
    """Every input read once, the output written once."""
    return float(sum(a.nbytes for a in wl.arrays) + reference.nbytes)


def result_of(wl: Workload, c: Candidate, base_s: float, reference: np.ndarray,
              limit_s: float | None) -> Result:
    in_out = statistics.median(c.times["in_out"])
    resident = statistics.median(c.times["resident"]) if "resident" in c.times else None
    return Result(
        wl.name, c.label, in_out, base_s / in_out, resident,
        base_s / resident if resident else None, max_error(c, reference), wl.amount / in_out,
        wl.unit,
        memory_limit_in_out=limit_s / in_out if limit_s else None,
        memory_limit_resident=limit_s / resident if limit_s and resident else None)


# -- printing ------------------------------------------------------------------------------

def _cell(seconds: float | None, ratio: float | None, limit: float | None,
          memory_bound: bool) -> str:
    blank = f"{'-':>10} {'-':>7}"
    text = blank if seconds is None else f"{seconds * 1e3:>10.2f} {ratio:>6.2f}x"
    if memory_bound:
        text += f" {limit:>5.0%}" if limit is not None else f" {'-':>5}"
    return text


def print_header(wl: Workload, repeats: int, limit_s: float | None, bandwidth: float) -> None:
    print(f"\n{wl.name}: {wl.description}")
    note = f"baseline {wl.baseline}; medians of {repeats} interleaved rounds"
    if limit_s is not None:
        note += (f"; memory limit {limit_s * 1e3:.2f} ms (essential bytes at "
                 f"{bandwidth:.1f} GB/s triad)")
    print(f"  {note}")
    limit = " limit" if wl.memory_bound else ""
    print(f"  {'candidate':<24} {'in→out ms':>10} {'ratio':>7}{limit} │"
          f" {'resident ms':>10} {'ratio':>7}{limit} │ max error")


def print_row(wl: Workload, r: Result) -> None:
    flag = "  WRONG RESULT" if r.max_error > wl.tolerance else ""
    in_out = _cell(r.in_out_median_s, r.in_out_ratio, r.memory_limit_in_out, wl.memory_bound)
    resident = _cell(r.resident_median_s, r.resident_ratio, r.memory_limit_resident,
                     wl.memory_bound)
    print(f"  {r.candidate:<24} {in_out} │ {resident} │ {r.max_error:.1e}{flag}")


def run_workload(wl: Workload, repeats: int, bandwidth: float) -> list[Result]:
    reference = np.asarray(wl.libraries[wl.baseline]())
    limit_s = essential_bytes(wl, reference) / (bandwidth * 1e9) if wl.memory_bound else None
    print_header(wl, repeats, limit_s, bandwidth)
    working = warm_up(candidates_for(wl))
    time_rounds(working, repeats)
    base = next(c for c in working if c.label == wl.baseline)
    base_s = statistics.median(base.times["in_out"])
    rows = [result_of(wl, c, base_s, reference, limit_s) for c in working]
    for r in rows:
        print_row(wl, r)
    return rows


def run(names: list[str], quick: bool, repeats: int, bandwidth: float) -> list[Result]:
    sizes = QUICK if quick else FULL
    results: list[Result] = []
    for name in names:
        results.extend(run_workload(WORKLOADS[name](sizes[name]), repeats, bandwidth))
    return results


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="e.g. W1,W2")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--json", help="write the machine facts and results to this file")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    repeats = args.repeats or (3 if args.quick else 5)
    facts = machine.facts()
    print("\n".join(machine.describe(facts)))
    with hm.options(progress=False):  # bars would interleave with the table
        results = run(names, args.quick, repeats, facts["triad"]["gb_per_s"])
    overhead = scheduling_overhead()
    print(f"\nscheduling overhead: {overhead * 1e6:.1f} µs per kernel "
          "(estimates + policy + load snapshot; Dask's own per-task cost comes on top)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": facts, "scheduling_overhead_s": overhead,
                       "results": [asdict(r) for r in results]}, fh, indent=2)
    wrong = [r for r in results if r.max_error > 1e-3]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
