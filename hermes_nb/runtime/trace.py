"""A profile as Chrome trace JSON (the Trace Event Format that Perfetto and chrome://tracing read).

One process, one thread lane per device; kernels and the copies feeding them are complete
("X") events with microsecond times from the start of the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hermes_nb.runtime.profile import Profile

PID = 1


def chrome_trace(profile: Profile) -> dict[str, Any]:
    """The trace of ``profile`` as a dict ready for ``json.dump``."""
    if not isinstance(profile, Profile):
        raise TypeError(f"chrome_trace: expected a hermes Profile, got {type(profile).__name__}")
    kernels, transfers = profile.snapshot()
    lanes = list(dict.fromkeys([*(k.device for k in kernels), *(t.device for t in transfers)]))
    tid = {device: i + 1 for i, device in enumerate(lanes)}
    origin = profile.started

    def micros(t: float) -> float:
        return round((t - origin) * 1e6, 3)

    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": "hermes"}},
    ]
    events += [{"name": "thread_name", "ph": "M", "pid": PID, "tid": tid[d], "args": {"name": d}}
               for d in lanes]
    events += [{
        "name": k.op, "cat": "kernel", "ph": "X", "pid": PID, "tid": tid[k.device],
        "ts": micros(k.start), "dur": round(k.seconds * 1e6, 3),
        "args": {"key": k.key, "device": k.device, "reason": k.reason,
                 "estimate_ms": None if k.estimate_s is None else k.estimate_s * 1e3,
                 "failed_first_on": list(k.failures)},
    } for k in kernels]
    events += [{
        "name": f"copy {t.source} → {t.device}", "cat": "transfer", "ph": "X", "pid": PID,
        "tid": tid[t.device], "ts": micros(t.start), "dur": round(t.seconds * 1e6, 3),
        "args": {"value": t.key, "bytes": t.nbytes},
    } for t in transfers]
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"wall_ms": profile.seconds * 1e3}}


def write_trace(profile: Profile, path: str | os.PathLike[str]) -> Path:
    """Write ``profile``'s Chrome trace to ``path`` (parent folders must exist); returns it."""
    target = Path(path)
    if not target.parent.is_dir():
        raise FileNotFoundError(f"trace: folder {str(target.parent)!r} does not exist")
    target.write_text(json.dumps(chrome_trace(profile), indent=1))
    return target
