"""``PipelineBuilder``: build an image pipeline from a palette, with a live before/after preview.

>>> import hermes_nb as hm
>>> b = hm.PipelineBuilder()                                   # the packaged sample image
>>> b.add("gaussian_blur", kernel_size=7).add("sobel_edge_detection")  # doctest: +SKIP
>>> b.wait(); b.result.shape                                    # doctest: +SKIP
(1024, 1024)

Stages come from a fixed catalogue (``builder_catalogue``); nothing typed into the widget is
evaluated. The preview runs on a worker thread and a newer change supersedes an older one.
"""

from __future__ import annotations

import base64
import contextlib
import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as w
import numpy as np

from hermes_nb import backends
from hermes_nb.api.image import Pipeline, Stage, compose
from hermes_nb.api.plan import Plan
from hermes_nb.runtime.profile import Profile
from hermes_nb.scheduler.scope import POLICIES
from hermes_nb.widgets.builder_catalogue import (
    CATALOGUE,
    FloatParam,
    KernelParam,
    format_kernel,
    make_stage,
    parse_kernel,
)
from hermes_nb.widgets.builder_code import pipeline_code
from hermes_nb.widgets.builder_controls import Entry, as_image, control, stage_box
from hermes_nb.widgets.builder_preview import (
    PreviewResult,
    PreviewRunner,
    QuickPreview,
    StageError,
    plan_html,
    quick_preview,
    run_preview,
    stages_per_kernel,
    thumbnail_png,
    to_png,
)
from hermes_nb.widgets.fallback import snapshot_bundle

_IMG_LAYOUT = {"width": "360px", "height": "auto"}
#: how long showing the builder waits for its first preview, so its saved picture has one
SNAPSHOT_WAIT_S = 5.0


def _position(value: Any, what: str) -> int:
    """``value`` as a stage position: an integer (Python's or NumPy's), never a bool."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


class PipelineBuilder(w.VBox):
    """An image-pipeline editor: a palette of stages, each stage's controls, a before/after
    preview computed off the UI thread, the fused plan, and the pipeline as code.

    ``image``: a 2-D array (or ``(..., H, W)``), default the packaged sample image; integer
    images are scaled to ``[0, 1]``. ``pipeline``: a ``Pipeline`` or stages to start from.
    """

    def __init__(self, image: Any = None,
                 pipeline: Pipeline | Stage | Sequence[Stage] | None = None, *,
                 device: str = "auto", policy: str = "auto") -> None:
        self._entries: list[Entry] = []
        self._syncing = False
        self._result: PreviewResult | None = None
        self._error: str | None = None
        self._image = as_image(image)
        self._quick: QuickPreview | None = None  # the latest quick result, for tests
        self._runner = PreviewRunner(self._deliver, self._deliver_early)
        self._palette = w.Dropdown(options=[(f"{s.label} ({n})", n) for n, s in CATALOGUE.items()],
                                   description="stage")
        add = w.Button(description="Add stage", icon="plus", button_style="primary")
        add.on_click(lambda _: self.add(self._palette.value))
        self._device = w.Dropdown(options=[("auto (by policy)", "auto")]
                                  + [(d.id, d.id) for d in backends.devices()], description="device")
        self._policy = w.Dropdown(options=list(POLICIES), description="policy")
        self._stages = w.VBox(layout={"width": "420px"})
        self._before = w.Image(value=to_png(self._image), format="png", layout=_IMG_LAYOUT)
        self._after = w.Image(value=self._before.value, format="png", layout=_IMG_LAYOUT)
        self._status, self._error_label = w.HTML(), w.HTML()
        self._plan, self._code = w.HTML(), w.HTML()
        for widget, cls in ((self._palette, "palette"), (add, "add"), (self._device, "device"),
                            (self._policy, "policy"), (self._stages, "stages"),
                            (self._before, "before"), (self._after, "after"),
                            (self._status, "status"), (self._error_label, "error"),
                            (self._plan, "plan"), (self._code, "code")):
            widget.add_class(f"hermes-builder-{cls}")
        images = w.HBox([w.VBox([w.HTML("<b>before</b>"), self._before]),
                         w.VBox([w.HTML("<b>after</b>"), self._after])])
        preview = w.VBox([images, self._status, self._error_label])
        preview.add_class("hermes-builder-preview")
        super().__init__([w.HBox([self._palette, add, self._device, self._policy]),
                          w.HBox([self._stages, preview]), self._plan, self._code])
        self.add_class("hermes-builder")
        self.device, self.policy = device, policy
        self._device.observe(lambda _: self._refresh(), names="value")
        self._policy.observe(lambda _: self._refresh(), names="value")
        if pipeline is not None:
            start = compose(*pipeline) if isinstance(pipeline, (list, tuple)) else compose(pipeline)
            self._entries.extend(self._entry(stage) for stage in start.stages)
        self._refresh()

    # ---- the pipeline ----------------------------------------------------------------------
    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages in order (what ``pipeline`` composes)."""
        return tuple(e.stage for e in self._entries)

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline as it stands (``hm.compose()`` of the stages; the identity when empty)."""
        return compose(*self.stages)

    def add(self, stage: str | Stage | Pipeline, /, **params: Any) -> PipelineBuilder:
        """Append a stage: a catalogue name with parameters (``add("gaussian_blur",
        kernel_size=7)``), a ``Stage`` (``add(hm.sobel(axis=-2))``) or a whole ``Pipeline``."""
        if isinstance(stage, Pipeline):
            entries = [self._entry(s) for s in stage.stages]
        elif isinstance(stage, str):
            entries = [self._entry(stage, params)]
        elif isinstance(stage, Stage):
            if params:
                raise TypeError("add: pass parameters with a stage name, not with a Stage")
            entries = [self._entry(stage)]
        else:
            raise TypeError(f"add: expected a stage name, Stage or Pipeline, got {stage!r}")
        self._entries.extend(entries)
        self._refresh()
        return self

    def remove(self, index: int) -> PipelineBuilder:
        """Remove the stage at ``index`` (0-based; negative counts from the end)."""
        del self._entries[self._index(index)]
        self._refresh()
        return self

    def move(self, index: int, to: int) -> PipelineBuilder:
        """Move the stage at ``index`` to position ``to`` (both integers; ``to`` is clamped
        to the ends). A bad argument raises before anything moves."""
        source, target = self._index(index), _position(to, "move: to")
        entry = self._entries.pop(source)
        self._entries.insert(max(0, min(target, len(self._entries))), entry)
        self._refresh()
        return self

    def clear(self) -> PipelineBuilder:
        self._entries.clear()
        self._refresh()
        return self

    def set(self, index: int, **params: Any) -> PipelineBuilder:
        """Change parameters of the stage at ``index``; out-of-range values raise ValueError."""
        entry = self._entries[self._index(index)]
        if entry.custom:
            raise ValueError(f"set: stage {index} ({entry.name}) is a custom Stage with no "
                             "parameters the builder knows")
        self._update(entry, params)
        return self

    def to_code(self) -> str:
        """Python that rebuilds this pipeline and assigns it to ``pipeline``."""
        return pipeline_code([None if e.custom else (e.name, e.params) for e in self._entries],
                             self.device, self.policy)

    # ---- where it runs, and what the preview shows -----------------------------------------
    @property
    def device(self) -> str:
        """Where the preview runs: a device id from ``hm.devices()``, or "auto" (the policy)."""
        return self._device.value

    @device.setter
    def device(self, value: str) -> None:
        allowed = [v for _, v in self._device.options]
        if str(value) not in allowed:
            raise ValueError(f"device={value!r} is not available; choose one of {allowed}")
        self._device.value = str(value)

    @property
    def policy(self) -> str:
        """The placement policy for unpinned kernels (``hermes_nb.context.POLICIES``)."""
        return self._policy.value

    @policy.setter
    def policy(self, value: str) -> None:
        if value not in POLICIES:
            raise ValueError(f"policy={value!r} is unknown; choose one of {', '.join(POLICIES)}")
        self._policy.value = value

    @property
    def image(self) -> np.ndarray:
        """The input image; assign a new one to preview the pipeline on it."""
        return self._image

    @image.setter
    def image(self, value: Any) -> None:
        self._image = as_image(value)
        self._before.value = to_png(self._image)
        self._refresh()

    @property
    def result(self) -> np.ndarray | None:
        """The last good preview's output (kept when a later preview fails)."""
        return None if self._result is None else self._result.image

    @property
    def preview_png(self) -> bytes:
        """The "after" picture as PNG bytes, e.g. for ``IPython.display.Image``."""
        return bytes(self._after.value)

    @property
    def plan(self) -> Plan | None:
        """The fused plan of the last good preview."""
        return None if self._result is None else self._result.plan

    @property
    def profile(self) -> Profile | None:
        """The kernel timings of the last good preview."""
        return None if self._result is None else self._result.profile

    @property
    def error(self) -> str | None:
        """Why the newest preview failed, or None."""
        return self._error

    @property
    def worker(self) -> PreviewRunner:
        """The preview worker: its ``generation``, and how many requests it ``skipped`` or
        ``dropped`` because a newer one came."""
        return self._runner

    def wait(self, timeout: float | None = 120.0) -> PipelineBuilder:
        """Block until the newest preview is done (TimeoutError after ``timeout`` seconds)."""
        self._runner.wait(timeout)
        return self

    def close(self) -> None:
        runner = getattr(self, "_runner", None)  # absent when __init__ failed early
        if runner is not None:
            runner.close()
        super().close()

    def __repr__(self) -> str:
        return f"PipelineBuilder({self.pipeline!r}, device={self.device!r}, policy={self.policy!r})"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The widget, and a picture of it as it is shown (before/after, plan, code) that a
        saved notebook keeps for when the widget is gone."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:  # a closed widget shows nothing
            return None
        # a slow preview: the picture shows the input as "after" too
        with contextlib.suppress(TimeoutError):
            self._runner.wait(SNAPSHOT_WAIT_S)
        names = " → ".join(e.name for e in self._entries) or "no stages"
        summary = f"Hermes pipeline builder: {len(self._entries)} stage(s): {names}"
        return snapshot_bundle(bundle, self._snapshot_html(), summary, ["hermes-builder"])

    def _snapshot_html(self) -> str:
        figures = "".join(
            f"<figure style='margin:0'><figcaption><b>{label}</b></figcaption><img alt='{label}' "
            f"style='width:360px' src='data:image/png;base64,"
            f"{base64.b64encode(thumbnail_png(bytes(image.value))).decode()}'></figure>"
            for label, image in (("before", self._before), ("after", self._after)))
        return (f"<div style='display:flex;gap:8px'>{figures}</div>"
                f"{self._plan.value}{self._code.value}")

    # ---- internals -------------------------------------------------------------------------
    def _index(self, index: int) -> int:
        index = _position(index, "stage index")
        n = len(self._entries)
        if not -n <= index < n:
            raise IndexError(f"stage index {index} is out of range for {n} stage(s)")
        return index % n

    def _entry(self, stage: str | Stage, params: dict[str, Any] | None = None) -> Entry:
        if isinstance(stage, Stage) and stage.name not in CATALOGUE:
            entry = Entry(stage.name, dict(stage.params), stage, custom=True)
        else:
            name, given = (stage.name, stage.params) if isinstance(stage, Stage) else (stage, params)
            built, checked = make_stage(name, dict(given or {}))
            entry = Entry(name, checked, built, custom=False)
            for pname, param in CATALOGUE[name].params.items():
                ctl = control(param, pname, checked[pname])
                ctl.observe(lambda ch, e=entry, n=pname: self._on_control(e, n, ch["new"]),
                            names="value")
                entry.controls[pname] = ctl
        entry.box = stage_box(entry, self._on_button)
        return entry

    def _on_button(self, entry: Entry, action: int) -> None:
        i = self._entries.index(entry)
        if action == 0:
            self.remove(i)
        elif 0 <= i + action < len(self._entries):
            self.move(i, i + action)

    def _on_control(self, entry: Entry, name: str, raw: Any) -> None:
        if self._syncing:
            return
        param = CATALOGUE[entry.name].params[name]
        try:
            if isinstance(param, KernelParam):
                raw = parse_kernel(raw)
            elif isinstance(param, FloatParam) and param.optional and raw <= param.lo:
                raw = None  # the slider's lowest value stands for "automatic"
            self._update(entry, {name: raw})
        except (TypeError, ValueError) as exc:
            entry.error.value = f"<span style='color:#b00'>{html.escape(str(exc))}</span>"
            self._sync_controls(entry)  # back to the last valid value

    def _update(self, entry: Entry, changes: dict[str, Any]) -> None:
        entry.stage, entry.params = make_stage(entry.name, {**entry.params, **changes})
        entry.error.value = ""
        self._sync_controls(entry)
        self._refresh()

    def _sync_controls(self, entry: Entry) -> None:
        self._syncing = True
        try:
            for name, ctl in entry.controls.items():
                value = entry.params[name]
                if isinstance(ctl, w.Textarea):
                    ctl.value = format_kernel(value)
                elif value is None:
                    ctl.value = ctl.min
                else:
                    ctl.value = value
        finally:
            self._syncing = False

    def _refresh(self) -> None:
        for i, e in enumerate(self._entries):
            note = " <i>(custom stage, set in code)</i>" if e.custom else ""
            e.title.value = f"<b>{i + 1}. {html.escape(e.name)}</b>{note}"
        empty = w.HTML("<i>No stages: the pipeline is the identity. Add one above.</i>")
        self._stages.children = [e.box for e in self._entries] or [empty]
        try:
            code = self.to_code()
        except ValueError as exc:
            code = f"# {exc}"
        self._code.value = ("<b>Code</b> (<code>builder.to_code()</code>)"
                            f"<pre>{html.escape(code)}</pre>")
        self._schedule()

    def _schedule(self) -> None:
        image, stages = self._image, self.stages
        device, policy = self.device, self.policy
        self._status.value = ("<i>computing… (a kernel with new parameters compiles once, "
                              "then runs from the cache)</i>")

        def job(gen: int) -> tuple[PreviewResult, str]:
            result = run_preview(image, stages, device, policy, gen)
            return result, plan_html(result.plan, result.profile, [s.name for s in stages],
                                     stages_per_kernel(result), result.wall_s)

        self._runner.submit(job, early=lambda gen: quick_preview(image, stages))

    def _deliver_early(self, gen: int, quick: QuickPreview) -> None:
        """The host's quick result, shown while the real run (maybe compiling) goes on."""
        self._after.value = quick.png
        self._quick = quick
        self._status.value = (f"<i>preview {gen}: NumPy reference in {quick.seconds * 1e3:.0f} ms; "
                              "running the fused pipeline…</i>")

    def _deliver(self, gen: int, value: Any, error: BaseException | None) -> None:
        if error is not None:
            self._error = str(error) if isinstance(error, StageError) else (
                f"running the pipeline: {type(error).__name__}: {error}")
            self._error_label.value = (
                f"<div style='color:#b00'>⚠ {html.escape(self._error)}<br><i>the preview "
                "shows the last good result</i></div>")
            self._status.value = f"<i>preview {gen} failed</i>"
            return
        result, plan = value
        self._after.value = result.png
        self._error_label.value = ""
        shape = f"{'×'.join(map(str, result.image.shape))} {result.image.dtype}"
        where = html.escape(", ".join(sorted({k.device for k in result.plan.kernels})) or "no kernels")
        took = f"{result.wall_s * 1e3:.0f} ms"
        self._result, self._error = result, None
        self._plan.value = plan
        self._status.value = f"preview {gen}: {shape} on {where} in {took}"
