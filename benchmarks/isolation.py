"""What isolating native builds costs: launch path, first build, self-test.

    python -m benchmarks.isolation [--rounds 3] [--size 2048]

Fresh processes alternate with isolation on (``HERMES_ISOLATE=1``) and off (``0``), each
with a new cache directory: device discovery (the self-test runs there on a new machine),
the first result of W1 (blur 5×5 + Sobel) and W2 (``exp(-(a*b+c)**2*0.5)+a``) on
``opencl:0`` (a build), a second new kernel (the build alone, with the worker warm), the
median launch of the built W1/W2 with data resident, and the self-test's read-back in a
process whose cache holds the verdict. Prints medians, ratios on/off and the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def _median_s(fn, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def child(size: int, constant: float) -> dict[str, float]:
    import numpy as np

    t0 = time.perf_counter()
    import hermes_nb as hm

    hm.devices()
    discover = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    image = rng.random((size, size), dtype=np.float32)
    a, b, c = (rng.random(size * size, dtype=np.float32) for _ in range(3))
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
    out: dict[str, float] = {"discover_s": discover}
    with hm.device("opencl:0"):
        img, x, y, z = (hm.asarray(v).compute() for v in (image, a, b, c))
        w1 = pipeline(img) * constant
        w2 = hm.exp(-((x * y + z) ** 2) * 0.5) * constant + x
        second = hm.exp(-((x * y + z) ** 2) * 0.25) * (constant + 1.0) + x
    for name, tensor in (("w1", w1), ("w2", w2), ("second", second)):
        t0 = time.perf_counter()
        tensor.compute()
        first = time.perf_counter() - t0
        run = _median_s(tensor.compute)
        out[f"{name}_first_s"], out[f"{name}_run_s"] = first, run
        out[f"{name}_build_s"] = first - run
    return out


READBACK = """
import time, pyopencl as cl
import hermes_nb as hm
from hermes_nb.backends.opencl import drivers as drv
hm.devices()
found = [drv.Candidate(i, j, p, d) for i, p in enumerate(cl.get_platforms())
         for j, d in enumerate(p.get_devices())]
t = time.perf_counter()
for c in found:
    drv.verdict_for(c)
print((time.perf_counter() - t) / len(found))
"""


def readback_s(cache: str) -> float:
    """Reading one device's stored verdict (fingerprint, file, parse) in a new process."""
    env = dict(os.environ, HERMES_NB_CACHE_DIR=cache, HERMES_OPENCL_ALL_DRIVERS="1")
    proc = subprocess.run([sys.executable, "-c", READBACK], env=env, capture_output=True,
                          text=True, check=True)
    return float(proc.stdout.split()[-1])


def _spawn(isolate: str, size: int, cache: str) -> dict[str, float]:
    env = dict(os.environ, HERMES_NB_CACHE_DIR=cache, HERMES_ISOLATE=isolate)
    env.pop("POCL_CACHE_DIR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.isolation", "--child", str(size),
         str(1.0 + random.random())], capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cpu() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown CPU"
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines()
                  if ln.startswith("Model name")), "?")
    return f"{model}, {os.cpu_count()} cores, AVX-512 {'yes' if 'avx512f' in text else 'no'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--child", nargs=2, metavar=("SIZE", "CONSTANT"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(int(args.child[0]), float(args.child[1]))))
        return 0
    runs: dict[str, list[dict[str, float]]] = {"1": [], "0": []}
    verdicts = tempfile.mkdtemp(prefix="hermes-bench-")
    for _ in range(args.rounds):
        for isolate in ("1", "0"):  # alternate, so drift hits both alike
            with tempfile.TemporaryDirectory() as cache:
                runs[isolate].append(_spawn(isolate, args.size, cache))
    _spawn("1", 256, verdicts)  # leaves a verdict on disk
    print(f"CPU: {_cpu()}; {args.rounds} fresh processes each, medians; opencl:0, {args.size}²")
    print(f"{'figure':<34} {'isolated':>10} {'not':>10} {'ratio':>7}")
    for key in runs["1"][0]:
        on = statistics.median(r[key] for r in runs["1"])
        off = statistics.median(r[key] for r in runs["0"])
        print(f"{key:<34} {on * 1e3:>8.1f}ms {off * 1e3:>8.1f}ms {on / off:>7.2f}")
    print(f"{'self-test read back, per device':<34} {readback_s(verdicts) * 1e3:>8.1f}ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
