"""A LoadSampler's history: busy % and memory per device, and each queue's length.

The time axis counts seconds before the latest sample; a gap in the sampling (a paused
monitor, a busy machine) breaks the lines instead of joining its ends. ``cpu:0``'s NumPy
memory is not pooled, so its memory line is this process's resident set size (RSS)."""

from __future__ import annotations

import math
import os
import weakref

from bokeh.layouts import column
from bokeh.models import (
    ColumnDataSource,
    CustomJSTickFormatter,
    DataRange1d,
    HoverTool,
    LayoutDOM,
    LinearAxis,
    Range1d,
)
from bokeh.plotting import figure

from hermes_nb.backends.load import LoadSnapshot
from hermes_nb.runtime.monitor import LoadSampler
from hermes_nb.widgets._common import device_colors, message
from hermes_nb.widgets.palette import device_order

EMPTY = "no load samples yet: call sampler.sample() or sampler.start() first"
#: a pause longer than this many sampling intervals (and at least GAP_MIN_S) breaks the lines
GAP_INTERVALS, GAP_MIN_S = 3.0, 0.5
NAN = float("nan")
STOPPED = "queue length: sampling stopped"
# our own fixed script: tick labels as seconds before the latest sample, not dates
AGO = """const t = source.data.time;
const last = t.length ? t[t.length - 1] : tick;
const s = (tick - last) / 1000;
return (Math.abs(s) < 0.05 ? '0' : s.toFixed(Math.abs(s) < 10 ? 1 : 0)) + ' s';"""


def process_rss() -> int:
    """This process's resident set size in bytes (0 where it cannot be read)."""
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # psutil missing: Linux's /proc
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return 0


def shows_rss(device: str, snaps: list[LoadSnapshot]) -> bool:
    """Whether ``device``'s memory line is the process RSS: a CPU without a memory pool."""
    return device.startswith("cpu") and not any(s.memory_in_use for s in snaps)


def memory_unit(peak_bytes: float) -> tuple[float, str]:
    """(bytes per unit, unit name): GB from 1 GB up, else MB."""
    return (1e9, "GB") if peak_bytes >= 1e9 else (1e6, "MB")


def _columns(snapshots: list[LoadSnapshot], gap_s: float, scale: float, rss: bool,
             after: float | None = None) -> dict[str, list]:
    """Columns of ``snapshots``; a NaN row goes where the sampling paused longer than
    ``gap_s`` (also before the first, from ``after``, the last time already shown)."""
    cols: dict[str, list] = {c: [] for c in (
        "time", "busy", "busy_pct", "memory_mb", "memory", "queued", "expected_free_s",
        "completed")}
    previous = after
    for i, s in enumerate(snapshots):
        if previous is not None and s.timestamp - previous > gap_s:
            for name, values in cols.items():
                values.append((previous + s.timestamp) / 2 * 1e3 if name == "time" else NAN)
        # the RSS is read now: only the newest sample of a history can have it
        held = (process_rss() if i == len(snapshots) - 1 else NAN) if rss else s.memory_in_use
        for name, value in (
                ("time", s.timestamp * 1e3), ("busy", s.busy_fraction),
                ("busy_pct", s.busy_fraction * 100), ("memory_mb", s.memory_in_use / 1e6),
                ("memory", held / scale), ("queued", s.queued),
                ("expected_free_s", s.expected_free_s), ("completed", s.completed)):
            cols[name].append(value)
        previous = s.timestamp
    return cols


# per layout: each device's memory scale and whether it shows the RSS
_scales: weakref.WeakKeyDictionary[LayoutDOM, dict[str, tuple[float, bool]]] = (
    weakref.WeakKeyDictionary())


def _gap(sampler: LoadSampler) -> float:
    return max(GAP_INTERVALS * sampler.interval_s, GAP_MIN_S)


def _device_figure(dev: str, snaps: list[LoadSnapshot], color: str, gap_s: float
                   ) -> tuple[figure, ColumnDataSource, tuple[float, bool]]:
    rss = shows_rss(dev, snaps)
    peak = process_rss() if rss else max(s.memory_in_use for s in snaps)
    scale, unit = memory_unit(peak)
    source = ColumnDataSource(data=_columns(snaps, gap_s, scale, rss), name=f"load:{dev}")
    fig = figure(title=dev, height=180, sizing_mode="stretch_width",
                 y_range=Range1d(0, 105), y_axis_label="busy %",
                 x_axis_label="seconds before the latest sample",
                 tools="xpan,xwheel_zoom,reset,save")
    fig.xaxis.formatter = CustomJSTickFormatter(args={"source": source}, code=AGO)
    # the memory axis follows the data as it streams in (a fixed range would clip growth)
    memory_range = DataRange1d(start=0, range_padding=0.2, only_visible=True)
    fig.extra_y_ranges = {"memory": memory_range}
    what = f"process RSS {unit}" if rss else f"memory {unit}"
    fig.add_layout(LinearAxis(y_range_name="memory", axis_label=what), "right")
    busy = fig.line(x="time", y="busy_pct", source=source, color=color, line_width=2,
                    legend_label="busy %")
    memory = fig.line(x="time", y="memory", source=source, y_range_name="memory",
                      color="#444", line_dash="dashed", legend_label=what)
    memory_range.renderers = [memory]
    fig.add_tools(HoverTool(renderers=[busy], mode="vline", tooltips=[
        ("busy", "@busy_pct{0} %"), (what.split(" ")[0] if not rss else "process RSS",
                                     f"@memory{{0.00}} {unit}"),
        ("queued", "@queued"), ("free in", "@expected_free_s{0.000} s"),
        ("completed", "@completed"),
    ]))
    fig.legend.location = "top_left"
    return fig, source, (scale, rss)


def load_figure(sampler: LoadSampler | None) -> LayoutDOM:
    """Per device (in device order), busy % (left axis) and memory in use in MB or GB (right
    axis; ``cpu:0``: the process RSS) over ``sampler``'s history, then a bar of each
    device's latest queue length.

    The data sources are named ``load:<device>`` and ``queue``; :func:`stream_load` appends
    newer samples to them (or find one with
    ``layout.select_one({"name": "load:cpu:0", "type": ColumnDataSource})`` and ``.stream()``)."""
    if not isinstance(sampler, LoadSampler):
        return message(EMPTY if sampler is None else
                       f"load_figure: expected a LoadSampler, got {type(sampler).__name__}")
    history = {dev: list(snaps) for dev, snaps in list(sampler.history.items())}
    history = {dev: history[dev] for dev in device_order(history) if history[dev]}
    if not history:
        return message(EMPTY)
    colors = device_colors(history)
    rows: list[LayoutDOM] = []
    scales: dict[str, tuple[float, bool]] = {}
    x_range = None
    for dev, snaps in history.items():
        fig, _, scales[dev] = _device_figure(dev, snaps, colors[dev], _gap(sampler))
        if x_range is None:
            x_range = fig.x_range
        else:
            fig.x_range = x_range  # every device pans together
        rows.append(fig)
    devices = list(history)
    queue = ColumnDataSource(data={
        "device": devices, "queued": [history[d][-1].queued for d in devices],
        "color": [colors[d] for d in devices],
    }, name="queue")
    bars = figure(title="queue length (latest sample)", x_range=devices, height=180,
                  sizing_mode="stretch_width", tools="save", name="queue_figure")
    bars.vbar(x="device", top="queued", width=0.6, source=queue, fill_color="color",
              name="queue")
    bars.y_range.start = 0
    bars.add_tools(HoverTool(tooltips=[("device", "@device"), ("queued", "@queued")]))
    rows.append(bars)
    layout = column(*rows, sizing_mode="stretch_width")
    _scales[layout] = scales
    return layout


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
    """Append the samples newer than what ``layout`` (from :func:`load_figure`) shows, a
    break before them after a pause, and refresh the queue bars; returns how many samples
    were added."""
    added = 0
    sources = _named_sources(layout)
    scales = _scales.get(layout, {})
    queue = sources.get("queue")
    for dev, snaps in list(sampler.history.items()):
        source = sources.get(f"load:{dev}")
        if not isinstance(source, ColumnDataSource):
            continue  # a device that had no samples when the layout was drawn
        times = [t for t in source.data["time"] if not math.isnan(t)]
        last = times[-1] if times else float("-inf")
        newer = [s for s in list(snaps) if s.timestamp * 1e3 > last]
        if newer:
            scale, rss = scales.get(dev, (1e6, False))
            after = last / 1e3 if times else None
            source.stream(_columns(newer, _gap(sampler), scale, rss, after),
                          rollover=snaps.maxlen)
            added += len(newer)
        if isinstance(queue, ColumnDataSource) and snaps and dev in queue.data["device"]:
            i = list(queue.data["device"]).index(dev)
            queue.patch({"queued": [(i, snaps[-1].queued)]})
    return added


def stop_load(layout: LayoutDOM) -> None:
    """After sampling stops: the queue bars drop to zero and say so, instead of showing a
    last queue that no longer exists."""
    queue = _named_sources(layout).get("queue")
    if isinstance(queue, ColumnDataSource):
        queue.data = {**queue.data, "queued": [0] * len(queue.data["device"])}
    bars = layout.select_one({"name": "queue_figure"})
    if bars is not None:
        bars.title.text = STOPPED
