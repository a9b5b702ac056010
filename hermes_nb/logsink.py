"""Hermes' log records, kept on disk for other processes: the lab panel's log section.

The Jupyter server cannot see a kernel's records (``hm.logs()`` lives in the kernel), so
each Hermes process writes its records to the table ``logs`` of the performance history's
SQLite file (``cache_dir()/perf_history.sqlite3``, next to the runs the panel reads).

Nothing of it runs where records are made: :func:`start` asks ``logrecords`` to spool new
records (an append under the lock it already takes), and one background thread, asleep
until the spool holds records, writes them ``FLUSH_DELAY_S`` later in one transaction, and
at exit. The table keeps the newest :data:`KEEP` records of all processes. A database that
cannot be written now (locked, read-only) costs the records spooled meanwhile, never an
error: this module logs nothing itself, so a failing write can never feed itself records.

The server side reads them with :func:`read_records`, newest first, filtered.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import socket
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hermes_nb import logrecords
from hermes_nb.cache import HISTORY_PREFIX, cache_dir

#: records kept in the table (of every process together); older ones are pruned on write
KEEP = 5000
#: how long the thread waits after the first new record, so a burst is one transaction
FLUSH_DELAY_S = 0.25
#: records held in memory at most between writes
SPOOL = 10_000
#: set (to anything) to keep this process's records out of the file
OFF_ENV = "HERMES_NB_NO_LOG_SINK"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS logs (
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    level TEXT NOT NULL,
    levelno INTEGER NOT NULL,
    device TEXT NOT NULL,
    kernel TEXT NOT NULL,
    category TEXT NOT NULL,
    message TEXT NOT NULL,
    logger TEXT NOT NULL,
    detail TEXT NOT NULL,
    worker TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    jupyter_kernel TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS logs_by_time ON logs (time)"""
_COLUMNS = ("time", "level", "levelno", "device", "kernel", "category", "message", "logger",
            "detail", "worker", "host", "pid", "jupyter_kernel")
_KERNEL_FILE_RE = re.compile(r"kernel-([0-9a-f-]+)\.json$")


def default_path() -> Path:
    """The performance history's file (``$HERMES_NB_CACHE_DIR`` honoured)."""
    return cache_dir(f"{HISTORY_PREFIX}.sqlite3")


def jupyter_kernel_id() -> str:
    """The id of the Jupyter kernel this process is (from its connection file), else ``""``.

    >>> jupyter_kernel_id() if "ipykernel" not in __import__("sys").modules else ""
    ''
    """
    app = sys.modules.get("ipykernel.kernelapp")
    try:
        if app is None or not app.IPKernelApp.initialized():
            return ""
        found = _KERNEL_FILE_RE.search(app.IPKernelApp.instance().connection_file or "")
    except Exception:  # an unusual kernel: the records are kept without its id
        return ""
    return found.group(1) if found else ""


def _connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=1.0, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 1000")
        conn.execute("PRAGMA journal_mode = WAL")
        for statement in _SCHEMA.split(";"):
            conn.execute(statement)
    except BaseException:
        conn.close()
        raise
    return conn


class LogSink:
    """Writes the spooled records of this process to ``path`` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, keep: int = KEEP) -> None:
        self.path = default_path() if path is None else Path(path)
        self.keep = keep
        self.written = 0
        self.dropped = 0
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._ids: tuple[str, int, str] | None = None  # (host, pid, Jupyter kernel id)

    def flush(self) -> int:
        """Write what the spool holds in one transaction; returns how many were written."""
        with self._lock:
            batch = logrecords.drain_spool()
            if not batch:
                return 0
            try:
                self._write(batch)
            except (sqlite3.Error, OSError):  # locked, read-only, gone: these are lost
                self.dropped += len(batch)
                self._close()
                return 0
            self.written += len(batch)
            return len(batch)

    def _write(self, batch: list[logrecords.Record]) -> None:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = _connect(self.path)
        if self._ids is None or self._ids[1] != os.getpid():
            self._ids = (socket.gethostname(), os.getpid(), jupyter_kernel_id())
        host, pid, kernel_id = self._ids
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                f"INSERT INTO logs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                [(r.time, r.level, r.levelno, r.device, r.kernel, r.category, r.message, r.logger,
                  r.detail, r.worker, host, pid, kernel_id) for r in batch])
            conn.execute("DELETE FROM logs WHERE id <= (SELECT id FROM logs ORDER BY id DESC "
                         "LIMIT 1 OFFSET ?)", (self.keep,))
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Write what is left and close the file (it reopens on the next write)."""
        self.flush()
        with self._lock:
            self._close()


_sink: LogSink | None = None
_thread: threading.Thread | None = None


def _run(sink: LogSink) -> None:
    while True:
        logrecords.spooled.wait()
        if _sink is not sink:  # stopped (or replaced) meanwhile
            return
        time.sleep(FLUSH_DELAY_S)  # let a burst (a build log, a fallback) gather
        if _sink is not sink:
            return
        sink.flush()


def start(path: str | os.PathLike[str] | None = None, keep: int = KEEP) -> LogSink | None:
    """Spool this process's records and write them to ``path`` in the background; the
    sink (the running one, if started already), or ``None`` in a process that keeps them
    in memory only (the isolated build worker, whose output its parent records, or with
    ``HERMES_NB_NO_LOG_SINK`` set)."""
    global _sink, _thread
    if os.environ.get("HERMES_IN_WORKER") or os.environ.get(OFF_ENV):
        return None
    if _sink is not None:
        return _sink
    _sink = LogSink(path, keep)
    logrecords.open_spool(SPOOL, saved_to=f"{socket.gethostname()}:{_sink.path.resolve()}")
    _thread = threading.Thread(target=_run, args=(_sink,), name="hermes-log-sink", daemon=True)
    _thread.start()
    return _sink


def stop() -> None:
    """Write what is spooled, then stop spooling and writing."""
    global _sink
    sink, _sink = _sink, None
    if sink is not None:
        sink.close()
    logrecords.close_spool()
    logrecords.spooled.set()  # wake the thread: it sees it is no longer the sink and ends


def flush() -> int:
    """Write what is spooled now (tests, or before reading the file in this process)."""
    return _sink.flush() if _sink is not None else 0


@atexit.register
def _at_exit() -> None:
    with contextlib.suppress(Exception):
        if _sink is not None:
            _sink.close()


def _forked() -> None:  # the child has no writer thread: it keeps its records in memory
    global _sink
    _sink = None
    logrecords.close_spool()


os.register_at_fork(after_in_child=_forked)


def read_records(path: str | os.PathLike[str] | None = None, *, since: float | None = None,
                 level: str | int | None = None, device: str | None = None,
                 kernel: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """The stored records, newest first: at or after ``since`` (epoch seconds), at ``level``
    or above, on ``device`` (also a worker's ``addr/device``), of a kernel whose name
    contains ``kernel``; at most ``limit``. A file or table not there yet holds none.

    >>> read_records("/nonexistent/perf_history.sqlite3")
    []
    """
    path = default_path() if path is None else Path(path)
    floor = logrecords._level_of(level)  # ValueError naming the allowed levels
    if not 1 <= limit <= KEEP:
        raise ValueError(f"read_records: limit={limit} is not between 1 and {KEEP}")
    if not path.exists():
        return []
    where, args = ["levelno >= ?"], [floor]
    if since is not None:
        where.append("time >= ?")
        args.append(since)
    if device:
        where.append("(device = ? OR device LIKE ? ESCAPE '\\')")
        args += [device, "%/" + _like(device)]
    if kernel:
        where.append("instr(kernel, ?) > 0")
        args.append(kernel)
    sql = (f"SELECT id, {', '.join(_COLUMNS)} FROM logs WHERE {' AND '.join(where)} "
           "ORDER BY time DESC, id DESC LIMIT ?")
    conn = sqlite3.connect(str(path), timeout=1.0)
    try:
        rows = conn.execute(sql, [*args, limit]).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # no process has written a record yet
            return []
        raise
    finally:
        conn.close()
    return [dict(zip(("id", *_COLUMNS), row)) for row in rows]


def stored_choices(path: str | os.PathLike[str] | None = None, limit: int = 100
                   ) -> dict[str, list[str]]:
    """The devices and kernels the stored records name (what a filter can choose), each
    sorted, at most ``limit`` of each.

    >>> stored_choices("/nonexistent/perf_history.sqlite3")
    {'devices': [], 'kernels': []}
    """
    path = default_path() if path is None else Path(path)
    found: dict[str, list[str]] = {"devices": [], "kernels": []}
    if not path.exists():
        return found
    conn = sqlite3.connect(str(path), timeout=1.0)
    try:
        for key, column in (("devices", "device"), ("kernels", "kernel")):
            found[key] = [row[0] for row in conn.execute(
                f"SELECT DISTINCT {column} FROM logs WHERE {column} != '' ORDER BY {column} "
                "LIMIT ?", (limit,))]
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
    finally:
        conn.close()
    return found


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


__all__ = ["KEEP", "LogSink", "default_path", "flush", "jupyter_kernel_id", "read_records",
           "start", "stop", "stored_choices"]
