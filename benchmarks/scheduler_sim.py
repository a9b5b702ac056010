"""Simulated scheduling: makespan of each policy against a lower bound, and policy overhead.

    python -m benchmarks.scheduler_sim            # full DAG set
    python -m benchmarks.scheduler_sim --quick    # small DAGs (CI, tests)
    python -m benchmarks.scheduler_sim --json out.json --check

For every DAG × device mix × policy, one scheduler first runs the DAG with 2% of
runs ten times slower (it calibrates, visibly, and must not be poisoned by the
outliers), then runs it again with 3% jitter; the second run is reported:
makespan, makespan / lower bound, and the policy code's time per kernel
(``decide`` + ``record``, thread CPU time, so other processes do not inflate it;
the wall-clock mean is printed beside it). The lower bound is max(critical path
at each task's fastest device, LP area bound), transfers ignored — see
``hermes_nb.scheduler.bound``. The simulated devices copy on a DMA engine that
overlaps compute (``overlap_copies=True``); ``--serial-copies`` models devices that
copy before computing, as the runtime's worker threads do today.

Figures checked (``--check`` exits 1 when one is missed): ``auto`` ≤ 1.25× the
lower bound on every row; ``auto`` ≥ 1.5× better than ``round_robin`` on every
heterogeneous mix; policy time ≤ 100 µs per kernel (CPU time of decide + record
summed over all rows / kernels simulated; the worst single row is printed too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass

from hermes_nb.scheduler import Scheduler, kernel_info
from hermes_nb.scheduler.sim import (
    CPU,
    DAG,
    GPU,
    IGPU,
    SimDevice,
    cholesky_dag,
    image_pipelines,
    lower_bound,
    mix,
    random_layered_dag,
    simulate,
)

POLICIES = ("auto", "fastest", "round_robin", "cpu")
MIXES: dict[str, tuple[tuple[SimDevice, ...], bool]] = {  # name -> (devices, heterogeneous)
    "cpu+gpu": (mix(CPU, GPU), True),
    "cpu+igpu+gpu": (mix(CPU, IGPU, GPU), True),
    "cpu+2gpu": (mix(CPU, GPU, GPU), True),
    "4cpu": (mix(CPU, CPU, CPU, CPU), False),
}
AUTO_VS_BOUND = 1.25
AUTO_VS_ROUND_ROBIN = 1.5
OVERHEAD_US = 100.0


@dataclass
class Row:
    dag: str
    tasks: int
    mix: str
    heterogeneous: bool
    policy: str
    makespan_s: float
    bound_s: float
    ratio: float
    calibration_makespan_s: float
    calibrating_decisions: int
    overhead_us: float
    wall_us: float


def dags(quick: bool) -> list[DAG]:
    if quick:
        return [cholesky_dag(10), random_layered_dag(8, 10, seed=2), image_pipelines(32)]
    return [cholesky_dag(10), cholesky_dag(16), random_layered_dag(8, 10, seed=2),
            random_layered_dag(12, 16, seed=3), random_layered_dag(16, 24, seed=4),
            image_pipelines(32), image_pipelines(96)]


def run(quick: bool, serial_copies: bool = False) -> list[Row]:
    rows = []
    for dag in dags(quick):
        for name, (devices, hetero) in MIXES.items():
            bound = lower_bound(dag, devices).value
            for policy in POLICIES:
                sched = Scheduler(None, overlap_copies=not serial_copies)
                first = simulate(dag, devices, policy, scheduler=sched, outliers=0.02, seed=1)
                res = simulate(dag, devices, policy, scheduler=sched, seed=2)
                rows.append(Row(dag.name, len(dag), name, hetero, policy, res.makespan, bound,
                                res.makespan / bound, first.makespan, first.calibrating, res.cpu_us,
                                res.overhead_us))
    return rows


def check(rows: list[Row]) -> list[str]:
    """The figures missed, as lines (empty when all are met)."""
    missed = []
    by_key = {(r.dag, r.mix, r.policy): r for r in rows}
    for r in rows:
        if r.policy == "auto" and r.ratio > AUTO_VS_BOUND:
            missed.append(f"{r.dag} on {r.mix}: auto {r.ratio:.2f}× the bound (> {AUTO_VS_BOUND})")
        if r.policy == "auto" and r.heterogeneous:
            rr = by_key[(r.dag, r.mix, "round_robin")]
            if rr.makespan_s < AUTO_VS_ROUND_ROBIN * r.makespan_s:
                gain = rr.makespan_s / r.makespan_s
                missed.append(f"{r.dag} on {r.mix}: round_robin only {gain:.2f}× slower")
    overhead = mean_overhead_us(rows)
    if overhead > OVERHEAD_US:
        missed.append(f"policy time {overhead:.0f} µs per kernel (> {OVERHEAD_US:.0f})")
    return missed


def mean_overhead_us(rows: list[Row]) -> float:
    """Policy CPU time per kernel over the whole run (total time / total kernels)."""
    return sum(r.overhead_us * r.tasks for r in rows) / sum(r.tasks for r in rows)


def micro() -> dict[str, float]:
    """Microseconds per call outside the simulator: describing a kernel, one 3-device decision."""
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        k = kernel_info("matmul", (2048, 2048), "float64", [(2048, 2048), (2048, 2048)], ["float64"] * 2)
    describe = (time.perf_counter() - t0) / n * 1e6
    sched = Scheduler(None)
    devices = ["cpu:0", "opencl:0", "cuda:0"]
    for d, s in zip(devices, (0.2, 0.05, 0.01)):
        for _ in range(3):
            sched.observe(k, d, s)
    t0 = time.perf_counter()
    for _ in range(n):
        sched.decide(k, devices, policy="auto", wait_s={"cuda:0": 0.02})
    return {"kernel_info_us": describe, "decide_us": (time.perf_counter() - t0) / n * 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small DAGs only")
    parser.add_argument("--serial-copies", action="store_true", help="devices copy before computing")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--check", action="store_true", help="exit 1 when a figure is missed")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    rows = run(args.quick, args.serial_copies)
    print(f"{'dag':<22} {'tasks':>5} {'mix':<13} {'policy':<12} {'makespan':>11} {'/bound':>7} "
          f"{'calib. run':>11} {'µs/kernel':>9} {'(wall)':>7}")
    for r in rows:
        print(f"{r.dag:<22} {r.tasks:>5} {r.mix:<13} {r.policy:<12} {r.makespan_s * 1e3:>9.1f}ms "
              f"{r.ratio:>7.2f} {r.calibration_makespan_s * 1e3:>9.1f}ms {r.overhead_us:>9.1f} "
              f"{r.wall_us:>7.1f}")
    autos = [r for r in rows if r.policy == "auto"]
    worst = max(autos, key=lambda r: r.ratio)
    by_key = {(r.dag, r.mix, r.policy): r for r in rows}
    gains = [by_key[(r.dag, r.mix, "round_robin")].makespan_s / r.makespan_s
             for r in autos if r.heterogeneous]
    print(f"\nauto / lower bound: worst {worst.ratio:.2f} ({worst.dag} on {worst.mix}), "
          f"mean {sum(r.ratio for r in autos) / len(autos):.2f}")
    print(f"round_robin / auto on heterogeneous mixes: min {min(gains):.2f}×")
    print(f"policy time per kernel: {mean_overhead_us(rows):.1f} µs over all rows "
          f"(worst row {max(r.overhead_us for r in rows):.1f} µs)")
    m = micro()
    print(f"micro: kernel_info {m['kernel_info_us']:.1f} µs, decide (3 devices) {m['decide_us']:.1f} µs")
    missed = check(rows)
    print("figures: all met" if not missed else "figures MISSED:\n  " + "\n  ".join(missed))
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": [asdict(r) for r in rows], "micro": m, "missed": missed,
                       "overhead_us": mean_overhead_us(rows)}, f, indent=1)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
