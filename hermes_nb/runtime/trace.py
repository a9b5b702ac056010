"""A profile as Chrome trace JSON (the Trace Event Format that Perfetto and chrome://tracing read).

One process, one thread lane per device; kernels, the copies feeding them and the builds
they paid for are complete ("X") events with microsecond times from the start of the run.
A build (category ``compile``, named "compiling fused_stencil on opencl:0") nests inside
its kernel's event, which spans compile and run; the kernel's ``run_ms`` leaves it out.
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
    compiles = profile.compile_events()
    lanes = list(dict.fromkeys([*(k.device for k in kernels), *(t.device for t in transfers),
                                *(c.device for c in compiles)]))
    tid = {device: i + 1 for i, device in enumerate(lanes)}
    origin = profile.started
    names = profile.kernel_names()

    def micros(t: float) -> float:
        return round((t - origin) * 1e6, 3)

    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": "hermes"}},
    ]
    events += [{"name": "thread_name", "ph": "M", "pid": PID, "tid": tid[d], "args": {"name": d}}
               for d in lanes]
    events += [{
        "name": names.get(k.kernel, k.op), "cat": "kernel", "ph": "X", "pid": PID, "tid": tid[k.device],
        "ts": micros(k.start), "dur": round(k.wall_s * 1e6, 3),
        "args": {"key": k.key, "op": k.op, "device": k.device, "reason": k.reason,
                 "run_ms": k.seconds * 1e3, "compile_ms": k.compile_s * 1e3,
                 "estimate_ms": None if k.estimate_s is None else k.estimate_s * 1e3,
                 "failed_first_on": list(k.failures)},
    } for k in kernels]
    events += [{
        "name": f"copy {t.source} → {t.device}", "cat": "transfer", "ph": "X", "pid": PID,
        "tid": tid[t.device], "ts": micros(t.start), "dur": round(t.seconds * 1e6, 3),
        "args": {"value": t.key, "bytes": t.nbytes},
    } for t in transfers]
    events += [{
        "name": c.label, "cat": "compile", "ph": "X", "pid": PID, "tid": tid[c.device],
        "ts": micros(c.start), "dur": round(c.seconds * 1e6, 3),
        "args": {"key": c.key, "op": c.op, "built": c.what, "kind": c.kind},
    } for c in compiles]
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"wall_ms": profile.seconds * 1e3,
                          "compile_ms": sum(c.seconds for c in compiles) * 1e3}}


def write_trace(profile: Profile, path: str | os.PathLike[str]) -> Path:
    """Write ``profile``'s Chrome trace to ``path`` (parent folders must exist); returns it."""
    target = Path(path)
    if not target.parent.is_dir():
        raise FileNotFoundError(f"trace: folder {str(target.parent)!r} does not exist")
    target.write_text(json.dumps(chrome_trace(profile), indent=1))
    return target
