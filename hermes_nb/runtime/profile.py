"""What one graph execution did: each kernel's device, times, estimate and failures, and
the builds (compiles, self-test launches) kernels paid for before they ran.

A kernel's build is its own event (:class:`CompileRun`): a kernel's run time
(:attr:`KernelRun.seconds`) leaves it out, and so does what the scheduler learns from the
run, so a first run's compile never becomes an estimate.
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hermes_nb import logrecords

if TYPE_CHECKING:
    from hermes_nb.runtime.plan import Plan
    from hermes_nb.runtime.work import RunWork


@dataclass(frozen=True)
class KernelRun:
    key: str
    op: str
    device: str
    start: float  # perf_counter seconds
    end: float
    estimate_s: float | None
    reason: str
    failures: tuple[str, ...] = ()  # "device: error" for each device that failed it first
    compile_s: float = 0.0  # builds between start and end (its CompileRun events)

    @property
    def seconds(self) -> float:
        """The kernel's run time: from start to end, less what it spent building."""
        return max(self.end - self.start - self.compile_s, 0.0)

    @property
    def wall_s(self) -> float:
        """Start to end, any compile included."""
        return self.end - self.start

    @property
    def run_start(self) -> float:
        """When the kernel itself ran: builds come before a kernel's launch."""
        return min(self.start + self.compile_s, self.end)

    @property
    def kernel(self) -> str:
        """The kernel's key; a tile of a kernel split across devices is ``<key>[start:stop]``."""
        return self.key.split("[", 1)[0]

    @property
    def is_tile(self) -> bool:
        return self.kernel != self.key


@dataclass(frozen=True)
class TransferRun:
    """One copy of a kernel input from the device holding it to the device running the kernel."""

    key: str  # the value copied
    source: str
    device: str  # where it was copied to
    start: float  # perf_counter seconds
    end: float
    nbytes: int

    @property
    def seconds(self) -> float:
        return self.end - self.start


#: ends the key of a kernel timed by background calibration (``runtime.explore``)
BACKGROUND_SUFFIX = "@calibration"


@dataclass(frozen=True)
class CompileRun:
    """One build a kernel needed on a device before it ran (paid once per kernel and
    device: a later run finds it in the backend's cache)."""

    key: str  # the kernel it was built for
    op: str
    device: str
    what: str  # what was built, as the backend names it
    kind: str  # "compile", or "self-test" (a first launch in the isolated worker)
    start: float  # perf_counter seconds
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def label(self) -> str:
        """``"compiling fused_stencil on opencl:0"``."""
        verb = "compiling" if self.kind == "compile" else "self-testing"
        where = " (background calibration)" if self.key.endswith(BACKGROUND_SUFFIX) else ""
        return f"{verb} {self.op} on {self.device}{where}"


class CompileRecorder:
    """Collects the builds of one kernel launch on one device (a ``CompileListener`` of
    ``compiler.progress``); while one runs, :func:`compiling_now` names it."""

    def __init__(self, key: str, op: str, device: str) -> None:
        self.key, self.op, self.device = key, op, device
        self.events: list[CompileRun] = []

    def started(self, what: str, kind: str, start: float) -> None:
        with _active_lock:
            _active[id(self)] = CompileRun(self.key, self.op, self.device, what, kind, start, start)

    def finished(self, what: str, kind: str, start: float, end: float) -> None:
        with _active_lock:
            _active.pop(id(self), None)
        self.events.append(CompileRun(self.key, self.op, self.device, what, kind, start, end))
        logrecords.emit(logging.DEBUG, f"{'built' if kind == 'compile' else kind} {what} in "
                        f"{(end - start) * 1e3:.1f} ms", logger="hermes_nb.runtime",
                        device=self.device, kernel=self.key,
                        category="compile" if kind == "compile" else "selftest")

    @property
    def seconds(self) -> float:
        return sum(e.seconds for e in self.events)


_active: dict[int, CompileRun] = {}
_active_lock = threading.Lock()


def compiling_now() -> list[CompileRun]:
    """The builds running at this moment (``end`` is their start), e.g. for a live monitor."""
    with _active_lock:
        return list(_active.values())


@dataclass
class Profile:
    """The kernels of one execution, in the order they finished, and the copies between devices."""

    kernels: list[KernelRun] = field(default_factory=list)
    transfers: list[TransferRun] = field(default_factory=list)
    #: the builds kernels paid for in this run, in the order they finished
    compiles: list[CompileRun] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None
    #: the kernels this run placed (names are the keys of ``kernels``), without sources
    plan: Plan | None = None
    #: the kernels' FLOPs and the unfused graph's kernels and bytes, counted when planned
    work: RunWork | None = None
    #: the user's names of the values this run computed: pre-fusion node key -> variable
    variables: dict[str, str] = field(default_factory=dict)
    #: called (on a worker thread) with each kernel as it finishes, e.g. to move a progress bar
    on_kernel: Callable[[KernelRun], None] | None = field(default=None, repr=False)
    #: the Hermes log records emitted while it ran (any thread, the build worker, workers)
    log: logrecords.Records = field(default_factory=logrecords.Records, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _names: dict[str, str] | None = field(default=None, repr=False)

    def kernel_name(self, key: str) -> str:
        """The name views show for kernel ``key`` (or a tile of it), worked out once per run
        from the plan and the variables known when it began; ``""`` for a kernel not planned."""
        return self._planned_names().get(key.split("[", 1)[0], "")

    def _planned_names(self) -> dict[str, str]:
        """The planned kernels' names, worked out once (usually during the run, when the
        history names a run)."""
        if self._names is None:
            from hermes_nb.runtime.plan import kernel_names

            self._names = kernel_names(self.plan, self.variables)
        return self._names

    def add(self, run: KernelRun | TransferRun | CompileRun) -> None:
        with self._lock:
            if isinstance(run, CompileRun):
                self.compiles.append(run)
            else:
                (self.transfers if isinstance(run, TransferRun) else self.kernels).append(run)
        if self.on_kernel is not None and isinstance(run, KernelRun):
            self.on_kernel(run)

    def snapshot(self) -> tuple[list[KernelRun], list[TransferRun]]:
        """Copies of both lists: worker threads may still be appending."""
        with self._lock:
            return list(self.kernels), list(self.transfers)

    def compile_events(self) -> list[CompileRun]:
        """A copy of the builds so far."""
        with self._lock:
            return list(self.compiles)

    @property
    def compile_s(self) -> float:
        """Seconds spent building kernels in this run (summed over devices)."""
        return sum(c.seconds for c in self.compile_events())

    def per_kernel(self) -> dict[str, tuple[float, tuple[str, ...]]]:
        """Per kernel key: its measured seconds and the devices that ran it (the tiles of a
        kernel split across devices add up)."""
        seconds: dict[str, float] = {}
        devices: dict[str, list[str]] = {}
        for run in self.snapshot()[0]:
            seconds[run.kernel] = seconds.get(run.kernel, 0.0) + run.seconds
            ran = devices.setdefault(run.kernel, [])
            if run.device not in ran:
                ran.append(run.device)
        return {key: (seconds[key], tuple(devices[key])) for key in seconds}

    def kernel_names(self) -> dict[str, str]:
        """Per kernel key: the name views and traces show ("edges: blur5+sobel"); a kernel
        the plan does not hold keeps its op."""
        names = dict(self._planned_names())
        for run in self.snapshot()[0]:
            names.setdefault(run.kernel, run.op)
        return names

    @property
    def seconds(self) -> float:
        return (self.finished or time.perf_counter()) - self.started

    def _headline(self, n: int) -> str:
        compiled = self.compile_s
        built = f" ({compiled * 1e3:.2f} ms compiling)" if compiled else ""
        return f"{n} kernel(s) in {self.seconds * 1e3:.2f} ms{built}"

    def __str__(self) -> str:
        kernels = self.snapshot()[0]
        lines = [f"Profile: {self._headline(len(kernels))}"]
        for k in kernels:
            failed = f"; failed first on {', '.join(k.failures)}" if k.failures else ""
            built = f" + compile {k.compile_s * 1e3:.1f} ms" if k.compile_s else ""
            lines.append(f"  {k.key:<28} {k.device:<10} {k.seconds * 1e3:9.3f} ms{built}{failed}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: object, cycle: bool) -> None:
        # IPython's text view: the readable table, not the dataclass field dump
        p.text(str(self))  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        with self._lock:  # a copy: kernels may still be appended by worker threads
            kernels = list(self.kernels)
        rows = "".join(
            f"<tr><td>{html.escape(k.key)}</td><td>{html.escape(k.op)}</td>"
            f"<td>{html.escape(k.device)}</td><td>{k.seconds * 1e3:.3f}</td>"
            f"<td>{f'{k.compile_s * 1e3:.1f}' if k.compile_s else ''}</td>"
            f"<td>{'' if k.estimate_s is None else f'{k.estimate_s * 1e3:.3f}'}</td>"
            f"<td>{html.escape(k.reason)}</td><td>{html.escape(', '.join(k.failures))}</td></tr>"
            for k in kernels
        )
        return (
            f"<div class='hermes-profile'><b>Profile</b>: {html.escape(self._headline(len(kernels)))}"
            "<table><thead><tr><th>kernel</th><th>op</th>"
            "<th>device</th><th>ms</th><th>compile ms</th><th>estimate ms</th><th>why</th>"
            "<th>failed first on</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></div>"
        )


#: how many finished profiles :func:`recent_profiles` keeps
RECENT = 20

_profiles: dict[int, Profile] = {}
_last: list[Profile] = []
_recent: list[Profile] = []
_ids_lock = threading.Lock()
_next_id = [0]


#: the user's names of the values the next run computes (see :func:`naming`)
_naming: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("hermes_naming", default={})


@contextlib.contextmanager
def naming(variables: dict[str, str]) -> Iterator[None]:
    """Runs begun inside know ``variables`` (pre-fusion node key -> the user's name) from
    the start, so the history stores each kernel under its views' name."""
    token = _naming.set(variables)
    try:
        yield
    finally:
        _naming.reset(token)


def begin(plan: Plan | None = None,
          on_kernel: Callable[[KernelRun], None] | None = None,
          work: RunWork | None = None) -> int:
    with _ids_lock:
        _next_id[0] += 1
        run_id = _next_id[0]
        _profiles[run_id] = Profile(plan=plan, work=work, on_kernel=on_kernel,
                                    variables=dict(_naming.get()))
    logrecords.open_run(run_id)
    return run_id


def record(run_id: int, run: KernelRun | TransferRun | CompileRun) -> None:
    profile = _profiles.get(run_id)  # absent on a distributed worker: nothing to add to
    if profile is not None:
        profile.add(run)


def kernel_name(run_id: int, key: str) -> str:
    """The views' name of kernel ``key`` of run ``run_id`` (``""`` when the run is not here)."""
    found = _profiles.get(run_id)
    return found.kernel_name(key) if found is not None else ""


def end(run_id: int) -> Profile:
    with _ids_lock:
        profile = _profiles.pop(run_id)
    profile.finished = time.perf_counter()
    profile.log = logrecords.close_run(run_id)
    _last[:] = [profile]
    _recent[:] = [*_recent[-(RECENT - 1):], profile]
    return profile


def recent_profiles(until: Profile | None = None) -> list[Profile]:
    """The profiles of this process's last executions, oldest first, up to ``until`` (the
    last one by default); ``[until]`` when it is not one of them."""
    runs = list(_recent)
    if until is None:
        return runs
    at = next((i for i, p in enumerate(runs) if p is until), None)  # by identity
    return [until] if at is None else runs[:at + 1]


def running() -> bool:
    """Whether a graph is running in this process (a profile is open)."""
    with _ids_lock:
        return bool(_profiles)


def last_profile() -> Profile | None:
    """The profile of the most recent execution in this process."""
    return _last[0] if _last else None
