"""Build cost of long fused pipelines: a stencil of n blur+axpy stages and elementwise
chains of N ops, each the first run in a fresh process with a new cache directory (so it
pays every compile), printed as medians with the machine's CPU model.

    python -m benchmarks.compile_bounds [--repeat 3] [--devices cpu:0,opencl:0]
        [--stages 4,10] [--chain 1000,3000]

The chains use constants nobody compiled before (a fresh cache directory per run) and
alternate a subtraction with a multiply-add, so the kernels they split into differ; the
result is checked against NumPy, the stencil's against SciPy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def child(kind: str, device: str, n: int) -> dict[str, float]:
    import numpy as np
    from scipy import ndimage

    import hermes_nb as hm

    hm.devices()  # device discovery (and drivers' self-tests) is not part of a build
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    if kind == "stencil":
        image = rng.random((512, 512), dtype=np.float32)
        with hm.device(device):
            x = hm.asarray(image)
            for _ in range(n):
                x = hm.gaussian_blur(x, kernel_size=3) * 0.5 + x
        g = hm.image.gaussian_kernel(3)
        ref = image.astype(np.float64)
        for _ in range(n):
            b = ndimage.correlate1d(ndimage.correlate1d(ref, g, axis=-2, mode="mirror"), g,
                                    axis=-1, mode="mirror")
            ref = b * 0.5 + ref
    else:
        a = rng.random(1 << 18, dtype=np.float32)
        with hm.device(device):
            x = hm.asarray(a)
        ref = a.copy()
        ops, k = 0, 0
        while ops < n:
            c = np.float32(1.0 + 1e-4 * rng.random())
            if k % 2 == 0:
                x, ref, ops = x - c, ref - c, ops + 1
            else:
                x, ref, ops = x * c + c, ref * c + c, ops + 2
            k += 1
    built = time.perf_counter()
    kernels = len([k for k in x.explain().kernels if k.ops])
    planned = time.perf_counter()
    out = x.numpy()
    done = time.perf_counter()
    err = float(np.max(np.abs(out - ref)) / max(float(np.max(np.abs(ref))), 1e-30))
    return {"graph_s": built - t0, "explain_s": planned - built, "first_run_s": done - planned,
            "kernels": kernels, "max_rel_err": err}


def _spawn(kind: str, device: str, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as cache:
        env = dict(os.environ, HERMES_NB_CACHE_DIR=cache, POCL_CACHE_DIR=os.path.join(cache, "pocl"))
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.compile_bounds", "--child", kind, device, str(n)],
            capture_output=True, text=True, env=env, check=True,
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=3, metavar=("KIND", "DEVICE", "N"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--devices", default="cpu:0,opencl:0")
    parser.add_argument("--stages", default="4,10")
    parser.add_argument("--chain", default="1000,3000")
    args = parser.parse_args()
    if args.child:
        kind, device, n = args.child
        print(json.dumps(child(kind, device, int(n))))
        return
    print(f"CPU: {_cpu_model()} ({os.cpu_count()} logical cores)")
    print("graph s: building and planning the graph; first run s: every compile and the run")
    print(f"{'workload':<28}{'device':<10}{'kernels':>8}{'graph s':>9}{'first run s':>13}"
          f"{'max rel err':>13}")
    cases = [("stencil", d, int(n)) for n in args.stages.split(",") if n
             for d in args.devices.split(",")]
    cases += [("chain", "cpu:0", int(n)) for n in args.chain.split(",") if n]
    for kind, device, n in cases:
        runs = [_spawn(kind, device, n) for _ in range(args.repeat)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        label = f"{n} blur+axpy stages" if kind == "stencil" else f"{n}-op elementwise chain"
        print(f"{label:<28}{device:<10}{med['kernels']:>8.0f}{med['graph_s'] + med['explain_s']:>9.2f}"
              f"{med['first_run_s']:>13.2f}{max(r['max_rel_err'] for r in runs):>13.1e}",
              flush=True)


if __name__ == "__main__":
    main()
