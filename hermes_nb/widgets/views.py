"""The notebook views, and ``to_html`` to embed any of them with BokehJS inline (offline)."""

from __future__ import annotations

from bokeh.embed import file_html
from bokeh.model import Model
from bokeh.resources import INLINE

from hermes_nb.api.plan import Plan
from hermes_nb.api.tensor import Tensor
from hermes_nb.runtime.monitor import LoadSampler
from hermes_nb.runtime.profile import Profile
from hermes_nb.widgets._common import message
from hermes_nb.widgets.dag import placement
from hermes_nb.widgets.fusion import fusion_diagram
from hermes_nb.widgets.load import load_figure, stream_load
from hermes_nb.widgets.timeline import timeline

__all__ = ["fusion_diagram", "load_figure", "placement", "stream_load", "timeline", "to_html",
           "view"]


NOT_COMPUTED = ("this tensor has not been computed, so nothing has run yet: compute it (or "
                "assign it in a %%hermes cell), then show hm.runtime.last_profile(); "
                "placement_view(tensor) shows where it would run")
COMPUTED = ("a computed tensor keeps its values, not its run: show hm.runtime.last_profile() "
            "right after computing it")


def view(obj: object) -> Model:
    """The view for a hermes object: a Profile's timeline, a Plan's placement, a sampler's load;
    a Bokeh model is returned as it is; for a tensor, a message saying what to show instead."""
    if isinstance(obj, Model):
        return obj
    if isinstance(obj, Tensor):
        return message(COMPUTED if obj.is_materialized else NOT_COMPUTED)
    if isinstance(obj, Profile) or obj is None:
        return timeline(obj)
    if isinstance(obj, Plan):
        return placement(obj)
    if isinstance(obj, LoadSampler):
        return load_figure(obj)
    return message(f"no view for a {type(obj).__name__}")


def to_html(obj: object, title: str = "Hermes") -> str:
    """A standalone HTML page of ``obj`` (a view, or a Profile/Plan/LoadSampler to view) with
    BokehJS inline, so it shows without network access."""
    return file_html(view(obj), INLINE, title)
