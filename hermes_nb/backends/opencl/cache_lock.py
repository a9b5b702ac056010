"""A readers-writer lock, across processes, on one driver cache folder.

Every process that builds or first launches a kernel holds it shared while the driver
writes into the folder; emptying the folder after a crash holds it exclusive. So one
notebook's repair never deletes the files another notebook's driver is compiling or linking
into (the driver would abort that other process).

``flock`` locks belong to an open file, so each thread opens its own; a thread that holds
the lock shared and must empty the folder converts its own lock (``flock`` drops the shared
lock first, so two converting processes cannot deadlock).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # no flock (Windows): one process per cache is assumed
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("hermes_nb.backends")

LOCK_FILE = ".hermes-lock"
#: marks a driver cache folder Hermes made (only such a folder is ever emptied or trimmed)
OWNED_FILE = ".hermes-owned"
#: the folder of the build markers (``guard``) inside a driver cache folder
MARKERS_DIR = "hermes-verified"


class CacheLock:
    """Shared for builds and first launches, exclusive for emptying ``folder``."""

    def __init__(self, folder: Path) -> None:
        self._path = folder / LOCK_FILE
        self._local = threading.local()

    def _open(self) -> int | None:
        if fcntl is None:
            return None
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # an unwritable cache: the driver builds in memory anyway
            log.debug("hermes: no cache lock at %s: %s", self._path, exc)
            return None

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock shared (re-entrant within a thread)."""
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self._local.fd = self._open()
            if self._local.fd is not None:
                fcntl.flock(self._local.fd, fcntl.LOCK_SH)
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth -= 1
            if self._local.depth == 0 and self._local.fd is not None:
                os.close(self._local.fd)  # closing the file releases its lock
                self._local.fd = None

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the lock exclusive; a thread holding it shared converts and then goes back."""
        held = getattr(self._local, "fd", None) if getattr(self._local, "depth", 0) else None
        fd = held if held is not None else self._open()
        if fd is None:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            if held is not None:
                fcntl.flock(fd, fcntl.LOCK_SH)
            else:
                os.close(fd)

    @contextlib.contextmanager
    def try_exclusive(self) -> Iterator[bool]:
        """Hold the lock exclusive if nobody (no other process, no thread of this one)
        holds it now; yields whether it is held. Without ``flock``, never held."""
        fd = self._open()
        if fd is None:
            yield False
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held shared or exclusive elsewhere
                yield False
                return
            yield True
        finally:
            os.close(fd)
