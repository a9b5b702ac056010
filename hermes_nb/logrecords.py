"""One log for every device: Hermes' ``logging`` records, kept and shown on request.

Every Hermes module logs under the ``hermes_nb`` logger. :func:`install` (run on import)
gives that logger a handler that turns each record into a :class:`Record` (time, level,
device, kernel, category, message, and the build log where there is one) and keeps it in a
bounded buffer (:func:`records`, ``hm.logs()``) and in the buffer of every run in flight
(``Profile.log``). The category is ``compile``, ``fallback``, ``selftest``,
``calibration``, ``device`` or ``runtime``; a call names it with
``extra={"hermes_category": ...}`` (see :func:`extra`), else it is read from the logger and
the message. A cluster worker's records reach its client with the kernel reports
(:func:`ingest`): ``worker`` holds the worker's address, the device reads ``addr/opencl:0``.

The structured records (compiles, build logs, compiler output, self-test verdicts,
calibration choices: :func:`emit`) are kept whatever the logging config; plain
``log.debug`` lines are kept when the ``hermes_nb`` logger lets them through. What reaches
the terminal: with ``HERMES_LOG=debug`` (or ``info``, ``warning``, ``error``) every Hermes
record at that level or above goes to stderr. Without it, the application's own logging
handlers get what its config lets through, as without Hermes; when none would get a record
(on its logger or an ancestor, as ``logging`` decides), warnings and errors are printed, a
fallback once per kernel and device, never on every run. Compiler
chatter (PoCL's "N warnings generated", PyOpenCL's ``CompilerWarning``) becomes DEBUG
records with the text attached (:func:`build_warnings`, :func:`worker_output`).

This module imports nothing of Hermes, so every layer (the scheduler, the backends, the
isolated build worker) may use it.
"""

from __future__ import annotations

import contextlib
import html
import logging
import os
import re
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = ["Record", "Records", "build_warnings", "close_run", "emit", "extra", "ingest",
           "install", "open_run", "records", "records_of_thread"]

ROOT = "hermes_nb"
CAPACITY = 2000  # records kept in memory
VIEWER = "hermes_nb.widgets.log:LogView"  # what Records.view() shows (needs ipywidgets)
CATEGORIES = ("compile", "fallback", "selftest", "calibration", "device", "runtime")
_DEVICE_RE = re.compile(r"(?<![\w:])((?:tcp|tls|inproc)://\S+?/)?((?:cpu|opencl|cuda|reference)"
                        r":\d+)")
_KERNEL_RE = re.compile(r"\bkernel ([\w.-]+)|^(?:hermes: )?([\w.-]+) failed on ")


@dataclass(frozen=True)
class Record:
    """One Hermes log record."""

    time: float  # time.time()
    level: str  # "DEBUG", "INFO", "WARNING", "ERROR"
    device: str
    kernel: str
    category: str
    message: str
    logger: str = ROOT
    detail: str = ""  # a build log or the compiler's raw output
    worker: str = ""  # the cluster worker it came from
    perf: float = 0.0  # time.perf_counter(), to place it in a run
    thread: int = 0
    saved_to: str = ""  # "host:path" of the log file its own process's sink writes it to

    @property
    def levelno(self) -> int:
        return logging.getLevelName(self.level) if self.level in _LEVELS else 0

    def __str__(self) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(self.time))
        where = "/".join(p for p in (self.device, self.kernel) if p) or "-"
        return f"{stamp} {self.level:<7} {self.category:<11} {where:<28} {self.message}"


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _level_of(level: str | int | None) -> int:
    if level is None:
        return 0
    if isinstance(level, int):
        return level
    value = logging.getLevelName(level.strip().upper())
    if not isinstance(value, int):
        raise ValueError(f"unknown log level {level!r}: use one of {', '.join(_LEVELS).lower()}")
    return value


class Records(list[Record]):
    """A list of records that filters and shows itself (text, HTML, :meth:`view`)."""

    def filter(self, device: str | None = None, level: str | int | None = None,
               kernel: str | None = None, category: str | None = None) -> Records:
        """The records on ``device`` (also a worker's ``addr/device``), at ``level`` or
        above, of a kernel whose name contains ``kernel``, of ``category``."""
        floor = _level_of(level)
        return Records(
            r for r in self
            if (device is None or r.device == device or r.device.endswith("/" + device))
            and r.levelno >= floor and (kernel is None or kernel in r.kernel)
            and (category is None or r.category == category))

    def __repr__(self) -> str:
        if not self:
            return "Log: no records"
        return "\n".join([f"Log: {len(self)} record(s)", *(str(r) for r in self)])

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        return html_table(self)

    def view(self) -> Any:
        """A notebook view with device, level, kernel and category filters (ipywidgets)."""
        import importlib

        # the notebook side, named not imported: this module sits below every layer
        module, _, name = VIEWER.partition(":")
        return getattr(importlib.import_module(module), name)(self)


_COLOURS = {"WARNING": "#b35900", "ERROR": "#b00020", "CRITICAL": "#b00020", "DEBUG": "#777"}


def html_table(rows: Iterable[Record], limit: int = 500) -> str:
    """The records as an HTML table (the newest ``limit``), build logs folded away."""
    rows = list(rows)[-limit:]
    body = []
    for r in rows:
        colour = _COLOURS.get(r.level, "inherit")
        detail = (f"<details><summary>build log</summary><pre>{html.escape(r.detail)}</pre>"
                  "</details>") if r.detail else ""
        body.append(
            f"<tr style='color:{colour}'><td>{time.strftime('%H:%M:%S', time.localtime(r.time))}"
            f"</td><td>{r.level}</td><td>{html.escape(r.device)}</td>"
            f"<td>{html.escape(r.kernel)}</td><td>{r.category}</td>"
            f"<td style='text-align:left'>{html.escape(r.message)}{detail}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("time", "level", "device", "kernel", "category",
                                              "message"))
    return (f"<div class='hermes-log'><b>Log</b>: {len(rows)} record(s)<table><thead><tr>{head}"
            f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


# ---------------------------------------------------------------------- the handler

_buffer: deque[Record] = deque(maxlen=CAPACITY)
_runs: dict[int, list[Record]] = {}
_lock = threading.Lock()
_printed: set[tuple[str, str, str]] = set()  # (category, kernel, device) fallbacks printed


def extra(device: str = "", kernel: str = "", category: str = "", detail: str = "") -> dict:
    """``extra=`` for a logging call that names its device, kernel, category or build log."""
    return {"hermes_device": device, "hermes_kernel": kernel, "hermes_category": category,
            "hermes_detail": detail}


def _category(rec: logging.LogRecord, text: str) -> str:
    given = getattr(rec, "hermes_category", "")
    if given:
        return given
    low = text.lower()
    if " failed on " in low and ("retrying" in low or "falling back" in low):
        return "fallback"
    if "self-test" in low or "selftest" in low:
        return "selftest"
    if "calibrat" in low or rec.name.startswith(ROOT + ".scheduler"):
        return "calibration"
    if rec.name.startswith(ROOT + ".compiler") or "build" in low or "compil" in low:
        return "compile"
    return "device" if rec.name.startswith(ROOT + ".backends") else "runtime"


def _record(rec: logging.LogRecord) -> Record:
    try:
        text = rec.getMessage()
    except Exception:  # a bad format string must not lose the record
        text = str(rec.msg)
    device = getattr(rec, "hermes_device", "")
    if not device:
        found = _DEVICE_RE.search(text)
        device = "".join(p or "" for p in found.groups()) if found else ""
    kernel = getattr(rec, "hermes_kernel", "")
    if not kernel:
        found = _KERNEL_RE.search(text)
        kernel = (found.group(1) or found.group(2)) if found else ""
    detail = getattr(rec, "hermes_detail", "")
    if rec.exc_info and not detail:
        detail = logging.Formatter().formatException(rec.exc_info)
    return Record(rec.created, rec.levelname, device, kernel, _category(rec, text), text,
                  rec.name, detail, getattr(rec, "hermes_worker", ""),
                  getattr(rec, "hermes_perf", time.perf_counter()), rec.thread or 0,
                  _saved_to)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is now (a notebook or pytest swaps it)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class HermesHandler(logging.Handler):
    """Keeps every Hermes record and decides which reach the terminal."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.console = _StderrHandler()
        self.console.setFormatter(logging.Formatter("%(message)s"))
        self.print_level: int | None = None  # from HERMES_LOG; None: the default rule

    def emit(self, rec: logging.LogRecord) -> None:
        try:
            kept = _record(rec)
            _keep([kept])
            self._show(rec, kept)
        except Exception:
            self.handleError(rec)

    def _show(self, rec: logging.LogRecord, kept: Record) -> None:
        if self.print_level is not None:  # HERMES_LOG: the user asked for these
            if rec.levelno >= self.print_level:
                self.console.handle(rec)
            return
        if _handled_elsewhere(rec.name) or rec.levelno < logging.WARNING:
            return  # the application's own handlers show what its config lets through
        if kept.category == "fallback":  # once per kernel and device, not on every run
            seen = (kept.category, kept.kernel, kept.device)
            with _lock:
                if seen in _printed:
                    return
                _printed.add(seen)
        self.console.handle(rec)


def _handled_elsewhere(name: str) -> bool:
    """Whether a handler other than Hermes's own gets records of logger ``name`` (on it or
    an ancestor it propagates to): the rule by which ``logging`` itself decides whether its
    last-resort handler prints a warning."""
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None:
        if any(not isinstance(h, HermesHandler) for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


def _keep(found: list[Record], unsaved: list[Record] | None = None) -> None:
    """Keep ``found`` in the buffers; spool ``unsaved`` of them (default: all) for a sink."""
    with _lock:
        _buffer.extend(found)
        for run in _runs.values():
            run.extend(found)
        unsaved = found if unsaved is None else unsaved
        if _spool is not None and unsaved:  # a sink writes them out later, on its own thread
            _spool.extend(unsaved)
            if not spooled.is_set():
                spooled.set()


# ---------------------------------------------------------------------- the spool

_spool: deque[Record] | None = None  # records a sink (``logsink``) has yet to write
_saved_to = ""  # "host:path" of the file this process's sink writes (see Record.saved_to)
#: set while the spool holds records: the sink's thread waits on it
spooled = threading.Event()


def open_spool(capacity: int, saved_to: str = "") -> None:
    """Keep every new record for :func:`drain_spool` too (the newest ``capacity`` of them);
    ``saved_to`` names the file the sink writes them to, so a record a cluster worker on
    this machine wrote to that same file is not spooled a second time."""
    global _spool, _saved_to
    with _lock:
        _spool = deque(_spool or (), maxlen=capacity)
        _saved_to = saved_to


def close_spool() -> None:
    """Stop keeping records for a sink; those not drained yet are dropped."""
    global _spool, _saved_to
    with _lock:
        _spool = None
        _saved_to = ""
        spooled.clear()


def drain_spool() -> list[Record]:
    """The records kept since the last drain, oldest first (the spool is emptied)."""
    with _lock:
        found = list(_spool or ())
        if _spool is not None:
            _spool.clear()
        spooled.clear()
        return found


_handler: HermesHandler | None = None


def configure(level: str | None = None) -> None:
    """Print Hermes records at ``level`` and above to stderr (``None``: read
    ``HERMES_LOG``; unset or empty: the default rule of the module docstring). A level
    below the application's lets those records through the ``hermes_nb`` logger too."""
    text = os.environ.get("HERMES_LOG", "") if level is None else level
    try:
        chosen = _level_of(text) if text.strip() else None
    except ValueError:
        chosen = None
    if _handler is not None:
        _handler.print_level = chosen
        logging.getLogger(ROOT).setLevel(chosen or logging.NOTSET)
    with _lock:
        _printed.clear()


def install() -> HermesHandler:
    """Attach the handler to the ``hermes_nb`` logger (once); returns it."""
    global _handler
    with _lock:
        if _handler is None:
            _handler = HermesHandler()
            logging.getLogger(ROOT).addHandler(_handler)
    configure()
    return _handler


def uninstall() -> None:
    """Detach the handler (records go to the application's logging as without Hermes)."""
    global _handler
    if _handler is not None:
        logger = logging.getLogger(ROOT)
        logger.removeHandler(_handler)
        logger.setLevel(logging.NOTSET)
        _handler = None


# ---------------------------------------------------------------------- reading and runs


def records(device: str | None = None, level: str | int | None = None,
            kernel: str | None = None, category: str | None = None,
            last: int | None = None) -> Records:
    """The recent Hermes records (``hm.logs()``), oldest first, filtered."""
    with _lock:
        kept = Records(_buffer)
    found = kept.filter(device=device, level=level, kernel=kernel, category=category)
    return Records(found[-last:]) if last else found


def open_run(run_id: int) -> None:
    """Start collecting the records of run ``run_id`` (from every thread)."""
    with _lock:
        _runs[run_id] = []


def close_run(run_id: int) -> Records:
    """Stop collecting; the records emitted while the run was open."""
    with _lock:
        return Records(_runs.pop(run_id, []))


def records_of_thread(start: float, thread: int | None = None) -> list[Record]:
    """Records of this thread (or ``thread``) since ``start`` (perf_counter seconds)."""
    ident = threading.get_ident() if thread is None else thread
    with _lock:
        return [r for r in _buffer if r.thread == ident and r.perf >= start]


def to_wire(found: Iterable[Record]) -> list[dict[str, Any]]:
    return [asdict(r) for r in found]


def ingest(wired: Iterable[dict[str, Any]], worker: str, shift: float = 0.0) -> None:
    """Records a cluster worker sent (see ``runtime.cluster_reports``), into this process's
    buffers: the device is prefixed with the worker's address, times moved onto this clock."""
    found = []
    for data in wired:
        r = Record(**data)
        device = f"{worker}/{r.device}" if r.device and "/" not in r.device else r.device
        found.append(replace(r, device=device, worker=worker, perf=r.perf + shift))
    # a worker on this machine that writes the same log file has written them already
    _keep(found, [r for r in found if r.saved_to != _saved_to])


def emit(level: int, message: str, *, logger: str = ROOT, **fields: str) -> None:
    """Log ``message`` (no %-formatting) with :func:`extra` ``fields``. A record below the
    level the logger lets through is still kept (in the buffer and the run's profile),
    without reaching any other handler."""
    log = logging.getLogger(logger)
    if _handler is None or log.isEnabledFor(level):
        log.log(level, "%s", message, extra=extra(**fields), stacklevel=2)
        return
    _keep([Record(time.time(), logging.getLevelName(level), fields.get("device", ""),
                  fields.get("kernel", ""), fields.get("category", "") or "runtime", message,
                  logger, fields.get("detail", ""), perf=time.perf_counter(),
                  thread=threading.get_ident(), saved_to=_saved_to)])


# ---------------------------------------------------------------------- builds


def _is_compiler_warning(category: type[Warning]) -> bool:
    return any(c.__name__ == "CompilerWarning" for c in category.__mro__)


# the warnings module's filters and showwarning are process-wide: builds on several device
# threads share one capture, the last build to end restores the user's settings
_warn_lock = threading.Lock()
_warn_state: dict[str, Any] = {"depth": 0, "caught": []}


def _capture_warnings() -> None:
    if _warn_state["depth"] == 0:
        saved = warnings.catch_warnings()
        saved.__enter__()
        warnings.simplefilter("always")
        caught: list[tuple[int, Any]] = []
        warnings.showwarning = lambda message, category, filename, lineno, file=None, \
            line=None: caught.append((threading.get_ident(), warnings.WarningMessage(
                message, category, filename, lineno, file, line)))
        _warn_state.update(saved=saved, caught=caught)
    _warn_state["depth"] += 1


def _release_warnings() -> tuple[list[Any], list[Any]]:
    """(this thread's compiler warnings, the other warnings to issue again now)."""
    me = threading.get_ident()
    caught = _warn_state["caught"]
    mine = [w for t, w in caught if t == me and _is_compiler_warning(w.category)]
    caught[:] = [(t, w) for t, w in caught if not (t == me and _is_compiler_warning(w.category))]
    _warn_state["depth"] -= 1
    if _warn_state["depth"]:
        return mine, []
    _warn_state.pop("saved").__exit__(None, None, None)
    others = [w for _, w in caught if not _is_compiler_warning(w.category)]
    caught.clear()
    return mine, others


@contextlib.contextmanager
def build_warnings(device: str = "", kernel: str = "", logger: str = ROOT + ".backends"
                   ) -> Iterator[None]:
    """Around a build: a compiler's warnings (PyOpenCL's ``CompilerWarning``) become DEBUG
    records with their text attached instead of reaching the terminal; any other warning
    raised meanwhile is issued again after the build, under the user's own filters."""
    with _warn_lock:
        _capture_warnings()
    try:
        yield
    finally:
        with _warn_lock:
            mine, others = _release_warnings()
        for w in mine:
            text = str(w.message)
            first = next((ln for ln in text.splitlines() if ln.strip()), "compiler output")
            emit(logging.DEBUG, f"compiler output building {kernel or 'a program'}: {first}",
                 logger=logger, device=device, kernel=kernel, category="compile", detail=text)
        for w in others:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _headline(text: str) -> str:
    """The line that says most: the compiler's "N warnings generated", else the first."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return next((ln for ln in reversed(lines) if _SUMMARY_RE.search(ln)), lines[0] if lines else "")


_SUMMARY_RE = re.compile(r"\b\d+ (?:warnings?|errors?)(?: and \d+ errors?)? generated")
# what clang (inside a driver) writes: summaries, diagnostics, the quoted source and carets
_CHATTER_RE = re.compile(r"warnings? (?:and \d+ errors? )?generated|errors? generated|"
                         r"(?:^|: )(?:warning|error|note|fatal error): |^\s*\^|^\s*\d* \| ")


def worker_output(text: str, device: str = "", kernel: str = "", what: str = "") -> None:
    """A compiler's raw stderr (the build worker's during one job, or this process's
    during a build), as a DEBUG record with the text attached."""
    text = text.strip()
    if not text:
        return
    where = f" ({what})" if what else ""
    emit(logging.DEBUG, f"compiler output{where}: {_headline(text)}", logger=ROOT + ".backends",
         device=device, kernel=kernel, category="compile", detail=text)


_fd_lock = threading.Lock()
_fd_state: dict[str, Any] = {"depth": 0}


def _redirect() -> None:
    if _fd_state["depth"] == 0:
        import tempfile

        sys.stderr.flush()
        sink = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _restore
        _fd_state.update(saved=os.dup(2), sink=sink)
        os.dup2(sink.fileno(), 2)
    _fd_state["depth"] += 1


def _restore() -> str:
    _fd_state["depth"] -= 1
    if _fd_state["depth"]:
        return ""
    sys.stderr.flush()
    saved, sink = _fd_state.pop("saved"), _fd_state.pop("sink")
    os.dup2(saved, 2)
    os.close(saved)
    sink.seek(0)
    text = sink.read().decode(errors="replace")
    sink.close()
    return text


@contextlib.contextmanager
def native_stderr(device: str = "", kernel: str = "", what: str = "") -> Iterator[None]:
    """Around a build in this process: what a driver's compiler writes to file descriptor 2
    meanwhile (clang's "41 warnings generated") becomes a record instead of terminal output.
    Anything else written there meanwhile (another thread's output) is written back after."""
    try:
        with _fd_lock:
            _redirect()
    except OSError:  # no usable descriptor 2: nothing to keep out of the terminal
        yield
        return
    try:
        yield
    finally:
        with _fd_lock:
            text = _restore()
        if text:
            lines = text.splitlines(keepends=True)
            chatter = "".join(ln for ln in lines if _CHATTER_RE.search(ln))
            other = "".join(ln for ln in lines if not _CHATTER_RE.search(ln))
            if other.strip() and not chatter.strip():
                chatter, other = "", text
            worker_output(chatter, device, kernel, what)
            if other:
                with contextlib.suppress(OSError):
                    os.write(2, other.encode())
