"""What one graph execution did: each kernel's device, times, estimate and failures."""

from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass, field


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

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Profile:
    """The kernels of one execution, in the order they finished."""

    kernels: list[KernelRun] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, run: KernelRun) -> None:
        with self._lock:
            self.kernels.append(run)

    @property
    def seconds(self) -> float:
        return (self.finished or time.perf_counter()) - self.started

    def __str__(self) -> str:
        lines = [f"Profile: {len(self.kernels)} kernel(s) in {self.seconds * 1e3:.2f} ms"]
        for k in self.kernels:
            failed = f"; failed first on {', '.join(k.failures)}" if k.failures else ""
            lines.append(f"  {k.key:<28} {k.device:<10} {k.seconds * 1e3:9.3f} ms{failed}")
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
            f"<td>{'' if k.estimate_s is None else f'{k.estimate_s * 1e3:.3f}'}</td>"
            f"<td>{html.escape(k.reason)}</td><td>{html.escape(', '.join(k.failures))}</td></tr>"
            for k in kernels
        )
        return (
            f"<div class='hermes-profile'><b>Profile</b>: {len(kernels)} kernel(s) in "
            f"{self.seconds * 1e3:.2f} ms<table><thead><tr><th>kernel</th><th>op</th>"
            "<th>device</th><th>ms</th><th>estimate ms</th><th>why</th><th>failed first on</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></div>"
        )


_profiles: dict[int, Profile] = {}
_last: list[Profile] = []
_ids_lock = threading.Lock()
_next_id = [0]


def begin() -> int:
    with _ids_lock:
        _next_id[0] += 1
        run_id = _next_id[0]
        _profiles[run_id] = Profile()
    return run_id


def record(run_id: int, run: KernelRun) -> None:
    profile = _profiles.get(run_id)  # absent on a distributed worker: nothing to add to
    if profile is not None:
        profile.add(run)


def end(run_id: int) -> Profile:
    with _ids_lock:
        profile = _profiles.pop(run_id)
    profile.finished = time.perf_counter()
    _last[:] = [profile]
    return profile


def last_profile() -> Profile | None:
    """The profile of the most recent execution in this process."""
    return _last[0] if _last else None
