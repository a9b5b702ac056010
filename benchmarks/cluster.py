"""Hermes on a dask.distributed cluster, against Hermes alone and plain Dask on the same cluster.

    python -m benchmarks.cluster            # full sizes
    python -m benchmarks.cluster --quick    # small sizes, a smoke run (CI)
    python -m benchmarks.cluster --json results.json

Three figures, each a ratio of medians of interleaved rounds measured in this one run:

* (a) blur + Sobel magnitude of 16 float32 1024² images (``benchmarks.run``'s W1 pipeline),
  NumPy in, NumPy out: Hermes on a 2-worker process ``LocalCluster`` over Hermes without a
  cluster (wanted ≤ 2×), and ``dask.delayed`` + OpenCV on the same cluster over Hermes there
  (wanted > 1: Hermes faster). "dask task, result home" is a plain task handing back an
  array of the result's size that its worker holds, gathered straight from the worker:
  what bringing the result home costs any Dask code, with no computing. "kept" rows keep
  the results where they were computed (``hm.persist``: on the workers; without a cluster
  it is ``compute``), so no result travels back.
* (b) one 256 MiB input, ``(x * 2 + 1).sum()``: the scheduler's peak memory growth during
  the run (wanted < 16 MiB; the scheduler runs in its own process, read with
  ``client.run_on_scheduler`` and psutil), and the time over ``client.scatter`` + one
  submitted task doing the same (wanted ≤ 1.3×). Each round changes the input, so each
  round sends it.
* (c) the cost of one small kernel on the cluster over one plain ``client.submit`` task
  (wanted ≤ 1.2×).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import hermes_nb as hm
from benchmarks import machine

FULL = {"images": 16, "side": 1024, "big_mib": 256, "repeats": 5, "small_rounds": 40}
QUICK = {"images": 4, "side": 128, "big_mib": 8, "repeats": 2, "small_rounds": 5}


def median_rounds(runs: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median seconds of each run, the runs interleaved round by round, so every run meets
    the same machine state; after warm-ups enough for Hermes's calibration (it times each
    device a few times before it settles on one)."""
    for _ in range(3 * len(hm.devices()) + 1):
        for run in runs.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def local_cluster() -> Any:
    import distributed

    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    host="127.0.0.1", dashboard_address="127.0.0.1:0")


# -- (a) blur + Sobel ------------------------------------------------------------------------

def _cv_blur_sobel(img: np.ndarray) -> np.ndarray:
    import cv2

    b = cv2.GaussianBlur(img, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
    gx = cv2.Sobel(b, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101)
    gy = cv2.Sobel(b, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101)
    return cv2.magnitude(gx, gy)


def blur_sobel(sizes: dict[str, int]) -> dict[str, Any]:
    import dask

    images = np.random.default_rng(1).random((sizes["images"], sizes["side"], sizes["side"]),
                                             dtype=np.float32)
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())

    def hermes() -> np.ndarray:
        return pipeline(hm.asarray(images)).numpy()

    def hermes_kept() -> Any:  # the results stay where they were computed
        return hm.persist(pipeline(hm.asarray(images)))

    def delayed_cv() -> list[np.ndarray]:
        return list(dask.compute(*[dask.delayed(_cv_blur_sobel)(i) for i in images]))

    reference = np.stack([_cv_blur_sobel(i) for i in images])
    local = median_rounds({"hermes local": hermes, "hermes local, kept": hermes_kept},
                          sizes["repeats"])
    with local_cluster() as cluster, _client(cluster) as client:
        # what any result of this size costs to come home: a plain task handing back an
        # array its worker already holds, gathered straight from it as Hermes gathers
        held = client.scatter(reference)
        (holder,) = client.who_has(held)[held.key]

        def result_home() -> np.ndarray:
            task = client.submit(_same, held, pure=False, workers=[holder])
            return client.gather(task, direct=True)

        on_cluster = median_rounds({"hermes cluster": hermes, "hermes cluster, kept": hermes_kept,
                                    "delayed+opencv cluster": delayed_cv,
                                    "dask task, result home": result_home}, sizes["repeats"])
        error = float(np.max(np.abs(hermes() - reference)) / np.max(np.abs(reference)))
    times = local | on_cluster
    return {"times_s": times, "max_error": error,
            "cluster_over_local": times["hermes cluster"] / times["hermes local"],
            "result_home_over_local": times["dask task, result home"] / times["hermes local"],
            "kept_cluster_over_local": times["hermes cluster, kept"] / times["hermes local, kept"],
            "delayed_cv_over_hermes": times["delayed+opencv cluster"] / times["hermes cluster"]}


def _same(value: np.ndarray) -> np.ndarray:
    return value


@contextlib.contextmanager
def _client(cluster_or_address: Any) -> Iterator[Any]:
    import distributed

    with distributed.Client(cluster_or_address) as client, warnings.catch_warnings():
        # delayed + OpenCV embeds its images in the graph, as a Dask user's code would
        warnings.filterwarnings("ignore", message="Sending large graph")
        yield client


# -- (b) a large input -----------------------------------------------------------------------

@contextlib.contextmanager
def separate_scheduler() -> Iterator[str]:
    """A scheduler in its own process (LocalCluster's runs in this one, where the client's
    memory would count) and two one-thread worker processes, all on 127.0.0.1."""
    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "scheduler.json")
        common = ["--no-dashboard", "--host", "127.0.0.1"]
        scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                      "--port", "0", "--scheduler-file", file, *common],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        workers = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                    "--nworkers", "2", "--nthreads", "1", "--scheduler-file",
                                    file, *common],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                if os.path.exists(file):
                    break
                time.sleep(0.05)
            yield file
        finally:
            for process in (workers, scheduler):
                process.terminate()
                process.wait(timeout=30)


def _start_sampler(dask_scheduler: Any) -> int:
    """On the scheduler: sample its resident memory every 2 ms, keeping the peak."""
    import psutil

    process = psutil.Process()
    state = dask_scheduler.hermes_bench_memory = {"peak": process.memory_info().rss, "on": True}

    def sample() -> None:
        while state["on"]:
            state["peak"] = max(state["peak"], process.memory_info().rss)
            time.sleep(0.002)

    threading.Thread(target=sample, daemon=True).start()
    return state["peak"]


def _stop_sampler(dask_scheduler: Any) -> int:
    state = dask_scheduler.hermes_bench_memory
    state["on"] = False
    return state["peak"]


def _scaled_sum(a: np.ndarray) -> float:
    return float((a.astype(np.float64) * 2 + 1).sum())


def large_input(sizes: dict[str, int]) -> dict[str, Any]:
    import distributed

    x = np.random.default_rng(2).random(sizes["big_mib"] * (1 << 18), dtype=np.float32)
    step = [0]

    def changed() -> np.ndarray:  # new contents each round: nothing is sent from a cache
        step[0] += 1
        x[0] = step[0]
        return x

    def hermes() -> float:
        return float((hm.asarray(changed()).astype("float64") * 2.0 + 1.0).sum().numpy())

    def scatter_submit(client: Any) -> Callable[[], float]:
        return lambda: client.submit(_scaled_sum, client.scatter(changed())).result()

    with separate_scheduler() as file, distributed.Client(scheduler_file=file) as client:
        client.wait_for_workers(2, timeout=120)
        hermes()  # warm: compile, calibrate, check the cluster
        growth = []
        for run in (hermes, scatter_submit(client)):
            base = client.run_on_scheduler(_start_sampler)
            run()
            growth.append(client.run_on_scheduler(_stop_sampler) - base)
        times = median_rounds({"hermes": hermes, "scatter+submit": scatter_submit(client)},
                              sizes["repeats"])
        error = abs(hermes() - _scaled_sum(x)) / abs(_scaled_sum(x))
    return {"times_s": times, "scheduler_growth_bytes": {"hermes": growth[0],
                                                         "scatter+submit": growth[1]},
            "max_error": error, "hermes_over_scatter": times["hermes"] / times["scatter+submit"]}


# -- (c) per-kernel overhead -----------------------------------------------------------------

def per_kernel(sizes: dict[str, int]) -> dict[str, Any]:
    small = np.arange(64, dtype=np.float32)

    def hermes() -> np.ndarray:
        return (hm.asarray(small) * 2.0 + 1.0).numpy()

    with local_cluster() as cluster, _client(cluster) as client:
        def plain() -> np.ndarray:
            return client.submit(np.add, small, 1.0, pure=False).result()

        rounds = sizes["small_rounds"]
        times = median_rounds({"hermes kernel": hermes, "dask task": plain}, rounds)
        error = float(np.max(np.abs(hermes() - (small * 2 + 1))))
    return {"times_s": times, "max_error": error,
            "hermes_over_dask": times["hermes kernel"] / times["dask task"]}


# -- printing --------------------------------------------------------------------------------

def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f} ms"


def report(a: dict[str, Any], b: dict[str, Any], c: dict[str, Any], sizes: dict[str, int]
           ) -> list[str]:
    lines = [f"\n(a) blur+Sobel, {sizes['images']} x {sizes['side']}² float32, 2-worker "
             "process cluster, NumPy in -> NumPy out (medians)"]
    lines += [f"  {name:<26}{_ms(s)}" for name, s in a["times_s"].items()]
    lines.append(f"  hermes cluster / hermes local      {a['cluster_over_local']:6.2f}x "
                 "(wanted <= 2)")
    lines.append(f"  the same, results kept (persist)   {a['kept_cluster_over_local']:6.2f}x")
    lines.append(f"  dask task, result home / local     {a['result_home_over_local']:6.2f}x "
                 "(moving the result alone)")
    lines.append(f"  delayed+opencv / hermes (cluster)  {a['delayed_cv_over_hermes']:6.2f}x "
                 "(wanted > 1)")
    lines.append(f"\n(b) {sizes['big_mib']} MiB input, (x*2+1).sum(), scheduler in its own process")
    lines += [f"  {name:<26}{_ms(s)}   scheduler peak growth "
              f"{b['scheduler_growth_bytes'][name] / 2**20:7.1f} MiB"
              for name, s in b["times_s"].items()]
    lines.append(f"  hermes / scatter+submit            {b['hermes_over_scatter']:6.2f}x "
                 "(wanted <= 1.3; growth wanted < 16 MiB)")
    lines.append("\n(c) one small kernel on the cluster, NumPy in -> NumPy out")
    lines += [f"  {name:<26}{_ms(s)}" for name, s in c["times_s"].items()]
    lines.append(f"  hermes kernel / dask task          {c['hermes_over_dask']:6.2f}x "
                 "(wanted <= 1.2)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--json", help="write the machine facts and figures to this file")
    args = parser.parse_args(argv)
    sizes = dict(QUICK if args.quick else FULL)
    if args.repeats:
        sizes["repeats"] = args.repeats
    facts = machine.facts(bandwidth=False)
    print("\n".join(machine.describe(facts)))
    with hm.options(progress=False):
        a, b, c = blur_sobel(sizes), large_input(sizes), per_kernel(sizes)
    print("\n".join(report(a, b, c, sizes)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": facts, "sizes": sizes, "blur_sobel": a, "large_input": b,
                       "per_kernel": c}, fh, indent=2)
    wrong = [f for f in (a, b, c) if f["max_error"] > 1e-3]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
