"""What the server extension reports, as plain data: no server needed to test it."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

#: kernel signatures listed by ``history``, most recently measured first
HISTORY_LIMIT = 50


def device_rows() -> list[dict[str, Any]]:
    """Every device Hermes finds, as ``Device.info()`` dicts with the memory figure the CLI
    and ``%hermes devices`` show (``memory_bytes`` and its text, ``memory``)."""
    from hermes_nb.backends import devices
    from hermes_nb.backends.memory import memory_bytes, memory_text

    return [{**d.info(), "memory_bytes": memory_bytes(d), "memory": memory_text(d)}
            for d in devices()]


def history_summary(limit: int = HISTORY_LIMIT) -> dict[str, Any]:
    """The scheduler history on this machine, summarised per (signature, device), with the
    kernel's name in the notebook's views where a run recorded one."""
    from hermes_nb.scheduler.history import HistoryStore, default_path

    path = default_path()
    with HistoryStore(path) as store:
        runs, links = store.runs(), store.links()
    pairs: dict[tuple[str, str], list[Any]] = {}
    names: dict[str, str] = {}  # per signature, its latest name on any device
    for run in runs:
        pairs.setdefault((run.signature, run.device), []).append(run)
        if run.name:  # runs from before names were stored, or plain hm.compute, may have none
            names[run.signature] = run.name
    rows = [{
        "signature": signature, "name": names.get(signature, ""), "device": device, "runs": len(group),
        "median_ms": statistics.median(r.seconds for r in group) * 1e3,
        "last_recorded": max(r.recorded_at for r in group),
    } for (signature, device), group in pairs.items()]
    rows.sort(key=lambda r: r["last_recorded"], reverse=True)
    return {
        "path": str(path), "runs": len(runs), "kernels": rows[:limit],
        "links": [{"device": link.device, "h2d_gb_per_s": link.h2d_bytes_per_s / 1e9,
                   "d2h_gb_per_s": link.d2h_bytes_per_s / 1e9,
                   "h2d_latency_us": link.h2d_latency_s * 1e6} for link in links],
    }


#: the window ``live_load`` measures each device's busy share over
LOAD_WINDOW_S = 10.0


def live_load(window_s: float = LOAD_WINDOW_S, now: float | None = None) -> dict[str, Any]:
    """Per device of this machine: its busy % over the last ``window_s`` seconds and the
    kernels run then, from the runs every Hermes process here records in the shared history
    (so the kernels' runs, not the server's own idle devices), with its memory figure."""
    from hermes_nb.scheduler.history import HistoryStore, default_path, local_host

    now = time.time() if now is None else now
    since = now - window_s
    with HistoryStore(default_path()) as store:
        # the window only: the history holds every run this machine ever timed
        recent = [r for r in store.runs(since=since) if r.host in ("", local_host())]
    rows = []
    for device in device_rows():
        runs = [r for r in recent if r.device == device["id"]]
        busy = min(100.0, 100.0 * sum(r.seconds for r in runs) / window_s)
        last = max((r.recorded_at for r in runs), default=None)
        rows.append({"id": device["id"], "busy_pct": busy, "kernels": len(runs),
                     "last_run_s_ago": None if last is None else max(0.0, now - last),
                     "memory": device["memory"]})
    return {"window_s": window_s, "devices": rows}


#: records ``logs`` returns at most, newest first
LOG_LIMIT = 200


def log_records(since: float | None = None, level: str | None = None, device: str | None = None,
                kernel: str | None = None, limit: int = LOG_LIMIT,
                notebooks: dict[str, str] | None = None) -> dict[str, Any]:
    """The Hermes log records every Hermes process on this machine wrote (``logsink``),
    newest first and filtered as :func:`hermes_nb.logsink.read_records` does; each names
    its ``source``: the notebook of its Jupyter kernel where ``notebooks`` (kernel id ->
    path, the server's sessions) knows it, else the kernel's id, else the process. With
    them, every device and kernel the stored records name (``devices``, ``kernels``)."""
    from hermes_nb import logsink

    path = logsink.default_path()
    rows = logsink.read_records(path, since=since, level=level, device=device, kernel=kernel,
                                limit=limit)
    notebooks = notebooks or {}
    shown = ("id", "time", "level", "device", "kernel", "category", "message", "detail", "worker")
    records = [{**{k: r[k] for k in shown}, "source": _source(r, notebooks)} for r in rows]
    return {"path": str(path), "records": records, **logsink.stored_choices(path)}


def check_log_query(level: str | None, limit: int) -> None:
    """``ValueError`` (the endpoint's 400) for a level or limit ``logs`` cannot answer.

    >>> check_log_query("loud", 10)
    Traceback (most recent call last):
    ...
    ValueError: unknown log level 'loud': use one of debug, info, warning, error, critical
    """
    from hermes_nb import logrecords, logsink

    logrecords._level_of(level)
    if not 1 <= limit <= logsink.KEEP:
        raise ValueError(f"limit={limit} is not between 1 and {logsink.KEEP}")


def _source(row: dict[str, Any], notebooks: dict[str, str]) -> str:
    kernel_id = row["jupyter_kernel"]
    if kernel_id:
        return notebooks.get(kernel_id) or f"kernel {kernel_id[:8]}"
    return f"pid {row['pid']} on {row['host']}"


def bokehjs_root() -> Path:
    """The installed ``bokeh`` package's static folder (``js/bokeh.min.js`` and its kin)."""
    from bokeh.util.paths import bokehjs_path

    return Path(bokehjs_path())
