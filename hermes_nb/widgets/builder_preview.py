"""The builder's preview: run a pipeline off the UI thread, newest request wins, as a PNG.

``PreviewRunner`` numbers every request; a request that is no longer the newest when it starts
is skipped, and a result that is no longer the newest when it finishes is dropped, so a slow
run never overwrites a newer one. Each request runs the pipeline on the chosen device, whose
kernels may need compiling first (1-2.5 s for a new one; a changed scalar compiles nothing and
the run takes a few ms). A run still going after ``EARLY_AFTER_S`` gets a quick preview
computed on the host beside it with NumPy/SciPy (``runtime.reference``: no compile, ~85 ms at
1024²), shown until the real result comes: a warm run never waits for the host's.
"""

from __future__ import annotations

import html
import io
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb import context
from hermes_nb.api.creation import asarray
from hermes_nb.api.image import Stage
from hermes_nb.api.plan import Plan
from hermes_nb.ir.node import toposort
from hermes_nb.runtime.profile import Profile, last_profile


@dataclass(frozen=True)
class PreviewResult:
    generation: int
    image: np.ndarray
    png: bytes
    plan: Plan
    profile: Profile | None
    wall_s: float  # build, compile and run, as the user waited for it
    device: str
    policy: str
    stage_keys: tuple[frozenset[str], ...] = ()  # the graph nodes each stage added


def thumbnail_png(png: bytes, side: int = 360) -> bytes:
    """``png`` shrunk to at most ``side`` pixels a side (as it is shown), well compressed:
    what a saved notebook keeps."""
    from PIL import Image

    picture = Image.open(io.BytesIO(png))
    picture.thumbnail((side, side))
    buf = io.BytesIO()
    picture.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def to_png(image: np.ndarray) -> bytes:
    """``image`` as an 8-bit PNG, scaled from its finite min/max (NaN shows black)."""
    a = np.asarray(image)
    if a.ndim == 3 and a.shape[0] == 3:
        a = np.moveaxis(a, 0, -1)  # (3, H, W) channels: show as RGB
    elif a.ndim > 2:
        a = a.reshape(-1, *a.shape[-2:])[0]  # a batch: show its first image
    a = a.astype(np.float32, copy=False)
    finite = np.isfinite(a)
    lo, hi = (float(a[finite].min()), float(a[finite].max())) if finite.any() else (0.0, 1.0)
    scale = 255.0 / (hi - lo) if hi > lo else 0.0
    pixels = np.where(finite, (a - lo) * scale, 0.0).clip(0, 255).astype(np.uint8)
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG", compress_level=1)  # speed over size
    return buf.getvalue()


@dataclass(frozen=True)
class QuickPreview:
    image: np.ndarray
    png: bytes
    seconds: float


def quick_preview(image: np.ndarray, stages: Sequence[Stage]) -> QuickPreview:
    """``stages`` on ``image`` evaluated on the host op by op (no fusion, no compile)."""
    from hermes_nb.runtime.reference import evaluate

    start = time.perf_counter()
    out = asarray(image)
    for stage in stages:
        out = stage(out)
    result = evaluate(out.node)
    return QuickPreview(result, to_png(result), time.perf_counter() - start)


class StageError(RuntimeError):
    """A stage failed while its part of the graph was built."""


def run_preview(image: np.ndarray, stages: Sequence[Stage], device: str, policy: str,
                generation: int = 0) -> PreviewResult:
    """Build, explain and run ``stages`` on ``image`` on ``device`` ("auto": by ``policy``)."""
    start = time.perf_counter()
    with ExitStack() as scope:
        if device != "auto":
            scope.enter_context(context.device(device))
        scope.enter_context(context.policy(policy))
        scope.enter_context(context.options(progress=False))  # the builder shows its own status
        out = asarray(image)
        seen = {n.key for n in toposort([out.node])}
        stage_keys = []
        for i, stage in enumerate(stages):
            try:
                out = stage(out)
            except Exception as exc:
                raise StageError(f"stage {i + 1} ({stage.name}): {type(exc).__name__}: {exc}") from exc
            added = frozenset(n.key for n in toposort([out.node])) - seen
            stage_keys.append(added)
            seen |= added
        before = last_profile()
        result = out.numpy()
        profile = last_profile()
    if profile is before or profile is None or profile.plan is None:
        profile, plan = None, Plan([])  # nothing ran (no stages): no kernels to show
    else:
        plan = profile.plan  # what this run placed and ran, so times match kernel by kernel
    wall = time.perf_counter() - start
    return PreviewResult(generation, result, to_png(result), plan, profile, wall, device, policy,
                         tuple(stage_keys))


EARLY_AFTER_S = 0.1  # a run still going then is compiling: show the host's preview meanwhile


class PreviewRunner:
    """Runs jobs on one worker thread; only the newest job's outcome reaches ``deliver``."""

    def __init__(self, deliver: Callable[[int, Any, BaseException | None], None],
                 deliver_early: Callable[[int, Any], None] | None = None) -> None:
        self._deliver = deliver
        self._deliver_early = deliver_early
        self.early = 0  # quick results shown before their request's real one
        self.early_after_s = EARLY_AFTER_S
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-builder")
        self._lock = threading.RLock()
        self._latest: Future[None] | None = None
        self.generation = 0
        self.skipped = 0  # superseded before they started
        self.dropped = 0  # finished after a newer request: result thrown away

    def submit(self, job: Callable[[int], Any], early: Callable[[int], Any] | None = None) -> int:
        """Run ``job(generation)``; if it is still running after ``early_after_s``,
        ``early(generation)`` runs beside it and its value (unless it fails: ``job`` then
        reports, or ``job`` finished first) goes to ``deliver_early``."""
        with self._lock:
            self.generation += 1
            gen = self.generation
            self._latest = self._executor.submit(self._run, gen, job, early)
        return gen

    def _run(self, gen: int, job: Callable[[int], Any], early: Callable[[int], Any] | None) -> None:
        if gen != self.generation:
            self.skipped += 1
            return
        done = threading.Event()
        timer = None
        if early is not None and self._deliver_early is not None:
            timer = threading.Timer(self.early_after_s, self._run_early, (gen, early, done))
            timer.daemon = True
            timer.start()
        try:
            value, error = job(gen), None
        except Exception as exc:  # shown in the builder, never raised on the worker
            value, error = None, exc
        with self._lock:
            done.set()  # under the lock: no quick preview lands after the real one
            if timer is not None:
                timer.cancel()
            if gen != self.generation:
                self.dropped += 1
                return
            self._deliver(gen, value, error)

    def _run_early(self, gen: int, early: Callable[[int], Any], done: threading.Event) -> None:
        if done.is_set() or gen != self.generation:
            return
        try:
            quick = early(gen)
        except Exception:  # the real run reports the error
            return
        with self._lock:
            if not done.is_set() and gen == self.generation:
                self.early += 1
                self._deliver_early(gen, quick)

    def wait(self, timeout: float | None = None) -> None:
        """Block until the newest request has run (or was superseded and its successor ran)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                latest = self._latest
            if latest is None:
                return
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            latest.result(timeout=remaining)  # raises TimeoutError past the deadline
            with self._lock:
                if latest is self._latest:
                    return

    def close(self) -> None:
        with self._lock:
            self.generation += 1  # whatever is queued is now stale
        self._executor.shutdown(wait=False, cancel_futures=True)


# ---- which stages went into which kernel -------------------------------------------------
def stages_per_kernel(result: PreviewResult) -> list[list[int]]:
    """For each kernel of the plan, the (0-based) stages whose graph nodes it computes."""
    return [[s for s, keys in enumerate(result.stage_keys) if keys & set(k.members)]
            for k in result.plan.kernels]


_STYLE = ("<style>.hermes-builder-plan th, .hermes-builder-plan td {padding: 2px 10px; "
          "text-align: left; vertical-align: top}</style>")


def plan_html(plan: Plan, profile: Profile | None, stage_names: Sequence[str],
              owners: Sequence[Sequence[int]], wall_s: float) -> str:
    """The fused plan as a table: kernel, the stages and ops in it, device, measured time."""
    runs = profile.per_kernel() if profile is not None else {}
    rows = []
    for i, k in enumerate(plan.kernels):
        seconds, devices = runs.get(k.name, (None, (k.device,)))
        ms = "—" if seconds is None else f"{seconds * 1e3:.2f}"
        stages = ", ".join(f"{s + 1}. {stage_names[s]}" for s in owners[i]) or "—"
        rows.append(
            f"<tr><td>{i}</td><td>{html.escape(k.name)}</td><td>{html.escape(stages)}</td>"
            f"<td>{html.escape(' + '.join(k.ops))}</td><td>{html.escape('+'.join(devices))}</td>"
            f"<td>{ms}</td></tr>")
    run_ms = f"{profile.seconds * 1e3:.2f} ms" if profile is not None else "—"
    head = (f"<b>Fused plan</b>: {len(stage_names)} stage(s) → {len(plan.kernels)} kernel(s); "
            f"run {run_ms}, wall {wall_s * 1e3:.0f} ms (build, compile, run)")
    return (f"<div>{_STYLE}{head}<table><thead><tr><th>#</th><th>kernel</th><th>stages</th><th>ops</th>"
            f"<th>device</th><th>ms</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
