"""Native compilers behind a process boundary.

A driver's compiler can abort, segfault or hang (PoCL 3.0 on AVX-512 CPUs does all
three). Hermes therefore runs every *new* build and first launch in a long-lived worker
process (``python -m hermes_nb.backends.worker``) and only repeats it in the user's process
once it has survived there; the driver's on-disk cache makes the repeat cheap. A crash or
a time-out kills only the worker: the caller gets :class:`WorkerCrashed` /
:class:`WorkerTimeout` and the next call starts a fresh worker.

The protocol is length-prefixed pickles over the worker's stdin/stdout; its stderr (the
compilers' raw output) goes to a log file in the cache directory, never to the terminal.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hermes_nb import logrecords
from hermes_nb.settings import env_flag, env_float

_HEADER = struct.Struct("!Q")


class WorkerCrashed(RuntimeError):
    """The isolated worker died (a signal or an exit) while running a job."""

    def __init__(self, message: str, *, returncode: int | None, log_tail: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.log_tail = log_tail

    @property
    def signal_name(self) -> str:
        rc = self.returncode
        if rc is not None and rc < 0:
            try:
                return signal.Signals(-rc).name
            except ValueError:
                return f"signal {-rc}"
        return f"exit status {rc}"

    @property
    def killed_from_outside(self) -> bool:
        """Whether a signal sent to the worker ended it (its session or process group shut
        down, the OOM killer), not one its own code raised: no sign of a damaged cache."""
        rc = self.returncode
        return rc is not None and rc < 0 and -rc in _OUTSIDE_SIGNALS


#: the signals that end a process from outside: a kernel's shutdown, a terminal's hang-up,
#: the OOM killer (a failing driver raises SIGSEGV, SIGABRT, SIGBUS, SIGILL or SIGFPE)
_OUTSIDE_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


class WorkerTimeout(WorkerCrashed):
    """The job ran past its time limit; the worker was killed."""


class WorkerCancelled(RuntimeError):
    """The job was abandoned (the user interrupted the run); the worker was killed."""


class WorkerJobError(RuntimeError):
    """The job raised an ordinary exception inside the worker (e.g. a build log error)."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


def enabled() -> bool:
    """Whether new builds go through the worker (``HERMES_ISOLATE=0`` turns it off)."""
    return env_flag("HERMES_ISOLATE", True)


def default_timeout() -> float:
    """Seconds a job may take (``HERMES_BUILD_TIMEOUT``, default 120)."""
    return env_float("HERMES_BUILD_TIMEOUT", 120.0, minimum=0.001)


def _send(stream: Any, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            raise TimeoutError
        chunk = os.read(fd, n - got)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class Worker:
    """One isolated worker process, started on first use and restarted after a crash."""

    def __init__(self, log_path: Path) -> None:
        self._log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._cancelled = False

    def call(self, job: str, *args: Any, timeout: float | None = None,
             device: str = "", kernel: str = "") -> Any:
        """Run ``job(*args)`` from ``hermes_nb.backends.worker`` in the worker process; what
        it wrote to stderr meanwhile (the compiler's chatter) becomes a log record."""
        with self._lock:
            start = self._log_size()
            try:
                return self._call(job, args, timeout)
            finally:
                logrecords.worker_output(self._log_since(start), device, kernel, job)

    def _log_size(self) -> int:
        try:
            return self._log_path.stat().st_size
        except OSError:
            return 0

    def _log_since(self, start: int, limit: int = 64 << 10) -> str:
        try:
            with open(self._log_path, "rb") as f:
                f.seek(start)
                return f.read(limit).decode(errors="replace")
        except OSError:
            return ""

    def _call(self, job: str, args: tuple[Any, ...], timeout: float | None) -> Any:
        """One job (the caller holds the lock)."""
        limit = default_timeout() if timeout is None else timeout
        proc = self._ensure()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _send(proc.stdin, (job, args))
            deadline = time.monotonic() + limit
            (size,) = _HEADER.unpack(_read_exact(proc.stdout.fileno(), _HEADER.size, deadline))
            status, payload = pickle.loads(_read_exact(proc.stdout.fileno(), size, deadline))
        except TimeoutError:
            self._kill()
            raise WorkerTimeout(f"{job} ran past {limit:g} s", returncode=None,
                                log_tail=self._log_tail()) from None
        except (EOFError, BrokenPipeError, OSError):
            rc = self._reap()
            if self._cancelled:
                self._cancelled = False
                raise WorkerCancelled(f"{job}: abandoned by an interrupt") from None
            raise WorkerCrashed(f"{job}: worker died", returncode=rc,
                                log_tail=self._log_tail()) from None
        if status == "ok":
            return payload
        raise WorkerJobError(*payload)

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(self._log_path, "ab")  # noqa: SIM115 - the child owns it
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "hermes_nb.backends.worker"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                    env={**os.environ, "HERMES_IN_WORKER": "1"},
                )  # fmt: skip
            finally:
                log.close()
        return self._proc

    def _reap(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        try:
            rc = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return rc

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
        self._reap()

    def _log_tail(self, limit: int = 400) -> str:
        try:
            text = self._log_path.read_bytes()[-limit:].decode(errors="replace")
        except OSError:
            return ""
        return text.strip()

    def cancel(self) -> None:
        """Abandon the job in flight (from any thread): kill the worker, so a compile the
        user interrupted does not keep the device busy; the next job starts a new one."""
        proc = self._proc
        if proc is not None and proc.poll() is None and self._lock.locked():
            self._cancelled = True
            proc.kill()

    def close(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self._proc.stdin.close()
            self._kill()

    def forget(self) -> None:
        """Drop the process handle without touching it (in a forked child)."""
        self._proc = None
        self._lock = threading.Lock()


_worker: Worker | None = None
_worker_lock = threading.Lock()


def worker() -> Worker:
    """The process-wide isolated worker."""
    global _worker
    with _worker_lock:
        if _worker is None:
            from hermes_nb.cache import cache_dir

            _worker = Worker(cache_dir("logs", "build-worker.log"))
            import atexit

            atexit.register(_worker.close)
        return _worker


def cancel_running() -> None:
    """Abandon whatever the worker is building (after a KeyboardInterrupt)."""
    if _worker is not None:
        _worker.cancel()


def _after_fork_in_child() -> None:
    if _worker is not None:
        _worker.forget()


os.register_at_fork(after_in_child=_after_fork_in_child)
