"""What the Hermes log handler costs a warm cell: a 5-kernel graph computed with the
handler attached and detached, rounds interleaved, medians compared.

    python -m benchmarks.log_overhead [--size 1024] [--repeats 50] [--device cpu:0]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _cell(hm, image):
    x = hm.asarray(image)
    a = hm.exp(x * 0.5) + 1.0
    peak = a.max()
    b = hm.sin(a / peak) * 3.0
    columns = b.sum(axis=0)
    rows = b.max(axis=1)
    return hm.sqrt(hm.abs(columns)) * 2.0, rows * 0.5, b


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--device", default="cpu:0")
    args = parser.parse_args()

    import hermes_nb as hm
    from hermes_nb import logrecords
    from hermes_nb.runtime import last_profile

    image = np.random.default_rng(0).random((args.size, args.size), dtype=np.float32)

    def run() -> float:
        start = time.perf_counter()
        with hm.device(args.device):
            outs = _cell(hm, image)
        hm.compute(*outs)
        return time.perf_counter() - start

    for _ in range(5):  # compile and warm up
        run()
    kernels = len(last_profile().kernels)
    times: dict[str, list[float]] = {"with": [], "without": []}
    for i in range(args.repeats):  # interleaved, each order half the time
        for attached in ((True, False) if i % 2 else (False, True)):
            (logrecords.install if attached else logrecords.uninstall)()
            times["with" if attached else "without"].append(run())
    logrecords.install()
    per_run = len(last_profile().log)
    start = time.perf_counter()
    for _ in range(10000):  # a kept DEBUG record (what a compile or a build log costs)
        logrecords.emit(10, "built fused_elementwise", device="cpu:0", kernel="k",
                        category="compile")
    per_record = (time.perf_counter() - start) / 10000
    start = time.perf_counter()
    for i in range(10000):  # a run's own buffer, opened and closed
        logrecords.open_run(-1 - i)
        logrecords.close_run(-1 - i)
    per_run_buffer = (time.perf_counter() - start) / 10000
    on, off = statistics.median(times["with"]), statistics.median(times["without"])
    print(f"{kernels} kernels on {args.device}, {args.size}², medians of {args.repeats}: "
          f"with the log handler {on * 1e3:.3f} ms, without {off * 1e3:.3f} ms, "
          f"overhead {(on - off) * 1e3:+.3f} ms ({(on / off - 1) * 100:+.2f}%); "
          f"{per_run} record(s) per warm run, {per_record * 1e6:.1f} µs per kept record, "
          f"{per_run_buffer * 1e6:.2f} µs per run for its buffer")


if __name__ == "__main__":
    main()
