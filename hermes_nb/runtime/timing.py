"""Timing one kernel on its device, its builds apart from its run."""

from __future__ import annotations

import time
from typing import Any

from hermes_nb.compiler.progress import recording
from hermes_nb.ir.node import OpSpec
from hermes_nb.runtime import profile


def timed(device: Any, spec: OpSpec, buffers: list[Any]
          ) -> tuple[float, Any, float, profile.CompileRecorder]:
    """Run and synchronise (call it on the device's thread, so the time is the kernel's
    own); the builds the backends' caches ran meanwhile are recorded apart."""
    built = profile.CompileRecorder(spec.key, spec.op, device.id)
    with recording(built):
        start = time.perf_counter()
        out = device.execute(spec, buffers)
        device.synchronize()
        end = time.perf_counter()
    return start, out, end, built
