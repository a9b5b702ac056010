"""Profiles as a task stream: one lane per device (in a fixed device order), a bar per kernel
labelled with its name and time, per copy into it and per build (compile, self-test) a
kernel paid for before it ran; the last runs side by side, a separator before each."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bokeh.models import ColumnDataSource, Div, FactorRange, HoverTool, Label, Range1d, Span
from bokeh.plotting import figure

from hermes_nb.runtime.profile import CompileRun, Profile, recent_profiles
from hermes_nb.widgets._common import device_colors, fmt_bytes, fmt_ms, message
from hermes_nb.widgets.palette import device_legend, device_order

EMPTY = "nothing has run yet: compute a tensor first"
#: how many runs, up to the one shown, the task stream keeps
RUNS = 5
#: the width a label's character takes (8 pt), and the plot's width it is guessed for
CHAR_PX, PLOT_PX = 6.0, 800.0
#: room right of the last run, for the labels of the bars that end there (share of the time)
RIGHT_MARGIN = 0.2


def _runs(shown: Profile | Sequence[Profile], runs: int | None) -> list[Profile]:
    if isinstance(shown, Profile):
        return recent_profiles(shown)[-max(runs or 1, 1):]
    listed = [p for p in shown if isinstance(p, Profile)]
    return listed[-max(runs or len(listed), 1):]


def _offsets(runs: list[Profile]) -> list[float]:
    """Where each run starts on the shared axis (ms): one after another, a small gap apart,
    so idle time between cells takes no room."""
    spans = [max(p.seconds * 1e3, 1e-3) for p in runs]
    gap = 0.04 * sum(spans)
    offsets, at = [], 0.0
    for span in spans:
        offsets.append(at)
        at += span + gap
    return offsets


def _kernel_rows(runs: list[Profile], offsets: list[float]) -> dict[str, list]:
    cols: dict[str, list] = {c: [] for c in (
        "key", "name", "op", "device", "lane", "run", "start_ms", "end_ms", "ms", "compile",
        "estimate", "reason", "failures")}
    for n, (p, at) in enumerate(zip(runs, offsets), start=1):
        names = p.kernel_names()
        for k in p.snapshot()[0]:
            for col, value in (
                    ("key", k.key), ("name", names.get(k.kernel, k.op)), ("op", k.op),
                    ("device", k.device), ("lane", k.device), ("run", n),
                    ("start_ms", at + (k.run_start - p.started) * 1e3),
                    ("end_ms", at + (k.end - p.started) * 1e3),
                    ("ms", f"{k.seconds * 1e3:.3f} ms"),
                    ("compile", fmt_ms(k.compile_s) if k.compile_s else "—"),
                    ("estimate", fmt_ms(k.estimate_s)), ("reason", k.reason),
                    ("failures", ", ".join(k.failures) or "—")):
                cols[col].append(value)
    return cols


def _labels(bars: list[tuple[str, float, float, str]], total_ms: float
            ) -> list[tuple[str, float, str]]:
    """Each bar's (text, x, align) (``bars``: lane, start, end, text): the text from the bar's
    start where it fits before the next bar in its lane, else ending at the bar's end where
    it fits after the previous one, else no text. A text's width is guessed from its
    length, for a plot :data:`PLOT_PX` wide."""
    out = []
    ms_per_char = CHAR_PX * total_ms * (1 + RIGHT_MARGIN) / PLOT_PX
    for lane, start, end, text in bars:
        need = (len(text) + 1) * ms_per_char
        # bars of the lane that start after this one (overlapping or not), and before it
        after = min((s for ln, s, _, _ in bars if ln == lane and s > start),
                    default=total_ms * (1 + RIGHT_MARGIN))
        before = max((e for ln, s, e, _ in bars if ln == lane and s < start),
                     default=-0.01 * total_ms)
        if text and after - start >= need:
            out.append((text, start, "left"))
        elif text and end - before >= need:
            out.append((text, end, "right"))
        else:
            out.append(("", start, "left"))
    return out


def timeline(profile: Profile | Sequence[Profile] | None, runs: int | None = None
             ) -> figure | Div:
    """The kernels of ``profile`` and of the runs before it in this process (up to ``runs``
    in all, 1 by default, the task stream :data:`RUNS` long in ``%%hermes --timeline``), or
    of a list of profiles (its last ``runs``, all by default), as bars from start to end,
    a lane per device in its colour, with a device legend; bars wide enough carry the
    kernel's name and time. Hover for key, op, time, estimate, reason and failures. A
    kernel's builds are hatched bars of their own ("compiling fused_stencil on opencl:0")
    before its run's bar."""
    if not isinstance(profile, (Profile, list, tuple, type(None))):
        return message(f"timeline: expected a hermes Profile, got {type(profile).__name__}")
    shown = _runs(profile, runs) if profile is not None else []
    if not shown:
        return message(EMPTY)
    offsets = _offsets(shown)
    cols = _kernel_rows(shown, offsets)
    compiles = [(c, p, at) for p, at in zip(shown, offsets) for c in p.compile_events()]
    transfers = [(t, p, at) for p, at in zip(shown, offsets) for t in p.snapshot()[1]]
    if not cols["key"] and not compiles:
        return message(EMPTY)
    lanes = device_order([*cols["device"], *(t.device for t, _, _ in transfers),
                          *(c.device for c, _, _ in compiles)])
    colors = device_colors(lanes)
    total_ms = offsets[-1] + shown[-1].seconds * 1e3
    cols["color"] = [colors[d] for d in cols["device"]]
    n = len(cols["key"])
    texts = _labels([*zip(cols["lane"], cols["start_ms"], cols["end_ms"],
                          (f"{n} {ms}" for n, ms in zip(cols["name"], cols["ms"]))),
                     *((c.device, at + (c.start - p.started) * 1e3, at + (c.end - p.started) * 1e3,
                        f"{_verb(c)} {c.seconds * 1e3:.0f} ms" if c.seconds >= 1e-3 else "")
                       for c, p, at in compiles)], total_ms)
    cols["label"] = [t for t, _, _ in texts[:n]]
    cols["label_x"] = [x for _, x, _ in texts[:n]]
    cols["align"] = [a for _, _, a in texts[:n]]
    source = ColumnDataSource(data=cols, name="kernels")
    fig = figure(
        title=_title(shown), y_range=FactorRange(factors=list(reversed(lanes))),
        x_range=Range1d(-0.01 * total_ms, total_ms * (1 + RIGHT_MARGIN)),
        height=max(180, 70 + 50 * len(lanes)), sizing_mode="stretch_width",
        x_axis_label=("ms since the run began" if len(shown) == 1 else
                      f"ms: the last {len(shown)} runs one after another"),
        tools="xpan,xwheel_zoom,reset,save",
    )
    # builds and copies under the kernels, every text above every bar
    compile_bars, compile_text = _compile_bars(fig, compiles, colors, texts[n:])
    copy_bars = _copy_bars(fig, transfers)
    # at least 3 px of each kernel: one far shorter than its build still shows
    source.data["mid_ms"] = [(a + b) / 2 for a, b in zip(cols["start_ms"], cols["end_ms"])]
    fig.rect(x="mid_ms", y="lane", width=3, width_units="screen", height=0.7, source=source,
             fill_color="color", line_color=None, name="kernel_ticks")
    # a white outline keeps back-to-back kernels apart
    bars = fig.hbar(y="lane", left="start_ms", right="end_ms", height=0.7, source=source,
                    fill_color="color", line_color="white", line_width=1.5, name="kernels")
    fig.text(x="label_x", y="lane", text="label", source=source, text_align="align",
             text_baseline="middle", text_font_size="8pt", text_color="black", name="labels")
    compile_text()
    _separators(fig, shown, offsets)
    rows = {d: cols["device"].index(d) for d in lanes if d in cols["device"]}
    device_legend(fig, bars, [d for d in lanes if d in rows], rows)
    _hovers(fig, bars, copy_bars, compile_bars)
    fig.ygrid.grid_line_color = None
    return fig


def _title(shown: list[Profile]) -> str:
    last = shown[-1]
    n = len(last.snapshot()[0])
    compiled = last.compile_s
    built = f" ({compiled * 1e3:.0f} ms compiling)" if compiled else ""
    runs = f"; {len(shown)} runs shown" if len(shown) > 1 else ""
    return f"Profile: {n} kernel(s) in {last.seconds * 1e3:.2f} ms{built}{runs}"


def _separators(fig: figure, shown: list[Profile], offsets: list[float]) -> None:
    if len(shown) < 2:
        return
    first = len(recent_profiles(shown[-1])) - len(shown) + 1
    for i, at in enumerate(offsets):
        fig.add_layout(Span(location=at, dimension="height", line_color="#555",
                            line_dash="dashed", line_width=1, name="run_separator"))
        fig.add_layout(Label(x=at, y=0, y_units="screen", x_offset=2, y_offset=2,
                             text=f"run {max(first, 1) + i}", text_font_size="8pt",
                             text_color="#555", name="run_label"))


def _copy_bars(fig: figure, transfers: list) -> object:
    copies = ColumnDataSource(data={
        "value": [t.key for t, _, _ in transfers],
        "route": [f"{t.source} → {t.device}" for t, _, _ in transfers],
        "lane": [t.device for t, _, _ in transfers],
        "start_ms": [at + (t.start - p.started) * 1e3 for t, p, at in transfers],
        "end_ms": [at + (t.end - p.started) * 1e3 for t, p, at in transfers],
        "ms": [f"{t.seconds * 1e3:.3f} ms" for t, _, _ in transfers],
        "size": [fmt_bytes(t.nbytes) for t, _, _ in transfers],
    }, name="transfers")
    return fig.hbar(y="lane", left="start_ms", right="end_ms", height=0.3, source=copies,
                    fill_color="#bbbbbb", hatch_pattern="/", line_color="black",
                    line_alpha=0.4, name="transfers")


def _verb(c: CompileRun) -> str:
    return "compiling" if c.kind == "compile" else "self-test"


def _compile_bars(fig: figure, compiles: list, colors: dict[str, str],
                  texts: list[tuple[str, float, str]]) -> tuple[object, Callable[[], None]]:
    source = ColumnDataSource(data={
        "label": [c.label for c, _, _ in compiles],
        "text": [t for t, _, _ in texts],
        "text_x": [x for _, x, _ in texts],
        "align": [a for _, _, a in texts],
        "key": [c.key for c, _, _ in compiles],
        "what": [c.what for c, _, _ in compiles],
        "lane": [c.device for c, _, _ in compiles],
        "start_ms": [at + (c.start - p.started) * 1e3 for c, p, at in compiles],
        "end_ms": [at + (c.end - p.started) * 1e3 for c, p, at in compiles],
        "ms": [f"{c.seconds * 1e3:.1f} ms" for c, _, _ in compiles],
        "color": [colors[c.device] for c, _, _ in compiles],
    }, name="compiles")
    # the device's colour, faded and hatched: a one-off cost, not the kernel's run
    bars = fig.hbar(y="lane", left="start_ms", right="end_ms", height=0.5, source=source,
                    fill_color="color", fill_alpha=0.25, hatch_pattern="x", hatch_alpha=0.3,
                    line_color="black", line_alpha=0.4, name="compiles")

    def text() -> None:  # drawn after the kernels' bars, above the build's bar
        fig.text(x="text_x", y="lane", text="text", source=source, text_align="align",
                 y_offset=-13, text_baseline="middle", text_font_size="7pt",
                 text_color="#333", name="compile_labels")
    return bars, text


def _hovers(fig: figure, bars: object, copy_bars: object, compile_bars: object) -> None:
    fig.add_tools(HoverTool(renderers=[compile_bars], tooltips=[
        ("", "@label"), ("kernel", "@key"), ("built", "@what"), ("time", "@ms"),
    ]))
    fig.add_tools(HoverTool(renderers=[copy_bars], tooltips=[
        ("copy", "@route"), ("of", "@value"), ("size", "@size"), ("time", "@ms"),
    ]))
    fig.add_tools(HoverTool(renderers=[bars], tooltips=[
        ("kernel", "@name"), ("run", "@run"), ("key", "@key"), ("op", "@op"),
        ("device", "@device"), ("time", "@ms"), ("compile", "@compile"),
        ("estimate", "@estimate"), ("why", "@reason"), ("failed first on", "@failures"),
    ]))
