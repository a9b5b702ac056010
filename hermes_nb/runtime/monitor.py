"""Load snapshots of every device, and a low-overhead sampler keeping a short history."""

from __future__ import annotations

import threading
from collections import deque

from hermes_nb.backends import devices
from hermes_nb.backends.load import LoadSnapshot


def load() -> list[LoadSnapshot]:
    """A snapshot of every device's queue, busy fraction, expected time until free and
    memory in use.

    >>> import hermes_nb as hm
    >>> [s.device for s in hm.load()][0]
    'cpu:0'
    """
    return [d.load() for d in devices()]


class LoadSampler:
    """Samples :func:`load` every ``interval_s`` on a daemon thread, keeping the last
    ``history_s`` seconds per device; stop it with :meth:`stop` (or use it as a context)."""

    def __init__(self, interval_s: float = 0.5, history_s: float = 60.0) -> None:
        if interval_s <= 0 or history_s <= 0:
            raise ValueError("LoadSampler: interval_s and history_s must be > 0")
        self.interval_s = interval_s
        size = max(1, int(history_s / interval_s))
        self.history: dict[str, deque[LoadSnapshot]] = {
            d.id: deque(maxlen=size) for d in devices()
        }
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LoadSampler:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="hermes-load-sampler",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def sample(self) -> None:
        for snapshot in load():
            self.history.setdefault(snapshot.device, deque(maxlen=1)).append(snapshot)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> LoadSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
