"""The performance history: every kernel run, kept in SQLite in the user cache directory.

Runs and link measurements are keyed by host and device: a cache directory shared by
several machines (a home on NFS) never lets one machine's ``opencl:0`` stand for
another's. Schema 1 files (no host) are migrated in place to schema 2, their rows
attributed to the host that opens them first; schema 2 files gain each run's kernel name
(schema 3, ``""`` for the runs recorded before).

Several processes (notebook kernels, Dask workers) share one file. Each opens it in
WAL mode with a busy timeout, and writes in short batched transactions: ``record()``
only appends to an in-memory batch (safe from any thread, no I/O), and the batch is
written when it is full, when it is older than ``flush_interval_s``, on ``flush()``
and at exit. A database that is corrupt is moved aside and rebuilt; one that stays
locked is bypassed (runs are kept in memory and retried later). Both cases emit a
:class:`PerfStoreWarning` and never raise.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import math
import os
import socket
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hermes_nb.cache import cache_dir

SCHEMA_VERSION = 3
DB_NAME = "perf_history.sqlite3"
#: rows kept per (signature, host, device); older runs are pruned on flush
KEEP_PER_PAIR = 512
#: a pair is pruned the first time a store writes it, then after every this many new rows:
#: a flush is then one insert for most batches, not one DELETE per kernel in them
PRUNE_EVERY = 64
#: pending runs kept in memory at most while the database is unavailable
MAX_PENDING = 10_000

_LINKS = """
CREATE TABLE IF NOT EXISTS links (
    host TEXT NOT NULL DEFAULT '',
    device TEXT NOT NULL,
    h2d_latency_s REAL NOT NULL,
    h2d_bytes_per_s REAL NOT NULL,
    d2h_latency_s REAL NOT NULL,
    d2h_bytes_per_s REAL NOT NULL,
    measured_at REAL NOT NULL,
    PRIMARY KEY (host, device)
)"""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    signature TEXT NOT NULL,
    device TEXT NOT NULL,
    size_key TEXT NOT NULL,
    nbytes INTEGER NOT NULL,
    flops REAL NOT NULL,
    bytes_moved INTEGER NOT NULL,
    seconds REAL NOT NULL,
    recorded_at REAL NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS runs_by_key ON runs (signature, host, device, id);
""" + _LINKS + ";"

#: schema 1 to 2: runs gain their host; links are keyed by (host, device)
_MIGRATE_1_TO_2 = (
    "ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT ''",
    "UPDATE runs SET host = :host",
    "DROP INDEX IF EXISTS runs_by_pair",
    "ALTER TABLE links RENAME TO links_v1",
    _LINKS,
    "INSERT INTO links SELECT :host, device, h2d_latency_s, h2d_bytes_per_s, d2h_latency_s, "
    "d2h_bytes_per_s, measured_at FROM links_v1",
    "DROP TABLE links_v1",
)
#: schema 2 to 3: runs gain the kernel's name as the notebook's views show it
_MIGRATE_2_TO_3 = ("ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT ''",)


@functools.cache
def local_host() -> str:
    """This machine's name, as runs recorded here are keyed (``""`` in a row means it too)."""
    return socket.gethostname() or "localhost"


def model_device(host: str, device: str) -> str:
    """How the model names ``device`` of ``host``: its plain id on this machine, else
    ``"host/device"``, so another machine's device never shares this one's estimates."""
    return device if host in ("", local_host()) else f"{host}/{device}"


class PerfStoreWarning(RuntimeWarning):
    """The performance database was corrupt (rebuilt) or locked/unwritable (bypassed)."""


@dataclass(frozen=True)
class Run:
    """One timed kernel run.

    ``bytes_moved`` counts the host↔device copies the run needed (0 when every input
    was resident); ``seconds`` is the kernel's own time, copies excluded.
    """

    signature: str
    device: str
    size_key: str
    nbytes: int
    flops: float
    seconds: float
    bytes_moved: int = 0
    recorded_at: float = 0.0
    #: the machine the device is in; ``""`` for this one
    host: str = ""
    #: the kernel's name in the views ("edges: blur5+sobel"); ``""`` when none was known
    name: str = ""


@dataclass(frozen=True)
class LinkRecord:
    device: str
    h2d_latency_s: float
    h2d_bytes_per_s: float
    d2h_latency_s: float
    d2h_bytes_per_s: float
    host: str = ""  # "" for this machine


def default_path() -> Path:
    """``cache_dir()/perf_history.sqlite3`` (honours ``$HERMES_NB_CACHE_DIR``)."""
    return cache_dir(DB_NAME)


class HistoryStore:
    """Runs and link measurements in one SQLite file, shared by processes.

    Parameters
    ----------
    path
        Database file; ``None`` for :func:`default_path`, ``":memory:"`` for a
        private in-memory database (tests, simulation).
    busy_timeout_s
        How long one statement waits for another process's lock before the store
        gives up on it for now (the batch stays pending).
    batch_size, flush_interval_s
        ``record()`` writes once this many runs are pending or the oldest is this old.
    retry_after_s
        While bypassed (locked or unwritable), how long to wait before trying the file again.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout_s: float = 0.5,
        batch_size: int = 64,
        flush_interval_s: float = 2.0,
        retry_after_s: float = 5.0,
    ) -> None:
        self.path = default_path() if path is None else path
        self.busy_timeout_s = busy_timeout_s
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self.retry_after_s = retry_after_s
        self._lock = threading.RLock()
        self._pending: list[Run] = []
        self._pending_since = 0.0
        self._conn: sqlite3.Connection | None = None
        self._retry_at = 0.0  # while bypassed: when to try the database again
        self._dropped = 0
        self._quiet = False  # set after a bypass warning, until the database works again
        self._warned_tables: set[str] = set()
        # (signature, host, device) -> rows this store wrote since it last pruned the pair
        self._unpruned: dict[tuple[str, str, str], int] = {}
        self._open()
        _live_stores.add(self)

    # ------------------------------------------------------------------ opening
    @property
    def available(self) -> bool:
        """Whether the database is open (False while bypassed)."""
        return self._conn is not None

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            str(self.path), timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            _ensure_schema(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self) -> None:
        try:
            self._conn = self._connect()
            self._quiet = False
        except sqlite3.OperationalError as exc:
            if _is_lock_error(exc):
                self._bypass(f"locked by another process ({exc})")
            else:
                self._rebuild(exc)
        except sqlite3.DatabaseError as exc:  # not a database, malformed, wrong schema
            self._rebuild(exc)
        except OSError as exc:
            self._bypass(f"cannot be opened ({exc})")

    def _rebuild(self, exc: BaseException) -> None:
        if self.path == ":memory:":
            self._bypass(f"failed ({exc})")
            return
        path = Path(self.path)
        aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}-{os.getpid()}")
        try:
            for suffix in ("", "-wal", "-shm"):
                part = Path(f"{path}{suffix}")
                if part.exists():
                    part.replace(f"{aside}{suffix}")
            self._conn = self._connect()
        except (OSError, sqlite3.Error) as again:
            self._bypass(f"is corrupt ({exc}) and could not be rebuilt ({again})")
            return
        warnings.warn(
            f"hermes: performance database {path} was unreadable ({exc}); moved it to {aside.name} "
            "and started a new one (timings will be re-learnt)",
            PerfStoreWarning,
            stacklevel=3,
        )

    def _bypass(self, why: str) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None
        self._retry_at = time.monotonic() + self.retry_after_s
        if self._quiet:
            return
        self._quiet = True
        warnings.warn(
            f"hermes: performance database {self.path} {why}; scheduling from in-memory "
            "history for now (runs are kept and written later)",
            PerfStoreWarning,
            stacklevel=3,
        )

    def _ensure_open(self) -> bool:
        if self._conn is None and time.monotonic() >= self._retry_at:
            self._open()
        return self._conn is not None

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[bool]:
        """Run a database step; on lock or corruption warn, bypass and carry on."""
        try:
            yield self._ensure_open()
        except sqlite3.OperationalError as exc:
            if _is_lock_error(exc):
                self._bypass(f"was locked while {what} ({exc})")
            else:
                self._conn_failed(exc)
        except sqlite3.DatabaseError as exc:
            self._conn_failed(exc)

    def _conn_failed(self, exc: BaseException) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        self._rebuild(exc)

    # ------------------------------------------------------------------ writing
    def record(self, run: Run) -> None:
        """Queue one run for writing (no I/O unless the batch is due). Thread-safe."""
        if not run.recorded_at:
            run = replace(run, recorded_at=time.time())
        with self._lock:
            if not self._pending:
                self._pending_since = time.monotonic()
            self._pending.append(run)
            due = (len(self._pending) >= self.batch_size
                   or time.monotonic() - self._pending_since >= self.flush_interval_s)
        if due:
            self.flush()

    def record_many(self, runs: Sequence[Run]) -> None:
        for run in runs:
            self.record(run)

    def flush(self) -> int:
        """Write pending runs in one transaction; returns how many were written."""
        with self._lock:
            batch = self._pending
            if not batch:
                return 0
            self._pending = []
            written = 0
            with self._guard("writing runs") as ok:
                if ok:
                    self._insert(batch)
                    written = len(batch)
            if not written:  # keep them for the next try, within bounds
                self._pending = (batch + self._pending)[-MAX_PENDING:]
                self._dropped += max(0, len(batch) - MAX_PENDING)
                self._pending_since = time.monotonic()
            return written

    def _insert(self, batch: list[Run]) -> None:
        assert self._conn is not None
        pid = os.getpid()
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT INTO runs (signature, device, size_key, nbytes, flops, bytes_moved, seconds, "
                "recorded_at, pid, host, name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(r.signature, r.device, r.size_key, int(r.nbytes), float(r.flops), int(r.bytes_moved),
                  float(r.seconds), r.recorded_at or time.time(), pid, r.host or local_host(), r.name)
                 for r in batch],
            )
            due, unpruned = self._pruning_plan(batch)
            for signature, host, device in due:
                conn.execute(
                    "DELETE FROM runs WHERE signature = ? AND host = ? AND device = ? AND id <= ("
                    "SELECT id FROM runs WHERE signature = ? AND host = ? AND device = ? "
                    "ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (signature, host, device, signature, host, device, KEEP_PER_PAIR),
                )
            conn.execute("COMMIT")
            self._unpruned.update(unpruned)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _pruning_plan(self, batch: list[Run]
                      ) -> tuple[list[tuple[str, str, str]], dict[tuple[str, str, str], int]]:
        """The pairs of ``batch`` to trim to ``KEEP_PER_PAIR`` rows now (new to this store, or
        written ``PRUNE_EVERY`` times since their last trim, so a pair holds at most
        ``KEEP_PER_PAIR + PRUNE_EVERY`` rows per store writing it), and the counts once the
        batch is written."""
        counts: dict[tuple[str, str, str], int] = {}
        for run in batch:
            pair = (run.signature, run.host or local_host(), run.device)
            counts[pair] = counts.get(pair, 0) + 1
        due = [p for p, n in counts.items()
               if p not in self._unpruned or self._unpruned[p] + n >= PRUNE_EVERY]
        after = {p: 0 if p in due else self._unpruned[p] + n for p, n in counts.items()}
        return due, after

    def save_link(self, link: LinkRecord) -> None:
        """Store (replace) one device's measured host↔device link."""
        with self._lock, self._guard("saving a link measurement") as ok:
            if ok:
                assert self._conn is not None
                self._conn.execute(
                    "INSERT OR REPLACE INTO links (host, device, h2d_latency_s, h2d_bytes_per_s, "
                    "d2h_latency_s, d2h_bytes_per_s, measured_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (link.host or local_host(), link.device, link.h2d_latency_s, link.h2d_bytes_per_s,
                     link.d2h_latency_s, link.d2h_bytes_per_s, time.time()),
                )

    # ------------------------------------------------------------------ reading
    def runs(self, signature: str | None = None, device: str | None = None,
             since: float | None = None) -> list[Run]:
        """Stored runs (oldest first), optionally of one signature and/or device, and recorded
        at or after ``since`` (epoch seconds); pending ones too."""
        where, args = [], []
        if since is not None:
            where.append("recorded_at >= ?")
            args.append(since)
        if signature is not None:
            where.append("signature = ?")
            args.append(signature)
        if device is not None:
            where.append("device = ?")
            args.append(device)
        sql = ("SELECT signature, device, size_key, nbytes, flops, seconds, bytes_moved, recorded_at, "
               "host, name FROM runs" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id")
        rows: list[Any] = []
        with self._lock:
            with self._guard("reading runs") as ok:
                if ok:
                    assert self._conn is not None
                    rows = self._conn.execute(sql, args).fetchall()
            pending = [r for r in self._pending
                       if (signature is None or r.signature == signature)
                       and (device is None or r.device == device)
                       and (since is None or r.recorded_at >= since)]
        return [Run(*row) for row in self._checked(rows, _valid_run, "runs")] + pending

    def links(self) -> list[LinkRecord]:
        """Every link measured on this machine (another machine's links are its own)."""
        rows: list[Any] = []
        with self._lock, self._guard("reading links") as ok:
            if ok:
                assert self._conn is not None
                rows = self._conn.execute(
                    "SELECT device, h2d_latency_s, h2d_bytes_per_s, d2h_latency_s, d2h_bytes_per_s "
                    "FROM links WHERE host IN ('', ?)", (local_host(),)
                ).fetchall()
        return [LinkRecord(*row) for row in self._checked(rows, _valid_link, "links")]

    def _checked(self, rows: list[Any], valid: Any, table: str) -> list[Any]:
        """Rows whose values make sense; the others (text or blobs in numeric columns, zero
        or negative bandwidths and times) are skipped, with one warning naming the file."""
        good = [r for r in rows if valid(r)]
        if len(good) < len(rows) and table not in self._warned_tables:
            self._warned_tables.add(table)
            warnings.warn(f"hermes: performance database {self.path}: ignored {len(rows) - len(good)} "
                          f"invalid row(s) of table {table}", PerfStoreWarning, stacklevel=3)
        return good

    def count(self) -> int:
        """Runs stored in the database (pending ones not included)."""
        with self._lock, self._guard("counting runs") as ok:
            if ok:
                assert self._conn is not None
                return int(self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        return 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    def close(self) -> None:
        """Flush and close the connection (the store can be used again; it reopens)."""
        self.flush()
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None
            self._retry_at = 0.0
        _live_stores.discard(self)

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the tables, or migrate a schema 1 file; a file of any other version is not
    ours to read (``DatabaseError``: it is moved aside and rebuilt)."""
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("BEGIN IMMEDIATE")  # one process migrates; the others then see version 2
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        has_runs = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone()
        version = row[0] if row is not None else ("1" if has_runs else str(SCHEMA_VERSION))
        if version not in ("1", "2", str(SCHEMA_VERSION)):
            raise sqlite3.DatabaseError(f"schema version {version!r} != {SCHEMA_VERSION}")
        steps = {"1": (*_MIGRATE_1_TO_2, *_MIGRATE_2_TO_3), "2": _MIGRATE_2_TO_3}
        for statement in steps.get(version, ()):
            conn.execute(statement, {"host": local_host()} if ":host" in statement else {})
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)",
                     (str(SCHEMA_VERSION),))
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def _is_lock_error(exc: BaseException) -> bool:
    """Locked, busy or read-only: the file is fine, only not writable now (bypass it)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text or "readonly" in text or "read-only" in text


def _number(value: Any, *, positive: bool = False) -> bool:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return ok and (value > 0 if positive else value >= 0)


def _valid_run(row: Sequence[Any]) -> bool:
    signature, device, size_key, nbytes, flops, seconds, moved, _, host, name = row
    texts = all(isinstance(v, str) for v in (signature, device, size_key, host, name))
    return texts and _number(nbytes) and _number(flops) and _number(seconds, positive=True) \
        and _number(moved)


def _valid_link(row: Sequence[Any]) -> bool:
    device, h2d_lat, h2d_bw, d2h_lat, d2h_bw = row
    return isinstance(device, str) and _number(h2d_lat) and _number(d2h_lat) \
        and _number(h2d_bw, positive=True) and _number(d2h_bw, positive=True)


_live_stores: weakref.WeakSet[HistoryStore] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    for store in list(_live_stores):
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store.flush()


def write_runs(path: str, signature: str, device: str, n: int, batch_size: int = 16) -> int:
    """Record ``n`` synthetic runs into the database at ``path`` and flush; returns rows written.

    A process entry point for concurrency checks (``multiprocessing`` spawn needs an
    importable function).
    """
    store = HistoryStore(path, busy_timeout_s=10.0, batch_size=batch_size, flush_interval_s=3600)
    for i in range(n):
        store.record(Run(signature, device, f"{i % 7}", 1000 * (i % 7 + 1), 0.0, 1e-3 * (i % 7 + 1)))
    store.close()
    return n
