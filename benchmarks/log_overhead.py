"""What collecting the Hermes log costs a compiled cell: a 5-kernel graph computed with log
collection on (the handler attached, each run's record buffer opened and closed) and off
(no handler, no run buffers), in one process, rounds interleaved and the order turned each
round.

    python -m benchmarks.log_overhead [--size 1024] [--rounds 400] [--device cpu:0]

The overhead is the median over rounds of (on - off) in wall time, process CPU time and
the calling thread's CPU time, as a ratio to the median "off" run on the same clock, with a
95% bootstrap interval of that median; then what one kept record and one run's buffer cost.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: the clocks each run is timed on, in the order a timing holds them
CLOCKS = ("wall", "cpu", "thread")


def _cell(hm: Any, image: np.ndarray) -> tuple[Any, ...]:
    x = hm.asarray(image)
    a = hm.exp(x * 0.5) + 1.0
    peak = a.max()
    b = hm.sin(a / peak) * 3.0
    columns = b.sum(axis=0)
    rows = b.max(axis=1)
    return hm.sqrt(hm.abs(columns)) * 2.0, rows * 0.5, b


@contextmanager
def collection(on: bool) -> Iterator[None]:
    """Log collection on (as Hermes runs) or off: no handler and no per-run buffers."""
    from hermes_nb import logrecords

    if on:
        logrecords.install()
        yield
        return
    opened, closed = logrecords.open_run, logrecords.close_run
    logrecords.uninstall()
    logrecords.open_run = lambda run_id: None  # type: ignore[assignment]
    logrecords.close_run = lambda run_id: logrecords.Records()  # type: ignore[assignment]
    try:
        yield
    finally:
        logrecords.open_run, logrecords.close_run = opened, closed
        logrecords.install()


def _timed(run: Callable[[], None]) -> tuple[float, float, float]:
    wall, cpu, thread = time.perf_counter(), time.process_time(), time.thread_time()
    run()
    thread, cpu = time.thread_time() - thread, time.process_time() - cpu
    return time.perf_counter() - wall, cpu, thread


def _interval(diffs: list[float], resamples: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval of the median of ``diffs``."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(diffs, k=len(diffs)))
                     for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def measure(size: int, rounds: int, device: str) -> dict[str, Any]:
    import hermes_nb as hm
    from hermes_nb import logrecords
    from hermes_nb.runtime import last_profile

    image = np.random.default_rng(0).random((size, size), dtype=np.float32)

    def run() -> None:
        with hm.device(device), hm.options(progress=False):
            outs = _cell(hm, image)
            hm.compute(*outs)

    for _ in range(5):  # compile and calibrate
        run()
    kernels = len(last_profile().kernels)
    records = len(last_profile().log)
    times: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    for i in range(rounds):
        for on in ((True, False) if i % 2 else (False, True)):
            with collection(on):
                times[on].append(_timed(run))
    result: dict[str, Any] = {"kernels": kernels, "records_per_run": records, "rounds": rounds,
                              "device": device, "size": size}
    for c, clock in enumerate(CLOCKS):
        off = statistics.median(t[c] for t in times[False])
        diffs = [a[c] - b[c] for a, b in zip(times[True], times[False])]
        low, high = _interval(diffs)
        result[clock] = {"off_ms": off * 1e3, "added_us": statistics.median(diffs) * 1e6,
                         "ratio": 1 + statistics.median(diffs) / off,
                         "interval_us": (low * 1e6, high * 1e6)}
    result["in_run_us"] = _in_run_cost(run, rounds)
    logrecords.install()
    result["per_record_us"] = _per_call(lambda i: logrecords.emit(
        10, "built fused_elementwise", device="cpu:0", kernel="k", category="compile"))
    result["per_run_buffer_us"] = _per_call(
        lambda i: (logrecords.open_run(-1 - i), logrecords.close_run(-1 - i)))
    return result


def _in_run_cost(run: Callable[[], None], rounds: int) -> float:
    """Microseconds per run that opening and closing its log buffer took inside the runs
    (after a run's work the code is colder than in a loop), less the timer's own cost."""
    from hermes_nb import logrecords

    opened, closed = logrecords.open_run, logrecords.close_run
    spent: list[float] = []
    clock = time.perf_counter

    def timed_open(run_id: int) -> None:
        start = clock()
        opened(run_id)
        spent.append(clock() - start)

    def timed_close(run_id: int) -> Any:
        start = clock()
        found = closed(run_id)
        spent.append(clock() - start)
        return found

    logrecords.open_run, logrecords.close_run = timed_open, timed_close  # type: ignore
    try:
        for _ in range(max(rounds // 4, 10)):
            run()
    finally:
        logrecords.open_run, logrecords.close_run = opened, closed
    start = clock()
    for _ in range(1000):
        clock()
    timer = (clock() - start) / 1000
    per_call = statistics.median(spent) - timer
    return max(per_call, 0.0) * 2 * 1e6


def _per_call(fn: Callable[[int], Any], n: int = 20000) -> float:
    """Microseconds per call of ``fn``, the best of three batches."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for i in range(n):
            fn(i)
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=400, help="interleaved on/off pairs")
    parser.add_argument("--device", default="cpu:0")
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args(argv)

    from benchmarks import machine

    facts = machine.facts(bandwidth=False)
    print("\n".join(machine.describe(facts)))
    r = measure(args.size, args.rounds, args.device)
    print(f"log collection on a compiled cell: {r['kernels']} kernels on {args.device}, "
          f"{args.size}², {r['records_per_run']} record(s) per warm run, "
          f"medians of {args.rounds} interleaved on/off rounds:")
    for clock, what in (("wall", "wall time"), ("cpu", "process CPU"), ("thread", "thread CPU")):
        f = r[clock]
        low, high = f["interval_us"]
        print(f"  {what:<12} off {f['off_ms']:8.3f} ms, on adds {f['added_us']:+7.1f} µs "
              f"(95% interval {low:+.1f} to {high:+.1f} µs): ratio {f['ratio']:.4f}")
    share = 100 * r["in_run_us"] / (r["cpu"]["off_ms"] * 1e3)
    print(f"  a run's log buffer, timed inside the runs: {r['in_run_us']:.2f} µs per run "
          f"({share:.4f}% of the run's process CPU); in a loop {r['per_run_buffer_us']:.2f} µs; "
          f"a kept record {r['per_record_us']:.2f} µs")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": facts, "log": r}, fh, indent=1)


if __name__ == "__main__":
    main()
