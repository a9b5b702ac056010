"""Which (signature, device) pairs failed: those are left out of the candidates."""

from __future__ import annotations

import threading


class HealthRegistry:
    """Per-process record of kernel failures; thread-safe.

    A failure marks only the (signature, device) pair unhealthy: the same device keeps
    running other kernels, and the same kernel moves to the next-best device.
    """

    def __init__(self) -> None:
        self._failures: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def mark_failed(self, signature: str, device: str, error: BaseException | str | None = None) -> None:
        """Record that ``signature`` failed on ``device`` (the error's text is kept for explain)."""
        if isinstance(error, BaseException):
            text = f"{type(error).__name__}: {error}"
        else:
            text = str(error or "failed")
        with self._lock:
            self._failures[(signature, device)] = text

    def healthy(self, signature: str, device: str) -> bool:
        return (signature, device) not in self._failures

    def failure(self, signature: str, device: str) -> str | None:
        """The recorded error of an unhealthy pair, or ``None``."""
        return self._failures.get((signature, device))

    def failures(self) -> dict[tuple[str, str], str]:
        with self._lock:
            return dict(self._failures)

    def clear(self, signature: str | None = None, device: str | None = None) -> None:
        """Forget failures (all, or those matching ``signature`` and/or ``device``)."""
        with self._lock:
            for key in [k for k in self._failures
                        if (signature is None or k[0] == signature) and (device is None or k[1] == device)]:
                del self._failures[key]
