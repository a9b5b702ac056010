"""Each device's measured peaks: the memory bandwidth a streaming kernel reaches and the
FLOP/s of a float32 matmul, measured once per device and kept on disk.

The bandwidth is STREAM's add (``c = a + b``, 12 bytes per float32 element) and the compute
peak a square matmul, both run through the device's own ``execute`` as a kernel of a graph
is, on buffers already on the device, the best of a few timed runs after one untimed run
(which builds the kernel). Sizes grow until a run is long enough to time, within a budget
of well under a second per device. The figures are kept in ``peaks.json`` in the Hermes
cache folder, keyed by the hardware's identity (the same one a cluster's history uses), so
a later process reads them instead of measuring. Nothing here runs while a graph runs:
:func:`device_peaks` is called when a report is made.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hermes_nb.ir.node import OpSpec

log = logging.getLogger(__name__)

FILE = "peaks.json"
#: a timed run shorter than this grows the problem (timer and launch noise)
MIN_RUN_S = 0.004
#: the most seconds one figure's timed runs take (a build before them is not counted)
BUDGET_S = 0.25
STREAM_ELEMENTS = (1 << 22, 1 << 24, 1 << 25)
MATMUL_SIZES = (256, 512, 1024, 2048)
_F32 = np.dtype("float32")


@dataclass(frozen=True)
class Peak:
    """What one device reaches: GB/s of a streaming kernel, GFLOP/s of a float32 matmul
    (None: could not be measured)."""

    device: str
    gb_per_s: float | None
    gflop_per_s: float | None
    identity: str = ""
    measured_s: float = 0.0  # how long measuring took (0: read from the cache)


_memo: dict[str, Peak] = {}
#: device id -> its peak, once known in this process (a report per cell reads it without
#: working out the device's identity again)
_by_id: dict[str, Peak] = {}
_lock = threading.Lock()


_identities: dict[int, str] = {}


def identity(device: Any) -> str:
    """The hardware behind ``device``, independent of its index in this process."""
    known = _identities.get(id(device))
    if known is None:
        from hermes_nb.runtime.cluster_devices import stable_id

        known = _identities[id(device)] = f"{stable_id(device)}|{device.name}|{device.compute_units}"
    return known


def _path() -> Any:
    from hermes_nb.cache import cache_dir

    return cache_dir(FILE)


def _read() -> dict[str, Any]:
    try:
        with open(_path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(key: str, peak: Peak) -> None:
    from hermes_nb.cache import private_dir

    try:
        folder = private_dir()
        data = _read()
        data[key] = {k: v for k, v in asdict(peak).items() if k != "measured_s"}
        tmp = folder / f"{FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, folder / FILE)
    except Exception as exc:  # a read-only cache: measured again next process
        log.debug("hermes: could not keep the peaks of %s: %s", peak.device, exc)


def _best(device: Any, spec: OpSpec, buffers: list[Any]) -> float:
    """The shortest of a few timed runs of ``spec``, after one untimed run."""
    def once() -> float:
        start = time.perf_counter()
        device.execute(spec, buffers)
        device.synchronize()
        return time.perf_counter() - start

    device.run(once)  # builds the kernel, faults the pages in
    times: list[float] = []
    began = time.perf_counter()
    while len(times) < 3 or (len(times) < 10 and time.perf_counter() - began < BUDGET_S / 2):
        times.append(device.run(once))
        if time.perf_counter() - began > BUDGET_S:
            break
    return min(times)


def _grown(device: Any, sizes: Iterable[int], make: Callable[[int], tuple[OpSpec, list[Any]]],
           work: Callable[[int], float], nbytes: Callable[[int], int]) -> float:
    """The most units of ``work`` per second over the sizes tried, up to the first whose
    run is long enough to time (a size whose buffers take over a quarter of the device's
    memory is not tried)."""
    rate = 0.0
    for size in sizes:
        if rate and device.memory_bytes and 4 * nbytes(size) > device.memory_bytes:
            break
        spec, buffers = make(size)
        seconds = _best(device, spec, buffers)
        rate = max(rate, work(size) / seconds)
        if seconds >= MIN_RUN_S:
            break
    return rate


def _bandwidth(device: Any) -> float:
    def make(n: int) -> tuple[OpSpec, list[Any]]:
        spec = OpSpec("add", (n,), _F32, ((n,), (n,)), (_F32, _F32), {}, device.id,
                      key="hermes-peak-stream")
        return spec, [device.run(device.from_host, np.full(n, v, _F32)) for v in (1.0, 2.0)]

    return _grown(device, STREAM_ELEMENTS, make, lambda n: 12.0 * n, lambda n: 12 * n) / 1e9


def _compute(device: Any) -> float:
    def make(m: int) -> tuple[OpSpec, list[Any]]:
        spec = OpSpec("matmul", (m, m), _F32, ((m, m), (m, m)), (_F32, _F32), {}, device.id,
                      key="hermes-peak-matmul")
        a = device.run(device.from_host, np.full((m, m), 0.5, _F32))
        return spec, [a, a]

    return _grown(device, MATMUL_SIZES, make, lambda m: 2.0 * m ** 3, lambda m: 12 * m * m) / 1e9


def measure(device: Any) -> Peak:
    """Time ``device``'s bandwidth and matmul FLOP/s now (a few hundred ms)."""
    began = time.perf_counter()
    figures: list[float | None] = []
    for what, fn in (("bandwidth", _bandwidth), ("matmul", _compute)):
        try:
            figures.append(fn(device))
        except Exception as exc:  # a device that cannot run it: that peak stays unknown
            log.info("hermes: could not measure the %s of %s: %s", what, device.id, exc)
            figures.append(None)
    return Peak(device.id, figures[0], figures[1], identity(device),
                time.perf_counter() - began)


def device_peaks(device_ids: Iterable[str], *, measure_missing: bool = True
                 ) -> dict[str, Peak | None]:
    """The peaks of each of this process's devices named (None: unknown, e.g. a cluster
    worker's device or ``measure_missing=False`` with nothing kept yet); measured and kept
    for a device met for the first time."""
    result: dict[str, Peak | None] = {}
    for device_id in device_ids:
        known = _by_id.get(device_id)
        if known is not None:
            result[device_id] = known
            continue
        from hermes_nb.backends import get_device  # only for a device not known yet

        try:
            device = get_device(device_id)
        except (ValueError, TypeError):
            result[device_id] = None
            continue
        result[device_id] = peak = _peak_of(device, measure_missing)
        if peak is not None and device_id == device.id:  # as read later: not measured
            _by_id[device_id] = Peak(peak.device, *_figures(peak), peak.identity)
    return result


def _peak_of(device: Any, measure_missing: bool) -> Peak | None:
    key = identity(device)
    with _lock:
        if key in _memo:
            return Peak(device.id, *_figures(_memo[key]), key)
        kept = _read().get(key)
        if isinstance(kept, dict):
            _memo[key] = Peak(device.id, kept.get("gb_per_s"), kept.get("gflop_per_s"), key)
            return _memo[key]
        if not measure_missing:
            return None
        _memo[key] = peak = measure(device)
    _write(key, peak)
    return peak


def _figures(peak: Peak) -> tuple[float | None, float | None]:
    return peak.gb_per_s, peak.gflop_per_s


def forget() -> None:
    """Drop the figures read in this process (the file stays)."""
    with _lock:
        _memo.clear()
        _by_id.clear()
