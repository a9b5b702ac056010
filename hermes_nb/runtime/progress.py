"""A progress bar of a run's finished kernels (tqdm: a widget in a notebook, text elsewhere)."""

from __future__ import annotations

import threading
import time
from typing import Any

from hermes_nb.runtime.profile import KernelRun

#: how long a run goes before its bar appears, with ``progress="auto"``
AUTO_DELAY_S = 1.0


class ProgressBar:
    """Counts finished kernels out of ``total``; the bar appears once ``delay_s`` has passed,
    so short runs print nothing and do not even build one (tqdm costs ~45 µs a bar). Tiles of
    a kernel split across devices count as that kernel. Labelled "hermes run", not "hermes:",
    which starts Hermes' error lines."""

    def __init__(self, total: int, delay_s: float) -> None:
        self._lock = threading.Lock()  # worker threads of several devices finish kernels
        self.total = total
        self.count = 0
        self._show_at = time.perf_counter() + delay_s
        self._bar: Any = None
        if delay_s <= 0:
            self._bar = self._new_bar()

    def _new_bar(self) -> Any:
        from tqdm.auto import tqdm

        options: dict[str, Any] = {"leave": False, "dynamic_ncols": True}
        if any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__):
            # in a notebook, a text line in one output rather than tqdm's widget: a saved
            # notebook shows text again, while a widget leaves "model not found" behind
            from tqdm.std import tqdm

            options = {"leave": False, "ncols": 80, "file": _OutputLine()}
        return tqdm(total=self.total, initial=self.count, desc="hermes run", unit="kernel", **options)

    def __call__(self, run: KernelRun) -> None:
        if run.is_tile:  # the gathered kernel counts, not its tiles
            return
        with self._lock:
            self.count += 1
            if self._bar is None and time.perf_counter() >= self._show_at:
                self._bar = self._new_bar()
            elif self._bar is not None:
                self._bar.update(1)

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()


class _OutputLine:
    """A file for tqdm that shows the last line written to it in one notebook output."""

    def __init__(self) -> None:
        from IPython.display import display

        self._output = display({"text/plain": ""}, raw=True, display_id=True)

    def write(self, text: str) -> None:
        line = text.replace("\r", "").strip()
        if line or text.strip("\n"):  # a line, or the blank tqdm writes to clear it
            self._output.update({"text/plain": line}, raw=True)

    def flush(self) -> None:
        pass


def progress_bar(setting: bool | str, total: int) -> ProgressBar | None:
    """The bar ``hm.options(progress=...)`` asks for, or None (off, or tqdm not installed)."""
    if setting is False or total == 0:
        return None
    try:
        import tqdm  # noqa: F401  (optional: a run must not fail for want of a bar)
    except ImportError:
        return None
    return ProgressBar(total, delay_s=0.0 if setting is True else AUTO_DELAY_S)
