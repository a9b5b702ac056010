"""Facts about the machine a benchmark ran on, and its measured memory bandwidth.

    python -m benchmarks.machine        # print the facts, STREAM triad included

The triad bandwidth is the ceiling a memory-bound workload can reach here: a workload's
essential bytes divided by it is the shortest time it can take.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import time
from typing import Any

import numpy as np

TRIAD_ELEMENTS = 1 << 25
TRIAD_BYTES_PER_ELEMENT = 12  # float32: read b, read c, write a
_VECTOR_FLAG = re.compile(r"^(avx\w*|fma\w*|sse4\w*)$")


def _lscpu() -> dict[str, str]:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    fields = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in fields}


def vector_extensions() -> list[str]:
    """The AVX/AVX2/AVX-512/FMA/SSE4 flags the CPU reports, sorted."""
    try:
        with open("/proc/cpuinfo") as fh:
            flags_line = next((ln for ln in fh if ln.startswith("flags")), "")
    except OSError:
        return []
    flags = flags_line.split(":", 1)[-1].split()
    return sorted({f for f in flags if _VECTOR_FLAG.match(f)})


def _triad_kernel() -> Any:
    from numba import njit, prange

    @njit(parallel=True, fastmath=False, cache=False)
    def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: np.float32) -> None:
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    return triad


def triad_bandwidth(n: int = TRIAD_ELEMENTS, runs: int = 7) -> dict[str, Any]:
    """STREAM triad ``a = b + s*c`` in float32 on all cores with Numba ``prange``.

    GB/s of essential traffic (12 B/element), median of ``runs``; the output is
    touched first so page faults stay out of the timing.
    """
    import numba

    threads = min(os.cpu_count() or 1, numba.config.NUMBA_NUM_THREADS)
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        triad = _triad_kernel()
        b = np.ones(n, np.float32)
        c = np.full(n, 2.0, np.float32)
        a = np.zeros(n, np.float32)  # np.zeros may map lazily: the first call pre-touches it
        s = np.float32(3.0)
        triad(a, b, c, s)  # compiles and faults the output's pages in
        times = []
        for _ in range(max(runs, 5)):
            start = time.perf_counter()
            triad(a, b, c, s)
            times.append(time.perf_counter() - start)
        if not np.all(a == 7.0):
            raise RuntimeError("STREAM triad computed a wrong result")
    finally:
        numba.set_num_threads(previous)
    median = statistics.median(times)
    return {"gb_per_s": TRIAD_BYTES_PER_ELEMENT * n / median / 1e9, "median_s": median,
            "elements": n, "threads": threads, "runs": len(times)}


def _hermes_devices() -> list[dict[str, Any]]:
    import hermes_nb as hm

    return [d.info() for d in hm.devices()]


def facts(bandwidth: bool = True) -> dict[str, Any]:
    """CPU, vector extensions, cores, library versions, Hermes devices and (optionally)
    the measured triad bandwidth."""
    import numba

    cpu = _lscpu()
    result: dict[str, Any] = {
        "cpu_model": cpu.get("Model name", platform.processor() or "unknown"),
        "cpu_family": cpu.get("CPU family", "?"),
        "cpu_model_number": cpu.get("Model", "?"),
        "vector_extensions": vector_extensions(),
        "avx512": "avx512f" in vector_extensions(),
        "cores": os.cpu_count(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "devices": _hermes_devices(),
    }
    if bandwidth:
        result["triad"] = triad_bandwidth()
    return result


def describe(machine: dict[str, Any]) -> list[str]:
    """The facts as a few printable lines."""
    lines = [f"CPU: {machine['cpu_model']} (family {machine['cpu_family']}, "
             f"model {machine['cpu_model_number']}), {machine['cores']} cores",
             f"AVX-512: {'yes' if machine.get('avx512') else 'no'}; vector extensions: "
             f"{' '.join(machine['vector_extensions']) or 'none found'}",
             f"NumPy {machine['numpy']}, Numba {machine['numba']}"]
    for d in machine["devices"]:
        driver = f", {d['driver']}" if "driver" in d else ""
        lines.append(f"device {d['id']}: {d['name']}{driver}")
    if "triad" in machine:
        t = machine["triad"]
        lines.append(f"STREAM triad (float32, {t['threads']} threads, 2^"
                     f"{int(t['elements']).bit_length() - 1} elements, median of {t['runs']}): "
                     f"{t['gb_per_s']:.1f} GB/s")
    return lines


if __name__ == "__main__":
    print("\n".join(describe(facts())))
