"""Views as notebook widgets: a Bokeh layout inside a jupyter_bokeh ``BokehModel``.

The widget keeps the Python and browser sides of the Bokeh document in sync over the
widget's comm, so a view can be updated after it is shown (the live load monitor streams
into it). jupyter_bokeh's front end needs BokehJS in the page: in a JupyterLab with the Hermes
extension, the lab extension loads it (from the server's ``bokeh`` package, never a CDN) into
every page, so views render after a reload and in a new tab; elsewhere the first view a
kernel shows loads it inline with its output, and :func:`load_bokehjs` loads it again.

Each view's output also carries a static copy of its plot and a one-line summary
(``widgets/fallback.py``): a saved notebook reopened without its kernel shows the last picture.
"""

from __future__ import annotations

from typing import Any

from bokeh.model import Model
from jupyter_bokeh import BokehModel

from hermes_nb.api.image import Pipeline
from hermes_nb.api.plan import Plan, fusion_plans
from hermes_nb.api.tensor import Tensor
from hermes_nb.runtime.monitor import LoadSampler
from hermes_nb.runtime.profile import Profile
from hermes_nb.widgets.fallback import page_has_bokehjs, view_bundle

#: the CSS class each kind of view carries (with ``hermes-view``), for styling and tests
VIEW_CLASSES = {
    type(None): "hermes-timeline",  # view(None): the empty timeline's message
    Profile: "hermes-timeline",
    Plan: "hermes-placement",
    LoadSampler: "hermes-load-monitor",
}


class ViewWidget(BokehModel):
    """A Bokeh layout as a widget; closing it twice is harmless (``BokehModel`` raises).
    ``summary`` is its one-line text form, also what a front end without widgets shows."""

    summary = "Hermes view"

    def __repr__(self) -> str:
        return self.summary

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:  # a closed widget shows nothing
            return None
        return view_bundle(bundle, self._model, self.summary, self._dom_classes)

    @property
    def bokeh_model(self) -> Model:
        """The Bokeh layout shown; changing it updates the view in the browser."""
        return self._model

    def close(self) -> None:
        if getattr(self, "_hermes_closed", False):
            return
        self._hermes_closed = True
        super().close()


_bokehjs_loaded = False


def load_bokehjs(force: bool = False) -> None:
    """Put BokehJS (inline: offline, no CDN) into the notebook page, once per kernel unless
    ``force``; the views' front end calls into it. A kernel started by a Jupyter server with
    the Hermes extension skips it: that server's lab extension has put BokehJS in the page."""
    global _bokehjs_loaded
    if (_bokehjs_loaded or page_has_bokehjs()) and not force:
        return
    from bokeh.io import output_notebook
    from bokeh.resources import INLINE

    output_notebook(resources=INLINE, hide_banner=True)
    _bokehjs_loaded = True


def as_widget(layout: Model, kind: str, summary: str | None = None) -> ViewWidget:
    """``layout`` in a widget carrying the classes ``hermes-view`` and ``kind``, whose text form
    is ``summary``."""
    load_bokehjs()
    widget = ViewWidget(layout)
    widget.add_class("hermes-view")
    widget.add_class(kind)
    widget.summary = summary or f"Hermes {kind.removeprefix('hermes-').replace('-', ' ')} view"
    return widget


def _devices(names: Any) -> str:
    return ", ".join(sorted(set(names))) or "no device"


def summary(obj: Any, kind: str) -> str:
    """One line saying what the view of ``obj`` shows, e.g. ``Hermes timeline: 5 kernels on
    cpu:0, opencl:0``."""
    what = {"hermes-timeline": "timeline", "hermes-placement": "placement",
            "hermes-load-monitor": "load monitor", "hermes-fusion": "fusion"}.get(kind, "view")
    if isinstance(obj, (Profile, Plan)):
        n, planned = len(obj.kernels), "planned " if isinstance(obj, Plan) else ""
        return (f"Hermes {what}: {n} {planned}kernel{'s' * (n != 1)} on "
                f"{_devices(k.device for k in obj.kernels)}")
    if isinstance(obj, LoadSampler):
        return f"Hermes {what}: load of {_devices(obj.history)}"
    if obj is None:
        return f"Hermes {what}: nothing has run yet"
    return f"Hermes {what}: {type(obj).__name__}"


def show(obj: Any) -> ViewWidget:
    """A widget viewing ``obj``: a Profile's timeline, a Plan's placement DAG, a sampler's
    load, or a Bokeh model as it is. Display it (make it a cell's last value)."""
    from hermes_nb.widgets.views import view

    kind = next((css for cls, css in VIEW_CLASSES.items() if isinstance(obj, cls)), "hermes-other")
    return as_widget(view(obj), kind, summary(obj, kind))


def timeline_view(profile: Profile | None = None, runs: int | None = None) -> ViewWidget:
    """A widget of the task stream: ``profile`` (the last run by default) and the runs
    before it in this process, ``runs`` in all (``timeline.RUNS`` by default), a separator
    before each."""
    from hermes_nb.runtime.profile import last_profile
    from hermes_nb.widgets.timeline import RUNS, timeline

    profile = last_profile() if profile is None else profile
    return as_widget(timeline(profile, runs=RUNS if runs is None else runs), "hermes-timeline",
                     summary(profile, "hermes-timeline"))


def placement_view(obj: Plan | Profile | Tensor | None) -> ViewWidget:
    """A widget of the placement DAG: of a Plan, of what a Profile's run executed (with the
    measured time of each kernel), or of where a lazy tensor's kernels would run now."""
    from hermes_nb.widgets.dag import placement
    from hermes_nb.widgets.views import view

    if isinstance(obj, Tensor):
        shown = placement(obj.explain()) if not obj.is_materialized else view(obj)
    else:
        shown = placement(obj)
    what = obj.explain() if isinstance(obj, Tensor) and not obj.is_materialized else obj
    return as_widget(shown, "hermes-placement", summary(what, "hermes-placement"))


def fusion_view(*objs: Tensor | Pipeline, shape: tuple[int, ...] | None = None) -> ViewWidget:
    """A widget of the op graph before fusion with a box around each fused kernel's ops;
    clicking a kernel shows its generated source. Give tensors, or a Pipeline and the image
    ``shape`` to plan it for (default 512×512)."""
    import numpy as np

    from hermes_nb.api.creation import asarray
    from hermes_nb.widgets._common import message
    from hermes_nb.widgets.fusion import fusion_diagram

    # an image buffer, not hm.zeros: the filling would show as a kernel of its own
    image = asarray(np.zeros(tuple(shape or (512, 512)), np.float32))
    tensors = [o(image) if isinstance(o, Pipeline) else o for o in objs]
    bad = [type(t).__name__ for t in tensors if not isinstance(t, Tensor)]
    if not tensors or bad:
        got = f"got {', '.join(bad)}" if bad else "got nothing"
        return as_widget(message(f"fusion_view: expected Tensors or a Pipeline, {got}"),
                         "hermes-fusion")
    if all(t.is_materialized for t in tensors):
        return as_widget(message("fusion_view: these tensors are already computed, nothing is "
                                 "left to fuse: pass the lazy expression"), "hermes-fusion")
    plans = fusion_plans(*tensors)
    return as_widget(fusion_diagram(*plans), "hermes-fusion", _fusion_summary(plans))


def _fusion_summary(plans: tuple[Plan, Plan]) -> str:
    unfused, fused = plans
    return (f"Hermes fusion: {len(unfused.kernels)} op kernel(s) fused into {len(fused.kernels)} "
            f"on {_devices(k.device for k in fused.kernels)}")
