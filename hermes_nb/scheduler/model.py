"""Run-time and transfer-time estimates, learnt from the history.

:class:`PerfModel` answers "how long will this kernel take on that device":

1. the same signature and size ran before there: the robust time of those runs
   (min of ≤2, low median from 3; see :mod:`.robust`) — source ``"history"``;
2. the signature ran there at ≥2 other sizes: a Theil–Sen line
   ``latency + slope × x`` with ``x`` = bytes or flops, whichever fits the
   per-size times better — source ``"fit"``;
3. one other size only: scaled in proportion to ``x`` — source ``"scaled"``;
4. never: no estimate (``seconds is None``) — source ``"none"``; the policy explores.

:class:`TransferModel` answers "how long to bring these bytes to that device":
latency + bytes / bandwidth per host↔device direction, measured once per device
with :func:`measure_link` and stored. A device of a host kind (``cpu``) shares host
memory: copies to and from it are free, and data already on the target is free.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from hermes_nb.scheduler.history import HistoryStore, LinkRecord, Run, local_host, model_device
from hermes_nb.scheduler.kernel import KernelInfo
from hermes_nb.scheduler.robust import LinearFit, robust_time, theil_sen

#: timed runs of a (signature, device) pair before the policy trusts its estimate
CALIBRATION_RUNS = 3
#: runs kept per (signature, device, size); older ones fall out of the window
WINDOW = 32
#: sizes kept per (signature, device) for the fit
MAX_SIZES = 64


@dataclass(frozen=True)
class Estimate:
    """A run-time estimate: ``seconds`` (None when nothing is known), where it came from
    and how many timed runs of the (signature, device) pair stand behind it."""

    seconds: float | None
    source: str
    runs: int


class _Size:
    __slots__ = ("cached", "flops", "nbytes", "samples")

    def __init__(self, nbytes: int, flops: float) -> None:
        self.samples: deque[float] = deque(maxlen=WINDOW)
        self.nbytes = nbytes
        self.flops = flops
        self.cached: float | None = None


class _Pair:
    __slots__ = ("fit", "fit_ready", "runs", "sizes")

    def __init__(self) -> None:
        self.sizes: dict[str, _Size] = {}
        self.runs = 0
        self.fit: LinearFit | None = None
        self.fit_ready = False


class PerfModel:
    """Per (signature, device) timings and the estimates drawn from them.

    Parameters
    ----------
    store
        Where runs are persisted and loaded from (lazily, per signature, on first
        use); ``None`` keeps everything in memory.
    calibration_runs
        Runs after which a (signature, device) pair counts as calibrated.
    """

    def __init__(
        self, store: HistoryStore | None = None, *, calibration_runs: int = CALIBRATION_RUNS
    ) -> None:
        self.store = store
        self.calibration_runs = calibration_runs
        self._pairs: dict[tuple[str, str], _Pair] = {}
        self._loaded: set[str] = set()
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ learning
    def observe(
        self, kernel: KernelInfo, device: str, seconds: float, *, bytes_moved: int = 0,
        persist: bool = True, host: str = "", name: str = "",
    ) -> None:
        """Add one timed run (thread-safe); also queue it for the store when ``persist``.
        ``host``: the machine ``device`` is in (``""``: this one); another machine's device
        is its own pair, named ``"host/device"`` (see :func:`.history.model_device`).
        ``name``: the kernel's name in the views, kept with the stored run."""
        if not seconds >= 0.0:  # NaN or negative: a broken timer, not a measurement
            return
        self._ensure_loaded(kernel.signature)
        self._add(kernel.signature, model_device(host, device), kernel.size_key, kernel.nbytes,
                  kernel.flops, seconds)
        if persist and self.store is not None:
            self.store.record(Run(kernel.signature, device, kernel.size_key, kernel.nbytes, kernel.flops,
                                  seconds, bytes_moved, host=host or local_host(), name=name))

    def _add(
        self, signature: str, device: str, size_key: str, nbytes: int, flops: float, seconds: float
    ) -> None:
        with self._lock:
            pair = self._pairs.get((signature, device))
            if pair is None:
                pair = self._pairs[(signature, device)] = _Pair()
            size = pair.sizes.get(size_key)
            if size is None:
                if len(pair.sizes) >= MAX_SIZES:
                    del pair.sizes[next(iter(pair.sizes))]
                size = pair.sizes[size_key] = _Size(nbytes, flops)
            size.samples.append(seconds)
            size.cached = None
            pair.runs += 1
            pair.fit_ready = False

    def _ensure_loaded(self, signature: str) -> None:
        if self.store is None or signature in self._loaded:
            return
        with self._lock:
            if signature in self._loaded:
                return
            self._loaded.add(signature)
            for run in self.store.runs(signature=signature):
                self._add(run.signature, model_device(run.host, run.device), run.size_key,
                          run.nbytes, run.flops, run.seconds)

    # ------------------------------------------------------------------ answering
    def runs(self, signature: str, device: str) -> int:
        """Timed runs of this pair that the model holds."""
        self._ensure_loaded(signature)
        pair = self._pairs.get((signature, device))
        return 0 if pair is None else pair.runs

    def calibrated(self, signature: str, device: str) -> bool:
        return self.runs(signature, device) >= self.calibration_runs

    def estimate(self, kernel: KernelInfo, device: str) -> Estimate:
        """Expected run time of ``kernel`` on ``device`` (see the module docstring for the order)."""
        self._ensure_loaded(kernel.signature)
        pair = self._pairs.get((kernel.signature, device))
        if pair is None:
            return Estimate(None, "none", 0)
        size = pair.sizes.get(kernel.size_key)
        if size is not None:
            if size.cached is None:
                with self._lock:
                    size.cached = robust_time(list(size.samples))
            return Estimate(size.cached, "history", pair.runs)
        fit = self.fit(kernel.signature, device)
        if fit is None:
            return Estimate(None, "none", pair.runs)
        x = kernel.flops if fit.predictor == "flops" else kernel.nbytes
        return Estimate(max(fit(x), 1e-9), "fit" if fit.points >= 2 else "scaled", pair.runs)

    def prior(self, kernel: KernelInfo, device: str) -> float | None:
        """A guess for a kernel ``device`` never ran: its bytes at the device's median
        seconds per byte over the kernels it ran (held in memory); None when it ran none."""
        with self._lock:
            rates = [robust_time(list(size.samples)) / max(size.nbytes, 1)
                     for (_, d), pair in self._pairs.items() if d == device
                     for size in pair.sizes.values() if size.samples]
        if not rates:
            return None
        rates.sort()
        return rates[len(rates) // 2] * max(kernel.nbytes, 1)

    def fit(self, signature: str, device: str) -> LinearFit | None:
        """The size model of a pair: a robust line through its per-size times (cached)."""
        pair = self._pairs.get((signature, device))
        if pair is None:
            return None
        if not pair.fit_ready:
            with self._lock:
                pair.fit = _fit_sizes(list(pair.sizes.values()))
                pair.fit_ready = True
        return pair.fit

    def pairs(self) -> list[tuple[str, str, int]]:
        """Every (signature, device, runs) the model holds."""
        with self._lock:
            return [(s, d, p.runs) for (s, d), p in self._pairs.items()]


def _fit_sizes(sizes: Sequence[_Size]) -> LinearFit | None:
    points = [(s.nbytes, s.flops, robust_time(list(s.samples))) for s in sizes if s.samples]
    if not points:
        return None
    if len(points) == 1:  # one size: assume cost proportional to the work
        nbytes, flops, t = points[0]
        if flops > 0:
            return LinearFit(0.0, t / flops, "flops", 1)
        return LinearFit(0.0, t / max(nbytes, 1), "nbytes", 1)
    ts = [p[2] for p in points]
    fits = [theil_sen([p[0] for p in points], ts, "nbytes")]
    if all(p[1] > 0 for p in points):
        fits.append(theil_sen([p[1] for p in points], ts, "flops"))
    fits = [f for f in fits if f is not None]
    if not fits:  # every point at the same x: the robust time of them all
        return LinearFit(robust_time(ts), 0.0, "nbytes", len(points))
    return min(fits, key=lambda f: f.error)


# ---------------------------------------------------------------------- transfers


@dataclass(frozen=True)
class Link:
    """A device's host link: latency and bandwidth in each direction."""

    h2d_latency_s: float
    h2d_bytes_per_s: float
    d2h_latency_s: float
    d2h_bytes_per_s: float
    measured: bool = True

    def h2d(self, nbytes: int) -> float:
        return self.h2d_latency_s + nbytes / self.h2d_bytes_per_s

    def d2h(self, nbytes: int) -> float:
        return self.d2h_latency_s + nbytes / self.d2h_bytes_per_s


#: assumed for a device whose link was never measured (PCIe 3 ×8-ish): 20 µs, 8 GB/s
DEFAULT_LINK = Link(20e-6, 8e9, 20e-6, 8e9, measured=False)
HOST_KINDS = frozenset({"cpu", "host"})


class TransferModel:
    """Host↔device copy times per device; copies between two devices go through the host.

    Parameters
    ----------
    store
        Where measured links are saved and loaded from (``None``: memory only).
    default
        The link assumed for a device that was never measured.
    host_kinds
        Device kinds that live in host memory (copies to/from them are free).

    Devices of other kinds that compute in host memory (an OpenCL CPU device, an
    integrated GPU) are named with :meth:`set_shares_host_memory`: their host copies are
    free too (a wrap or a map), but they stay out of ``is_host`` (the ``cpu`` policy).
    """

    def __init__(
        self,
        store: HistoryStore | None = None,
        *,
        default: Link = DEFAULT_LINK,
        host_kinds: Collection[str] = HOST_KINDS,
    ) -> None:
        self.store = store
        self.default = default
        self.host_kinds = frozenset(host_kinds)
        self._links: dict[str, Link] = {}
        self._host: dict[str, bool] = {}
        self._shared: set[str] = set()  # non-host kinds that compute in host memory
        self._routes: dict[tuple[str, str], tuple[float, float]] = {}  # (latency, seconds per byte)
        if store is not None:
            for rec in store.links():
                self._links[rec.device] = Link(rec.h2d_latency_s, rec.h2d_bytes_per_s,
                                               rec.d2h_latency_s, rec.d2h_bytes_per_s)

    def is_host(self, device: str) -> bool:
        """Whether ``device`` lives in host memory (its kind is a host kind)."""
        host = self._host.get(device)
        if host is None:
            host = self._host[device] = device.split(":", 1)[0] in self.host_kinds
        return host

    def set_shares_host_memory(self, device: str, shared: bool) -> None:
        """Whether ``device`` computes in host memory, so copies between it and the host
        are free (the runtime passes each device's ``shares_host_memory``)."""
        if (device in self._shared) != shared:
            (self._shared.add if shared else self._shared.discard)(device)
            self._routes.clear()

    def in_host_memory(self, device: str) -> bool:
        """Whether ``device``'s buffers are host memory (a host kind, or shared)."""
        return device in self._shared or self.is_host(device)

    def set_link(self, device: str, link: Link, *, persist: bool = True) -> None:
        """Use ``link`` for ``device`` from now on (and store it when ``persist``)."""
        self._links[device] = link
        self._routes.clear()
        if persist and self.store is not None:
            self.store.save_link(LinkRecord(device, link.h2d_latency_s, link.h2d_bytes_per_s,
                                            link.d2h_latency_s, link.d2h_bytes_per_s))

    def link(self, device: str) -> Link:
        """The device's link (measured, or the default)."""
        return self._links.get(device, self.default)

    def has_link(self, device: str) -> bool:
        return device in self._links or self.in_host_memory(device)

    def seconds(self, src: str, dst: str, nbytes: int) -> float:
        """Time to copy ``nbytes`` from ``src`` to ``dst`` (0 when they are the same or both host)."""
        route = self._routes.get((src, dst))
        if route is None:
            route = self._routes[(src, dst)] = self._route(src, dst)
        return 0.0 if route[0] < 0 else route[0] + nbytes * route[1]

    def _route(self, src: str, dst: str) -> tuple[float, float]:
        in_host = self.in_host_memory
        if src == dst or (in_host(src) and in_host(dst)):
            return (-1.0, 0.0)  # free
        latency = per_byte = 0.0
        if not in_host(src):
            up = self.link(src)
            latency += up.d2h_latency_s
            per_byte += 1.0 / up.d2h_bytes_per_s
        if not in_host(dst):
            down = self.link(dst)
            latency += down.h2d_latency_s
            per_byte += 1.0 / down.h2d_bytes_per_s
        return (latency, per_byte)

    def input_seconds(self, dst: str, nbytes: int, on: Collection[str]) -> float:
        """Time to make data of ``nbytes`` held on devices ``on`` available on ``dst``.

        Free when ``dst`` already holds it, else the cheapest copy from a holder.
        """
        if dst in on:
            return 0.0
        if not on:  # nowhere yet: it will come from the host
            return self.seconds("host", dst, nbytes)
        seconds = self.seconds
        best = float("inf")
        for src in on:
            t = seconds(src, dst, nbytes)
            if t < best:
                best = t
        return best


def measure_link(
    h2d: Callable[[int], object],
    d2h: Callable[[int], object] | None = None,
    *,
    sizes: Sequence[int] = (1 << 12, 1 << 16, 1 << 20, 1 << 23, 1 << 25),
    repeats: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> Link:
    """Measure a device's host link by timing copies of several sizes.

    Parameters
    ----------
    h2d
        ``h2d(n)`` copies ``n`` bytes host → device and returns once the copy is done
        (synchronise inside it).
    d2h
        The same device → host; ``None`` assumes a symmetric link.
    sizes, repeats
        Bytes per copy, and timed copies per size (after one untimed warm-up each).
    clock
        Seconds, monotonic (injectable for tests).

    Returns
    -------
    Link
        Latency (intercept) and bandwidth (1 / slope) of a Theil–Sen fit through
        the per-size robust times, so one slow copy does not skew it.
    """

    def fit(copy: Callable[[int], object]) -> tuple[float, float]:
        xs, ys = [], []
        for n in sizes:
            copy(n)  # warm-up: allocation, page-locking, lazy init
            times = []
            for _ in range(repeats):
                t0 = clock()
                copy(n)
                times.append(clock() - t0)
            xs.append(float(n))
            ys.append(robust_time(times))
        line = theil_sen(xs, ys)
        if line is None or line.slope <= 0:
            return (ys[0] if ys else 0.0), 1e12
        return line.intercept, 1.0 / line.slope

    up_latency, up_bw = fit(h2d)
    down_latency, down_bw = fit(d2h) if d2h is not None else (up_latency, up_bw)
    return Link(up_latency, up_bw, down_latency, down_bw)
