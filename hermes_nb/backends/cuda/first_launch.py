"""CuPy compiles a kernel at its first launch, not when it is made: that launch is timed
as the kernel's build (``compiler.progress.building``), so a run's profile shows it as a
compile and the scheduler's history leaves it out."""

from __future__ import annotations

import threading
from typing import Any

from hermes_nb.compiler.progress import building


class FirstLaunchTimed:
    """``kernel`` whose first call (the one that compiles) is reported as a build of ``what``."""

    def __init__(self, kernel: Any, what: str) -> None:
        self._kernel = kernel
        self._what = what
        self._compiled = False
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._compiled:
            return self._kernel(*args, **kwargs)
        with self._lock:
            if self._compiled:
                return self._kernel(*args, **kwargs)
            with building(self._what):
                out = self._kernel(*args, **kwargs)
            self._compiled = True
            return out
