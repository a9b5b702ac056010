"""The hotspot report of one run: where the wall time went (compile, run, copies, idle, per
device), the kernels and ops sorted by time, what each kernel reached against its device's
measured peaks, what fusion saved, and suggestions drawn from those numbers.

Everything here is read from a :class:`~hermes_nb.runtime.profile.Profile` after the run;
the peaks come from :mod:`hermes_nb.runtime.peaks` (measured once per device, when the
first report is made, never inside a run). The HTML is in :mod:`report_html`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_nb.runtime.peaks import Peak, device_peaks
from hermes_nb.runtime.profile import BACKGROUND_SUFFIX, Profile, last_profile, running
from hermes_nb.runtime.report_html import (
    FLOPS_MEANS,
    HOST_MEANS,
    IDLE_MEANS,
    document,
    fragment,
    mimebundle,
    text,
)
from hermes_nb.runtime.report_rules import Suggestion, suggestions

__all__ = ["FLOPS_MEANS", "HOST_MEANS", "IDLE_MEANS", "CopyRow", "DeviceTime", "KernelRow",
           "OpRow", "Report", "Suggestion", "report"]

#: the kernels placed against the compute peak (a matmul's FLOP/s); the others against the
#: bandwidth, the roof an elementwise kernel, a reduction or a stencil meets first here
MATMULS = ("matmul", "fused_matmul", "conv", "fused_conv")
#: pre-fusion members that are no kernel of their own (inputs, folded constants)
SOURCES = ("constant", "buffer", "random")


@dataclass(frozen=True)
class DeviceTime:
    """One device's share of the run's wall time, in seconds."""

    device: str
    wall_s: float
    compile_s: float
    run_s: float
    copy_s: float  # copies *to* this device
    #: the wall time it compiled, ran or received a copy (overlaps counted once: a copy for
    #: one kernel may run while the device runs another)
    busy_s: float

    @property
    def idle_s(self) -> float:
        return max(self.wall_s - self.busy_s, 0.0)


@dataclass(frozen=True)
class KernelRow:
    """One kernel of the run, its tiles' times summed; its rates and roofline position are
    worked out once, when the row is made (every view of a report reads them)."""

    key: str
    name: str
    op: str
    devices: tuple[str, ...]
    run_s: float
    compile_s: float
    share: float  # (run + compile) / wall
    nbytes: int | None  # read + written (the plan's inputs + output)
    flops: float | None
    flops_estimated: bool = True
    members: tuple[str, ...] = ()
    peak: Peak | None = None
    gb_per_s: float | None = field(init=False, default=None)
    gflop_per_s: float | None = field(init=False, default=None)
    #: "memory" or "compute": which peak bounds it on the roofline (None: unknown)
    bound: str | None = field(init=False, default=None)
    #: the fraction of the bounding peak reached (GB/s or GFLOP/s over the device's)
    roofline: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        # frozen: the derived figures go straight into the instance's dict, once
        self.__dict__.update(_rates(self.op, self.run_s, self.nbytes, self.flops, self.peak))

    @property
    def total_s(self) -> float:
        return self.run_s + self.compile_s


def _rates(op: str, run_s: float, nbytes: int | None, flops: float | None,
           peak: Peak | None) -> dict[str, Any]:
    """A kernel row's GB/s and GFLOP/s, the peak that bounds it and the fraction of it
    reached."""
    gb = nbytes / run_s / 1e9 if nbytes and run_s > 0 else None
    gflop = flops / run_s / 1e9 if flops and run_s > 0 else None
    bound = roofline = None
    if peak is not None and peak.gb_per_s and nbytes:
        bound, achieved, top = "memory", gb, peak.gb_per_s
        if flops and peak.gflop_per_s and op in MATMULS:
            ridge = peak.gflop_per_s / peak.gb_per_s  # FLOP per byte where the roofs meet
            if flops / nbytes >= ridge:
                bound, achieved, top = "compute", gflop, peak.gflop_per_s
        roofline = achieved / top if achieved is not None and top else None
    return {"gb_per_s": gb, "gflop_per_s": gflop, "bound": bound, "roofline": roofline}


_new = object.__new__


def _make(cls: type, values: dict[str, Any]) -> Any:
    """An instance of the frozen dataclass ``cls`` holding ``values`` (every field), made
    without its ``__init__``, which sets each field through ``object.__setattr__``: a
    report makes a dozen rows per cell, and that way of setting them was a tenth of its
    time."""
    row = _new(cls)
    row.__dict__.update(values)
    return row


@dataclass(frozen=True)
class OpRow:
    """One op (before fusion) over the run: a kernel's time split evenly over its members."""

    op: str
    count: int
    kernels: tuple[str, ...]
    seconds: float
    share: float


@dataclass(frozen=True)
class CopyRow:
    source: str
    device: str
    count: int
    nbytes: int
    seconds: float
    share: float

    @property
    def gb_per_s(self) -> float | None:
        return self.nbytes / self.seconds / 1e9 if self.seconds > 0 else None


@dataclass(frozen=True)
class Fusion:
    """Kernels and bytes of the run against the unfused plan of the same graph."""

    kernels: int
    nbytes: int
    unfused_kernels: int
    unfused_bytes: int
    unknown: int = 0  # pre-fusion kernels whose bytes are not known (rewritten before fusion)

    @property
    def kernels_saved(self) -> int:
        return self.unfused_kernels - self.kernels

    @property
    def bytes_saved(self) -> int:
        return self.unfused_bytes - self.nbytes


@dataclass(frozen=True)
class Report:
    """A run's hotspots; ``_repr_html_`` in a notebook, ``str`` as text, :meth:`to_html` to
    a standalone file."""

    wall_s: float
    devices: tuple[DeviceTime, ...]
    no_device_s: float  # the wall time when no device was busy
    kernels: tuple[KernelRow, ...]
    ops: tuple[OpRow, ...]
    copies: tuple[CopyRow, ...]
    fusion: Fusion | None
    peaks: Mapping[str, Peak | None]
    suggestions: tuple[Suggestion, ...] = ()
    waits: Mapping[str, Any] = field(default_factory=dict)

    @property
    def compile_s(self) -> float:
        return sum(d.compile_s for d in self.devices)

    @property
    def copy_s(self) -> float:
        return sum(d.copy_s for d in self.devices)

    @property
    def run_s(self) -> float:
        return sum(d.run_s for d in self.devices)

    def __str__(self) -> str:
        return text(self)

    __repr__ = __str__

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        return fragment(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """HTML and text, the figures formatted once for both."""
        return mimebundle(self)

    def to_html(self, path: str | Any) -> str:
        """Write the report as one standalone HTML file (inline CSS, no outside requests)
        and return its path."""
        import os

        with open(path, "w", encoding="utf-8") as f:
            f.write(document(self))
        return os.fspath(path)


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _device_times(kernels: list[Any], transfers: list[Any], compiles: list[Any], wall: float
                  ) -> tuple[tuple[DeviceTime, ...], float]:
    busy: dict[str, list[tuple[float, float]]] = {}
    sums: dict[str, list[float]] = {}  # per device: compile, run, copies
    # devices in the order kernels, then copies, then builds first name them; each kind's
    # time is its ``seconds``, written out (a report per cell reads every event)
    for k in kernels:
        device, start, end = k.device, k.start, k.end
        if device not in sums:
            sums[device], busy[device] = [0.0, 0.0, 0.0], []
        busy[device].append((start, end))
        sums[device][1] += max(end - start - k.compile_s, 0.0)
    for part, events in ((2, transfers), (0, compiles)):
        for e in events:
            device, start, end = e.device, e.start, e.end
            if part == 0 and e.key.endswith(BACKGROUND_SUFFIX):
                continue
            if device not in sums:
                sums[device], busy[device] = [0.0, 0.0, 0.0], []
            busy[device].append((start, end))
            sums[device][part] += end - start
    rows = []
    for d, (compile_s, run_s, copy_s) in sums.items():
        spans = busy[d]
        row = _new(DeviceTime)
        row.__dict__.update(device=d, wall_s=wall, compile_s=compile_s, run_s=run_s,
                            copy_s=copy_s, busy_s=spans[0][1] - spans[0][0] if len(spans) == 1
                            else _union(spans))
        rows.append(row)
    # one device (the usual cell): the time some device was busy is that device's
    any_busy = rows[0].busy_s if len(rows) == 1 else _union([i for b in busy.values() for i in b])
    return tuple(rows), max(wall - any_busy, 0.0)


def _names(profile: Profile) -> dict[str, str] | None:
    """The planned kernels' names (a kernel the plan does not hold is named after its op,
    as ``Profile.kernel_names`` does); None where they cannot be worked out."""
    try:
        return profile._planned_names()
    except Exception:
        return None


def _kernel_rows(profile: Profile, kernels: list[Any], wall: float,
                 peaks: Mapping[str, Peak | None]) -> tuple[KernelRow, ...]:
    plan = {k.name: k for k in profile.plan.kernels} if profile.plan is not None else {}
    flops = profile.work.flops if profile.work is not None else {}
    planned_names = _names(profile)
    runs: dict[str, list[Any]] = {}
    for run in kernels:
        key = run.key  # its kernel: a tile's key is "<kernel>[start:stop]"
        runs.setdefault(key.split("[", 1)[0] if "[" in key else key, []).append(run)
    rows = []
    for key, group in runs.items():
        if len(group) == 1:  # the usual case: one run, no tiles (its seconds written out)
            run = group[0]
            compile_s = run.compile_s
            devices, run_s = (run.device,), max(run.end - run.start - compile_s, 0.0)
        else:
            devices = tuple(dict.fromkeys(r.device for r in group))
            run_s, compile_s = sum(r.seconds for r in group), sum(r.compile_s for r in group)
        planned, counted = plan.get(key), flops.get(key)
        nbytes = planned.bytes_moved if planned is not None else None
        count = counted.count if counted is not None else None
        peak = peaks.get(devices[0]) if len(devices) == 1 else None
        op = group[0].op
        rows.append(_make(KernelRow, {
            "key": key, "name": key if planned_names is None else planned_names.get(key, op),
            "op": op, "devices": devices,
            "run_s": run_s, "compile_s": compile_s,
            "share": (run_s + compile_s) / wall if wall > 0 else 0.0, "nbytes": nbytes,
            "flops": count, "flops_estimated": counted.estimated if counted is not None else True,
            "members": planned.members if planned is not None else (key,), "peak": peak,
            **_rates(op, run_s, nbytes, count, peak)}))
    rows.sort(key=lambda r: -(r.run_s + r.compile_s))  # total_s
    return tuple(rows)


def _op_of(key: str) -> str:
    body = key[7:] if key.startswith("hermes-") else key
    return body.rsplit("-", 1)[0] if "-" in body else body


@functools.lru_cache(maxsize=4096)
def op_name(key: str) -> str:
    """``hermes-<op>-<token>`` -> ``<op>``."""
    return _op_of(key)


def _member_ops(members: tuple[str, ...], key: str) -> list[str]:
    """The ops a kernel holds, one per pre-fusion member that is a kernel of its own.
    Worked out each time, :func:`_op_of` written inline (the members' keys, and so a cache's
    keys, change from run to run with their inputs' tokens)."""
    ops = []
    for m in members:
        body = m[7:] if m.startswith("hermes-") else m
        cut = body.rfind("-")
        op = body[:cut] if cut >= 0 else body
        if op not in SOURCES:
            ops.append(op)
    return ops or [_op_of(key)]


def _op_rows(kernels: tuple[KernelRow, ...], wall: float) -> tuple[OpRow, ...]:
    ops: dict[str, list[Any]] = {}
    for k in kernels:
        members = _member_ops(k.members, k.key)
        each = (k.run_s + k.compile_s) / len(members)  # its total_s
        for op in members:
            row = ops.get(op)
            if row is None:
                row = ops[op] = [0, [], 0.0]
            row[0] += 1
            if k.name not in row[1]:
                row[1].append(k.name)
            row[2] += each
    rows = [_make(OpRow, {"op": op, "count": n, "kernels": tuple(ks), "seconds": s,
                          "share": s / wall if wall > 0 else 0.0})
            for op, (n, ks, s) in ops.items()]
    rows.sort(key=lambda r: -r.seconds)
    return tuple(rows)


def _copy_rows(transfers: list[Any], wall: float) -> tuple[CopyRow, ...]:
    pairs: dict[tuple[str, str], list[float]] = {}
    for t in transfers:
        row = pairs.setdefault((t.source, t.device), [0, 0, 0.0])
        row[0] += 1
        row[1] += t.nbytes
        row[2] += t.end - t.start
    rows = [_make(CopyRow, {"source": s, "device": d, "count": int(n), "nbytes": int(b),
                            "seconds": sec, "share": sec / wall if wall > 0 else 0.0})
            for (s, d), (n, b, sec) in pairs.items()]
    rows.sort(key=lambda r: -r.seconds)
    return tuple(rows)


def _fusion(profile: Profile) -> Fusion | None:
    if profile.plan is None or profile.work is None:
        return None
    work, kernels = profile.work, profile.plan.kernels
    return _make(Fusion, {"kernels": len(kernels), "nbytes": sum(k.bytes_moved for k in kernels),
                          "unfused_kernels": work.unfused_kernels,
                          "unfused_bytes": work.unfused_bytes, "unknown": work.unfused_unknown})


def _profile_of(profile_or_run: Any) -> Profile:
    if profile_or_run is None:
        profile = last_profile()
        if profile is None:
            raise ValueError("hm.report: nothing has run in this process yet; compute a "
                             "tensor first or pass a Profile")
        return profile
    if isinstance(profile_or_run, Profile):
        return profile_or_run
    inner = getattr(profile_or_run, "profile", None)  # a %%hermes cell's RunSummary
    if isinstance(inner, Profile):
        return inner
    raise TypeError("hm.report: expected a Profile (hermes_nb.runtime.last_profile()) or "
                    f"None, not {type(profile_or_run).__name__}")


def report(profile_or_run: Profile | Any | None = None, *, measure: bool = True,
           peaks: Mapping[str, Peak | None] | None = None) -> Report:
    """The hotspot report of a run: wall time per device split into compile, run, copies
    and idle; kernels and ops sorted by time with their share of the wall time; achieved
    GB/s and GFLOP/s against each device's measured peak (a roofline position); what
    fusion saved; and suggestions, each with the figure behind it.

    Parameters
    ----------
    profile_or_run : Profile, optional
        The run to report on (a ``%%hermes`` cell's summary works too); default: the last
        run in this process (``hermes_nb.runtime.last_profile()``).
    measure : bool
        Measure a device's peak bandwidth and matmul FLOP/s the first time it is met
        (under a second per device, kept on disk, never inside a run). ``False`` uses no
        peaks: the report says "peak unknown".
    peaks : mapping, optional
        Device id -> :class:`~hermes_nb.runtime.peaks.Peak` to use instead.

    Returns
    -------
    Report
        Shown as a table in a notebook, as text by ``print``; ``to_html(path)`` writes a
        standalone file.

    Examples
    --------
    >>> import numpy as np
    >>> import hermes_nb as hm
    >>> x = hm.asarray(np.ones((256, 256), np.float32))
    >>> _ = hm.compute(hm.sum(hm.exp(x) * 2.0))
    >>> r = hm.report(measure=False)
    >>> r.wall_s > 0 and len(r.kernels) >= 1
    True
    >>> print(r)  # doctest: +ELLIPSIS
    Hotspot report: ...
    """
    profile = _profile_of(profile_or_run)
    wall = profile.seconds
    runs, transfers = profile.snapshot()  # one copy of what the workers appended
    devices, no_device = _device_times(runs, transfers, profile.compile_events(), wall)
    used = [d.device for d in devices]
    if peaks is None:
        # never measured while a graph runs: its timings and the peaks' would both suffer
        peaks = (device_peaks(used, measure_missing=not running()) if measure
                 else {d: None for d in used})
    kernels = _kernel_rows(profile, runs, wall, peaks)
    result = _make(Report, {
        "wall_s": wall, "devices": devices, "no_device_s": no_device, "kernels": kernels,
        "ops": _op_rows(kernels, wall), "copies": _copy_rows(transfers, wall),
        "fusion": _fusion(profile), "peaks": dict(peaks), "suggestions": (), "waits": {}})
    # the rules read the finished report; set on it once, before anyone else sees it
    result.__dict__["suggestions"] = tuple(suggestions(result, profile, (runs, transfers)))
    return result
