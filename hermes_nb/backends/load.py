"""Live load of one device: queued work, busy fraction and expected time until free.

Updated by the device's worker as work is submitted, starts and ends; cheap enough
to run on every kernel (a lock and a few additions).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

WINDOW_S = 1.0  # busy fraction is measured over the last second


@dataclass(frozen=True)
class LoadSnapshot:
    device: str
    queued: int  # submitted, not yet finished (running one included)
    busy_fraction: float  # of the last WINDOW_S seconds
    expected_free_s: float  # estimated seconds until the queue drains
    memory_in_use: int  # bytes held by the device's memory pool
    completed: int  # kernels finished since start
    timestamp: float


class LoadCounters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued = 0
        self._backlog_s = 0.0
        self._started_at: float | None = None
        self._running_estimate = 0.0
        # finished runs of the last WINDOW_S, in order (a device runs one kernel at a time),
        # and their total, so a snapshot costs the same however many kernels ran
        self._intervals: deque[tuple[float, float]] = deque()
        self._busy_total = 0.0
        self._completed = 0

    def submitted(self, estimate_s: float) -> None:
        with self._lock:
            self._queued += 1
            self._backlog_s += estimate_s

    def started(self, estimate_s: float) -> None:
        with self._lock:
            self._started_at = time.perf_counter()
            self._running_estimate = estimate_s
            self._backlog_s = max(0.0, self._backlog_s - estimate_s)

    def finished(self) -> None:
        now = time.perf_counter()
        with self._lock:
            if self._started_at is not None:
                self._intervals.append((self._started_at, now))
                self._busy_total += now - self._started_at
            self._forget_before(now - WINDOW_S)
            self._started_at = None
            self._running_estimate = 0.0
            self._queued -= 1
            self._completed += 1

    def _forget_before(self, since: float) -> None:
        """Drop the runs that ended before ``since`` (under the lock)."""
        while self._intervals and self._intervals[0][1] <= since:
            start, end = self._intervals.popleft()
            self._busy_total -= end - start
        if not self._intervals:
            self._busy_total = 0.0  # no rounding left over

    def snapshot(self, device: str, memory_in_use: int) -> LoadSnapshot:
        now = time.perf_counter()
        since = now - WINDOW_S
        with self._lock:
            self._forget_before(since)
            busy = self._busy_total  # less the part of the oldest run before the window
            if self._intervals:
                busy -= max(0.0, since - self._intervals[0][0])
            remaining = 0.0
            if self._started_at is not None:
                busy += now - max(self._started_at, since)
                remaining = max(0.0, self._running_estimate - (now - self._started_at))
            return LoadSnapshot(
                device=device,
                queued=self._queued,
                busy_fraction=min(1.0, busy / WINDOW_S),
                expected_free_s=remaining + self._backlog_s,
                memory_in_use=memory_in_use,
                completed=self._completed,
                timestamp=time.time(),
            )
