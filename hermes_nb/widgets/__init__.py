"""Notebook views of profiles, plans, device load and fusion.

Bokeh layouts (``timeline``, ``placement``, ``load_figure``, ``fusion_diagram``; ``to_html``
embeds one offline) and the widgets that show them live in a notebook (``show``,
``placement_view``, ``timeline_view``, ``fusion_view``, ``LoadMonitor``). Needs the ``notebook`` extra.
"""

from hermes_nb.widgets.monitor import LoadMonitor, load_monitor
from hermes_nb.widgets.show import (
    ViewWidget,
    fusion_view,
    load_bokehjs,
    placement_view,
    show,
    timeline_view,
)
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
    "LoadMonitor",
    "ViewWidget",
    "fusion_diagram",
    "fusion_view",
    "load_bokehjs",
    "load_figure",
    "load_monitor",
    "placement",
    "placement_view",
    "show",
    "stream_load",
    "timeline",
    "timeline_view",
    "to_html",
    "view",
]
