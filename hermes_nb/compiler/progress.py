"""Progress of long kernel builds, through the ``hermes_nb.compiler`` logger.

A build still running after ``PROGRESS_AFTER_S`` seconds logs one INFO line naming what is
built ("building fused_stencil kernel for opencl:0 …"), and another when it ends; shorter
builds log nothing above DEBUG. Nothing is printed: the application's logging config
decides where the lines go.

Every backend's kernel cache wraps its builds in :func:`building`, so it is also the one
place that measures compile time: a :class:`CompileListener` installed with
:func:`recording` (the runtime opens one around each kernel's launch) hears each
outermost build that starts and finishes in its context, with its times.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Iterator
from typing import Protocol

__all__ = ["PROGRESS_AFTER_S", "CompileListener", "building", "log", "recording"]

log = logging.getLogger("hermes_nb.compiler")

PROGRESS_AFTER_S = 2.0


class CompileListener(Protocol):
    """Hears the builds run inside :func:`recording`; ``kind`` is ``"compile"`` or
    ``"self-test"`` (a first launch in the isolated worker)."""

    def started(self, what: str, kind: str, start: float) -> None: ...

    def finished(self, what: str, kind: str, start: float, end: float) -> None: ...


# a context variable, not a global: builds on other threads belong to other kernels
_listener: contextvars.ContextVar[CompileListener | None] = contextvars.ContextVar(
    "hermes_compile_listener", default=None)


@contextlib.contextmanager
def recording(listener: CompileListener) -> Iterator[None]:
    """Send the builds run in this context (this thread, until the block ends) to ``listener``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


@contextlib.contextmanager
def building(what: str, after: float | None = None, kind: str = "compile") -> Iterator[None]:
    """Wrap a build of ``what``: log it if it takes longer than ``after`` seconds, and
    report it to the listener of :func:`recording`, if any."""
    listener = _listener.get()
    # builds nested in this one (a cache calling another) are part of it, not events of their own
    token = _listener.set(None) if listener is not None else None
    delay = PROGRESS_AFTER_S if after is None else after
    start = time.perf_counter()
    announced = threading.Event()

    def announce() -> None:
        announced.set()
        log.info("building %s … (%.0f s so far)", what, time.perf_counter() - start)

    timer = threading.Timer(delay, announce)
    timer.daemon = True
    timer.start()
    log.debug("building %s", what)
    if listener is not None:
        listener.started(what, kind, start)
    try:
        yield
    finally:
        timer.cancel()
        end = time.perf_counter()
        elapsed = end - start
        if listener is not None and token is not None:
            _listener.reset(token)
            listener.finished(what, kind, start, end)
        if announced.is_set():
            log.info("built %s in %.1f s", what, elapsed)
        else:
            log.debug("built %s in %.2f s", what, elapsed)
