"""What the server extension reports, as plain data: no server needed to test it."""

from __future__ import annotations

import statistics
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
    """The scheduler history on this machine, summarised per (signature, device)."""
    from hermes_nb.scheduler.history import HistoryStore, default_path

    path = default_path()
    with HistoryStore(path) as store:
        runs, links = store.runs(), store.links()
    pairs: dict[tuple[str, str], list[Any]] = {}
    for run in runs:
        pairs.setdefault((run.signature, run.device), []).append(run)
    rows = [{
        "signature": signature, "device": device, "runs": len(group),
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


def bokehjs_root() -> Path:
    """The installed ``bokeh`` package's static folder (``js/bokeh.min.js`` and its kin)."""
    from bokeh.util.paths import bokehjs_path

    return Path(bokehjs_path())
