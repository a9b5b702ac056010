"""A LoadSampler's history: busy fraction and memory per device, and each queue's length."""

from __future__ import annotations

import weakref

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, DataRange1d, HoverTool, LayoutDOM, LinearAxis, Range1d
from bokeh.plotting import figure

from hermes_nb.backends.load import LoadSnapshot
from hermes_nb.runtime.monitor import LoadSampler
from hermes_nb.widgets._common import device_colors, message

EMPTY = "no load samples yet: call sampler.sample() or sampler.start() first"


def _columns(snapshots: list[LoadSnapshot]) -> dict[str, list]:
    return {
        "time": [s.timestamp * 1e3 for s in snapshots],  # ms since the epoch: a datetime axis
        "busy": [s.busy_fraction for s in snapshots],
        "memory_mb": [s.memory_in_use / 1e6 for s in snapshots],
        "queued": [s.queued for s in snapshots],
        "expected_free_s": [s.expected_free_s for s in snapshots],
        "completed": [s.completed for s in snapshots],
    }


def load_figure(sampler: LoadSampler | None) -> LayoutDOM:
    """Per device, busy fraction (left axis) and memory in use (right axis) over ``sampler``'s
    history, then a bar of each device's latest queue length.

    The data sources are named ``load:<device>`` and ``queue``; :func:`stream_load` appends
    newer samples to them (or find one with
    ``layout.select_one({"name": "load:cpu:0", "type": ColumnDataSource})`` and ``.stream()``)."""
    if not isinstance(sampler, LoadSampler):
        return message(EMPTY if sampler is None else
                       f"load_figure: expected a LoadSampler, got {type(sampler).__name__}")
    history = {dev: list(snaps) for dev, snaps in list(sampler.history.items())}
    history = {dev: snaps for dev, snaps in history.items() if snaps}
    if not history:
        return message(EMPTY)
    colors = device_colors(history)
    rows: list[LayoutDOM] = []
    x_range = None
    for dev, snaps in history.items():
        source = ColumnDataSource(data=_columns(snaps), name=f"load:{dev}")
        fig = figure(title=dev, x_axis_type="datetime", height=180, sizing_mode="stretch_width",
                     y_range=Range1d(0, 1.05), y_axis_label="busy fraction",
                     tools="xpan,xwheel_zoom,reset,save")
        if x_range is None:
            x_range = fig.x_range
        else:
            fig.x_range = x_range  # every device pans together
        # the memory axis follows the data as it streams in (a fixed range would clip growth)
        memory_range = DataRange1d(start=0, range_padding=0.2, only_visible=True)
        fig.extra_y_ranges = {"memory": memory_range}
        fig.add_layout(LinearAxis(y_range_name="memory", axis_label="memory MB"), "right")
        busy = fig.line(x="time", y="busy", source=source, color=colors[dev], line_width=2,
                        legend_label="busy")
        memory = fig.line(x="time", y="memory_mb", source=source, y_range_name="memory",
                          color="#444", line_dash="dashed", legend_label="memory")
        memory_range.renderers = [memory]
        fig.add_tools(HoverTool(renderers=[busy], mode="vline", tooltips=[
            ("busy", "@busy{0.00}"), ("memory", "@memory_mb{0.0} MB"), ("queued", "@queued"),
            ("free in", "@expected_free_s{0.000} s"), ("completed", "@completed"),
        ]))
        fig.legend.location = "top_left"
        rows.append(fig)
    devices = list(history)
    queue = ColumnDataSource(data={
        "device": devices, "queued": [history[d][-1].queued for d in devices],
        "color": [colors[d] for d in devices],
    }, name="queue")
    bars = figure(title="queue length (latest sample)", x_range=devices, height=180,
                  sizing_mode="stretch_width", tools="save")
    bars.vbar(x="device", top="queued", width=0.6, source=queue, fill_color="color",
              name="queue")
    bars.y_range.start = 0
    bars.add_tools(HoverTool(tooltips=[("device", "@device"), ("queued", "@queued")]))
    rows.append(bars)
    return column(*rows, sizing_mode="stretch_width")


# each layout's data sources by name: searching the model tree on every update would cost
# most of a live monitor's CPU time
_sources: weakref.WeakKeyDictionary[LayoutDOM, dict[str, ColumnDataSource]] = (
    weakref.WeakKeyDictionary())


def _named_sources(layout: LayoutDOM) -> dict[str, ColumnDataSource]:
    found = _sources.get(layout)
    if found is None:
        found = {m.name: m for m in layout.select({"type": ColumnDataSource}) if m.name}
        _sources[layout] = found
    return found


def stream_load(layout: LayoutDOM, sampler: LoadSampler) -> int:
    """Append the samples newer than what ``layout`` (from :func:`load_figure`) shows, and
    refresh the queue bars; returns how many samples were added."""
    added = 0
    sources = _named_sources(layout)
    queue = sources.get("queue")
    for dev, snaps in list(sampler.history.items()):
        source = sources.get(f"load:{dev}")
        if not isinstance(source, ColumnDataSource):
            continue  # a device that had no samples when the layout was drawn
        last = source.data["time"][-1] if source.data["time"] else float("-inf")
        newer = [s for s in list(snaps) if s.timestamp * 1e3 > last]
        if newer:
            source.stream(_columns(newer), rollover=snaps.maxlen)
            added += len(newer)
        if isinstance(queue, ColumnDataSource) and snaps and dev in queue.data["device"]:
            i = list(queue.data["device"]).index(dev)
            queue.patch({"queued": [(i, snaps[-1].queued)]})
    return added
