"""Interactive Bokeh views of profiles, plans, device load and fusion (needs ``bokeh``)."""

from hermes_nb.widgets.views import (
    fusion_diagram,
    load_figure,
    placement,
    stream_load,
    timeline,
    to_html,
    view,
)

__all__ = [
    "fusion_diagram", "load_figure", "placement", "stream_load", "timeline", "to_html", "view",
]
