"""Progress of long kernel builds, through the ``hermes_nb.compiler`` logger.

A build still running after ``PROGRESS_AFTER_S`` seconds logs one INFO line naming what is
built ("building fused_stencil kernel for opencl:0 …"), and another when it ends; shorter
builds log nothing above DEBUG. Nothing is printed: the application's logging config
decides where the lines go.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

__all__ = ["PROGRESS_AFTER_S", "building", "log"]

log = logging.getLogger("hermes_nb.compiler")

PROGRESS_AFTER_S = 2.0


@contextlib.contextmanager
def building(what: str, after: float | None = None) -> Iterator[None]:
    """Wrap a build of ``what``: log it if it takes longer than ``after`` seconds."""
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
    try:
        yield
    finally:
        timer.cancel()
        elapsed = time.perf_counter() - start
        if announced.is_set():
            log.info("built %s in %.1f s", what, elapsed)
        else:
            log.debug("built %s in %.2f s", what, elapsed)
