"""A profile as a Gantt chart: one lane per device, a bar per kernel, per copy into it and
per build (compile, self-test) a kernel paid for before it ran."""

from __future__ import annotations

from bokeh.models import ColumnDataSource, Div, FactorRange, GlyphRenderer, HoverTool
from bokeh.plotting import figure

from hermes_nb.runtime.profile import CompileRun, Profile
from hermes_nb.widgets._common import device_colors, fmt_bytes, fmt_ms, message

EMPTY = "nothing has run yet: compute a tensor first"


def timeline(profile: Profile | None) -> figure | Div:
    """Each kernel of ``profile`` as a bar from its start to its end (ms after the run began),
    in its device's lane and colour; hover for key, op, time, estimate, reason and failures.
    A kernel's builds are hatched bars of their own ("compiling fused_stencil on opencl:0")
    before its run's bar."""
    if not isinstance(profile, Profile):
        return message(EMPTY if profile is None else
                       f"timeline: expected a hermes Profile, got {type(profile).__name__}")
    kernels, transfers = profile.snapshot()
    compiles = profile.compile_events()
    if not kernels and not compiles:
        return message(EMPTY)
    lanes = list(dict.fromkeys([*(k.device for k in kernels), *(t.device for t in transfers),
                                *(c.device for c in compiles)]))
    colors = device_colors(lanes)
    origin = profile.started
    source = ColumnDataSource(data={
        "key": [k.key for k in kernels],
        "op": [k.op for k in kernels],
        "device": [k.device for k in kernels],
        "lane": [k.device for k in kernels],
        "start_ms": [(k.run_start - origin) * 1e3 for k in kernels],
        "end_ms": [(k.end - origin) * 1e3 for k in kernels],
        "ms": [f"{k.seconds * 1e3:.3f} ms" for k in kernels],
        "compile": [fmt_ms(k.compile_s) if k.compile_s else "—" for k in kernels],
        "estimate": [fmt_ms(k.estimate_s) for k in kernels],
        "reason": [k.reason for k in kernels],
        "failures": [", ".join(k.failures) or "—" for k in kernels],
        "color": [colors[k.device] for k in kernels],
    }, name="kernels")
    compiled = sum(c.seconds for c in compiles)
    built = f" ({compiled * 1e3:.0f} ms compiling)" if compiles else ""
    fig = figure(
        title=f"Profile: {len(kernels)} kernel(s) in {profile.seconds * 1e3:.2f} ms{built}",
        y_range=FactorRange(factors=list(reversed(lanes))),
        height=max(160, 60 + 50 * len(lanes)), sizing_mode="stretch_width",
        x_axis_label="ms since the run began", tools="xpan,xwheel_zoom,reset,save",
    )
    bars = fig.hbar(y="lane", left="start_ms", right="end_ms", height=0.7, source=source,
                    fill_color="color", line_color="black", line_alpha=0.4, name="kernels")
    copies = ColumnDataSource(data={
        "value": [t.key for t in transfers],
        "route": [f"{t.source} → {t.device}" for t in transfers],
        "lane": [t.device for t in transfers],
        "start_ms": [(t.start - origin) * 1e3 for t in transfers],
        "end_ms": [(t.end - origin) * 1e3 for t in transfers],
        "ms": [f"{t.seconds * 1e3:.3f} ms" for t in transfers],
        "size": [fmt_bytes(t.nbytes) for t in transfers],
    }, name="transfers")
    copy_bars = fig.hbar(y="lane", left="start_ms", right="end_ms", height=0.3, source=copies,
                         fill_color="#bbbbbb", hatch_pattern="/", line_color="black",
                         line_alpha=0.4, name="transfers")
    fig.add_tools(HoverTool(renderers=[_compile_bars(fig, compiles, origin, colors)], tooltips=[
        ("", "@label"), ("kernel", "@key"), ("built", "@what"), ("time", "@ms"),
    ]))
    fig.add_tools(HoverTool(renderers=[copy_bars], tooltips=[
        ("copy", "@route"), ("of", "@value"), ("size", "@size"), ("time", "@ms"),
    ]))
    fig.add_tools(HoverTool(renderers=[bars], tooltips=[
        ("kernel", "@key"), ("op", "@op"), ("device", "@device"), ("time", "@ms"),
        ("compile", "@compile"), ("estimate", "@estimate"), ("why", "@reason"),
        ("failed first on", "@failures"),
    ]))
    fig.ygrid.grid_line_color = None
    return fig


def _compile_bars(fig: figure, compiles: list[CompileRun], origin: float,
                  colors: dict[str, str]) -> GlyphRenderer:
    source = ColumnDataSource(data={
        "label": [c.label for c in compiles],
        "key": [c.key for c in compiles],
        "what": [c.what for c in compiles],
        "lane": [c.device for c in compiles],
        "start_ms": [(c.start - origin) * 1e3 for c in compiles],
        "end_ms": [(c.end - origin) * 1e3 for c in compiles],
        "ms": [f"{c.seconds * 1e3:.1f} ms" for c in compiles],
        "color": [colors[c.device] for c in compiles],
    }, name="compiles")
    # the device's colour, faded and hatched: a one-off cost, not the kernel's run
    return fig.hbar(y="lane", left="start_ms", right="end_ms", height=0.5, source=source,
                    fill_color="color", fill_alpha=0.25, hatch_pattern="x", hatch_alpha=0.5,
                    line_color="black", line_alpha=0.4, name="compiles")
