"""The hotspot report's suggestions: each rule reads the report's numbers and, past its
threshold, says in plain words what to change, quoting the figure that triggered it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hermes_nb.runtime.profile import KernelRun, Profile

Report = Any  # a hermes_nb.runtime.report.Report, which imports this module

#: copies to one device over this share of the wall time
COPY_SHARE = 0.25
#: compiles over this share of the wall time
COMPILE_SHARE = 0.5
#: a kernel running (its compile aside) for at least KERNEL_SHARE of the wall time at or
#: above this fraction of its peak
NEAR_PEAK = 0.7
KERNEL_SHARE = 0.1
#: a kernel of at least FAR_SHARE of the wall time below this fraction of its peak
FAR_FROM_PEAK = 0.1
FAR_SHARE = 0.25
#: the wall time with no device busy over this share
NO_DEVICE_SHARE = 0.3
#: kernels waiting for their device (ready, inputs copied, device busy) at least this long
WAIT_MIN_S = 1e-3
#: ... adding up to this share of the wall time, while a device they could run on was idle
WAIT_SHARE = 0.05


@dataclass(frozen=True)
class Suggestion:
    kind: str  # copies | compile | near-peak | far-from-peak | no-device | waiting
    text: str  # the advice, with its figure
    figure: float  # the number that triggered it (a fraction of the wall time or a peak)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.01 or x == 0 else f"{100 * x:.1g}%"


def _copies(report: Report) -> Iterator[Suggestion]:
    for d in report.devices:
        share = d.copy_s / report.wall_s if report.wall_s > 0 else 0.0
        if share < COPY_SHARE:
            continue
        sources = [c for c in report.copies if c.device == d.device]
        source = max(sources, key=lambda c: c.seconds).source if sources else "the host"
        moved = sum(c.nbytes for c in sources)
        yield Suggestion("copies", f"{_pct(share)} of this run copied data to {d.device} "
                         f"({moved / 1e6:.1f} MB): keep inputs resident (hm.compute them once "
                         f"and reuse the result) or pin to {source}", share)


def _compile(report: Report) -> Iterator[Suggestion]:
    share = report.compile_s / report.wall_s if report.wall_s > 0 else 0.0
    if share >= COMPILE_SHARE:
        yield Suggestion("compile", f"compile took {_pct(share)} of the wall time "
                         f"({report.compile_s * 1e3:.0f} ms): it is paid once; the next run "
                         "reuses the kernels", share)


def _peaks(report: Report) -> Iterator[Suggestion]:
    for k in report.kernels:
        fraction, bound = k.roofline, k.bound
        share = k.run_s / report.wall_s if report.wall_s > 0 else 0.0  # its compile aside
        if fraction is None or share < KERNEL_SHARE:
            continue
        what = "bandwidth" if bound == "memory" else "matmul FLOP/s"
        where = f"{k.name} on {k.devices[0]}"
        if fraction >= NEAR_PEAK:
            yield Suggestion("near-peak", f"{where} reached {_pct(fraction)} of the measured "
                             f"{what}: {bound}-bound, near the limit"
                             + ("; only less traffic (fusion, smaller dtypes) makes it faster"
                                if bound == "memory" else ""), fraction)
        elif fraction < FAR_FROM_PEAK and share >= FAR_SHARE:
            yield Suggestion("far-from-peak", f"{where} runs for {_pct(share)} of the wall time "
                             f"at {_pct(fraction)} of the measured {what}: it is held back by "
                             "launch cost or latency, not by the device's peak; fewer, larger "
                             "launches (or another device) may suit it better", fraction)


def _no_device(report: Report) -> Iterator[Suggestion]:
    share = report.no_device_s / report.wall_s if report.wall_s > 0 else 0.0
    if share >= NO_DEVICE_SHARE:
        yield Suggestion("no-device", f"no device was busy for {_pct(share)} of the wall time "
                         f"({report.no_device_s * 1e3:.1f} ms): planning, Python and hand-offs "
                         "between kernels; computing several results in one hm.compute (or "
                         "fewer, larger kernels) cuts it", share)


def _intervals(events: list[Any]) -> dict[str, list[tuple[float, float]]]:
    by_device: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        by_device.setdefault(e.device, []).append((e.start, e.end))
    return by_device


def _overlap(intervals: list[tuple[float, float]], a: float, b: float) -> float:
    return sum(max(0.0, min(e, b) - max(s, a)) for s, e in intervals)


def waits(profile: Profile, events: tuple[list[KernelRun], list[Any]] | None = None
          ) -> list[tuple[KernelRun, str, float]]:
    """Kernels that waited for their device: (run, an idle device it could have run on, the
    wait in seconds), the wait being the part of the time from its inputs' kernels' end (the
    run's start for none) to its start when its device ran other kernels. A kernel that
    started late while its device was idle (the host still planning, its inputs still being
    copied) did not wait for it. ``events``: the profile's ``snapshot()`` where the caller
    has taken one."""
    if profile.plan is None:
        return []
    planned = {k.name: k for k in profile.plan.kernels if len(k.estimates) > 1}
    if not planned:  # no kernel had another device to go to
        return []
    kernels, transfers = events if events is not None else profile.snapshot()
    ends: dict[str, float] = {}
    for k in kernels:
        key = k.key  # its kernel: a tile's key is "<kernel>[start:stop]"
        if "[" in key:
            key = key.split("[", 1)[0]
        ends[key] = max(ends.get(key, 0.0), k.end)
    waited = []
    for run in kernels:
        plan = planned.get(run.key)  # a tile's key names no planned kernel
        if plan is None:
            continue
        inputs_end = [ends[i] for i in plan.inputs if i in ends]
        ready = max(inputs_end) if inputs_end else profile.started
        if run.start - ready >= WAIT_MIN_S:  # the most it can have waited
            waited.append((run, plan, ready))
    if not waited:
        return []
    # what each device ran, builds left out: a wait for another kernel's compile is the
    # compile's (paid once, and its own suggestion), not a reason to move a kernel
    ran: dict[str, list[tuple[float, float]]] = {}
    for k in kernels:
        ran.setdefault(k.device, []).append((k.run_start, k.end))
    busy: dict[str, list[tuple[float, float]]] | None = None  # made once a kernel waited
    found = []
    for run, plan, ready in waited:
        if len(ran[run.device]) < 2:  # its device ran nothing else: it waited for nothing
            continue
        others = [i for i in ran[run.device] if i != (run.run_start, run.end)]
        wait = _overlap(others, ready, run.start)
        if wait < WAIT_MIN_S:
            continue
        if busy is None:
            busy = _intervals([*kernels, *transfers])
        idle = [d for d in plan.estimates if d != run.device
                and _overlap(busy.get(d, []), ready, run.start) < 0.1 * wait]
        if idle:
            found.append((run, idle[0], wait))
    return found


def _waiting(report: Report, profile: Profile, events: Any) -> Iterator[Suggestion]:
    by_pair: dict[tuple[str, str], list[float]] = {}
    for run, idle, wait in waits(profile, events):
        by_pair.setdefault((run.device, idle), []).append(wait)
    for (device, idle), found in by_pair.items():
        share = sum(found) / report.wall_s if report.wall_s > 0 else 0.0
        if share >= WAIT_SHARE:
            yield Suggestion("waiting", f"{len(found)} kernel(s) waited for {device} "
                             f"({sum(found) * 1e3:.1f} ms, {_pct(share)} of the wall time) while "
                             f"{idle} was idle: pin some of them to {idle} (hm.device) or let the "
                             "scheduler spread them (policy 'auto')", share)


#: a rule is asked where its figure is within this factor of its threshold: the rule's own
#: test (a share, rounded) then decides, so skipping one never drops a suggestion
_ASK = 1 - 1e-9


def suggestions(report: Report, profile: Profile, events: Any = None) -> list[Suggestion]:
    """Every rule's suggestions, the costliest kinds first (``events``: the profile's
    ``snapshot()`` where the caller has taken one). A rule whose figure is below its
    threshold is not asked (a report per cell, most of them quiet)."""
    wall = report.wall_s
    near = wall * _ASK if wall > 0 else float("inf")
    found: list[Suggestion] = []
    if any(d.copy_s >= COPY_SHARE * near for d in report.devices):
        found += _copies(report)
    if sum(d.compile_s for d in report.devices) >= COMPILE_SHARE * near:
        found += _compile(report)
    found += _waiting(report, profile, events)
    if report.no_device_s >= NO_DEVICE_SHARE * near:
        found += _no_device(report)
    if any(k.roofline is not None and k.run_s >= KERNEL_SHARE * near for k in report.kernels):
        found += _peaks(report)
    return found
