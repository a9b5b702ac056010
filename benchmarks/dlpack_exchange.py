"""DLPack exchange of a 64 MiB host array: no copy (the same data pointer), median time.

    python -m benchmarks.dlpack_exchange            # 64 MiB, median of 100
    python -m benchmarks.dlpack_exchange --mib 1 --repeat 10

Each figure is the median of ``--repeat`` exchanges (wanted ≤ 50 µs) and says whether the
consumer's array starts at the producer's data pointer:

* ``np.from_dlpack(t)``: a tensor computed on ``cpu:0`` to NumPy (read-only).
* ``torch.from_dlpack(t)``: the same tensor to PyTorch (when torch is installed).
* ``hm.from_dlpack(a)``: a NumPy array to a Hermes tensor reading it in place.
* ``hm.from_dlpack(torch_tensor)``: a PyTorch tensor to Hermes (when torch is installed).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import hermes_nb as hm


def _median_us(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def _pointer(value: Any) -> int:
    if isinstance(value, hm.Tensor):
        return int(value.node.attrs["value"].ctypes.data)  # the constant it reads in place
    if isinstance(value, np.ndarray):
        return int(value.ctypes.data)
    return int(value.data_ptr())  # a torch tensor


def measure(mib: int = 64, repeat: int = 100) -> dict[str, dict[str, Any]]:
    """Each exchange's median time (µs) and whether it kept the data pointer."""
    a = np.random.default_rng(0).random(mib * 2**20 // 4, dtype=np.float32)
    with hm.device("cpu:0"):
        t = (hm.asarray(a) * 2.0).compute()
    own = t.numpy().ctypes.data
    cases: dict[str, tuple[Callable[[], Any], int]] = {
        "np.from_dlpack(t)": (lambda: np.from_dlpack(t), own),
        "hm.from_dlpack(ndarray)": (lambda: hm.from_dlpack(a), int(a.ctypes.data)),
    }
    if importlib.util.find_spec("torch") is not None:
        import torch

        source = torch.from_numpy(a.copy())
        cases["torch.from_dlpack(t)"] = (lambda: torch.from_dlpack(t), own)
        cases["hm.from_dlpack(torch)"] = (lambda: hm.from_dlpack(source), source.data_ptr())
    return {name: {"median_us": round(_median_us(fn, repeat), 2),
                   "same_pointer": _pointer(fn()) == pointer}
            for name, (fn, pointer) in cases.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    figures = measure(args.mib, args.repeat)
    for name, row in figures.items():
        print(f"{name:26s} {row['median_us']:8.2f} µs  same pointer: {row['same_pointer']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mib": args.mib, "repeat": args.repeat, "figures": figures}, f, indent=2)


if __name__ == "__main__":
    main()
