"""The live load monitor: per-device busy %, memory and queue, updating while shown,
and the kernel builds running now ("compiling fused_stencil on opencl:0 (1.2 s)")."""

from __future__ import annotations

import atexit
import html
import threading
import time
import weakref

import ipywidgets

from hermes_nb.runtime.monitor import LoadSampler
from hermes_nb.runtime.profile import compiling_now
from hermes_nb.widgets.fallback import view_bundle
from hermes_nb.widgets.load import load_figure, stop_load, stream_load
from hermes_nb.widgets.show import ViewWidget, as_widget


class LoadMonitor(ipywidgets.VBox):
    """Samples every device's load each ``interval_s`` (2 Hz by default) on one daemon thread
    and streams the samples into the shown figures, keeping the last ``history_s`` seconds.

    Sampling stops on :meth:`stop`, on :meth:`close` (also what closing the widget does), and
    when the Python process exits (a kernel shutdown)."""

    def __init__(self, interval_s: float = 0.5, history_s: float = 60.0) -> None:
        self.sampler = LoadSampler(interval_s=interval_s, history_s=history_s)
        self.sampler.sample()  # the figures need a first sample to lay out every device
        self.figure = load_figure(self.sampler)
        self.view: ViewWidget = as_widget(self.figure, "hermes-load-monitor",
                                          f"Hermes load monitor: {', '.join(self.sampler.history)}")
        self.status = ipywidgets.HTML(self._status_text(running=True))
        super().__init__([self.view, self.status])
        self.updates = 0
        self.cpu_seconds = 0.0  # CPU time the sampling thread has used: its cost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hermes-load-monitor",
                                        daemon=True)
        self._thread.start()
        atexit.register(_stop_at_exit, weakref.WeakMethod(self.stop))  # a kernel shutdown

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _status_text(self, running: bool) -> str:
        every = f"every {self.sampler.interval_s:g} s"
        text = f"<small>{'sampling ' + every if running else 'stopped'}</small>"
        if running:
            now = time.perf_counter()
            # a device compiling is busy for the user, though its queue looks idle
            text += "".join(f"<br><small>{html.escape(c.label)} ({now - c.start:.1f} s)</small>"
                            for c in compiling_now())
        return text

    def _loop(self) -> None:
        while not self._stop.wait(self.sampler.interval_s):
            begin = time.thread_time()
            self.sampler.sample()
            stream_load(self.figure, self.sampler)
            status = self._status_text(running=True)
            if status != self.status.value:
                self.status.value = status
            self.updates += 1
            self.cpu_seconds += time.thread_time() - begin

    def stop(self) -> None:
        """Stop sampling; the figures keep the history they show, and the queue bars, which
        would show a stale queue, drop to zero."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        stop_load(self.figure)
        self.status.value = self._status_text(running=False)

    def __repr__(self) -> str:
        return self.view.summary

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object] | None:
        # the saved notebook keeps the figures as they were shown, and a one-line summary
        bundle = super()._repr_mimebundle_(**kwargs)
        return None if bundle is None else view_bundle(bundle, self.figure, self.view.summary,
                                                       self.view._dom_classes)

    def close(self) -> None:
        self.stop()
        self.view.close()
        self.status.close()
        super().close()


def _stop_at_exit(stop: weakref.WeakMethod) -> None:
    method = stop()
    if method is not None:  # the monitor still exists
        method()


def load_monitor(interval_s: float = 0.5, history_s: float = 60.0) -> LoadMonitor:
    """A live :class:`LoadMonitor` of every device; show it as a cell's last value and
    ``.close()`` it when done."""
    if interval_s <= 0 or history_s <= 0:
        raise ValueError(f"load_monitor: interval_s and history_s must be > 0, got "
                         f"interval_s={interval_s}, history_s={history_s}")
    return LoadMonitor(interval_s=interval_s, history_s=history_s)
