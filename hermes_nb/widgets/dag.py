"""A plan as a left-to-right DAG: one box per kernel, columns by depth, edges from inputs."""

from __future__ import annotations

from bokeh.models import ColumnDataSource, Div, HoverTool, Range1d
from bokeh.plotting import figure

from hermes_nb.api.plan import Kernel, Plan
from hermes_nb.runtime.plan import kernel_names
from hermes_nb.runtime.profile import Profile
from hermes_nb.widgets._common import device_colors, fmt_bytes, fmt_estimates, fmt_ms, message
from hermes_nb.widgets.palette import device_legend, device_order

EMPTY = "the plan has no kernels: explain() a tensor that does some work"
BOX_W, BOX_H = 0.85, 0.6


def depths(kernels: list[Kernel]) -> dict[str, int]:
    """Each kernel's column: 0 without kernel inputs, else 1 + the deepest kernel input."""
    by_name = {k.name: k for k in kernels}
    depth: dict[str, int] = {}

    def visit(name: str, path: frozenset[str]) -> int:
        if name in depth:
            return depth[name]
        inputs = [i for i in by_name[name].inputs if i in by_name and i not in path]
        d = 1 + max((visit(i, path | {name}) for i in inputs), default=-1)
        depth[name] = d
        return d

    for k in kernels:
        visit(k.name, frozenset())
    return depth


def layout_positions(kernels: list[Kernel]) -> dict[str, tuple[float, float]]:
    """(x, y) of each kernel's box centre: x = depth, y = its row within that column."""
    depth = depths(kernels)
    rows: dict[int, int] = {}
    pos: dict[str, tuple[float, float]] = {}
    for k in kernels:
        row = rows.get(depth[k.name], 0)
        rows[depth[k.name]] = row + 1
        pos[k.name] = (float(depth[k.name]), -float(row))
    return pos


def _measured(profile: Profile | None) -> tuple[dict[str, str], dict[str, float]]:
    """Per kernel key: the devices that ran it, joined, and its measured seconds."""
    runs = profile.per_kernel() if profile is not None else {}
    return ({key: "+".join(devs) for key, (_, devs) in runs.items()},
            {key: s for key, (s, _) in runs.items()})


def _box_label(name: str, seconds: float | None) -> str:
    """A box's text: the kernel's name, and its measured time below it after a run."""
    short = name if len(name) <= 26 else name[:25] + "…"
    return short if seconds is None else f"{short}\n{seconds * 1e3:.2f} ms"


def placement(plan: Plan | Profile | None, profile: Profile | None = None) -> figure | Div:
    """The kernels of ``plan`` as boxes coloured by device (a legend names them), laid out
    left to right by depth, with an edge from each kernel input; each box shows the kernel's
    name ("edges: blur5+sobel") and its measured time; hover for ops, output, traffic,
    device, why, and the estimated vs measured time (the run's, its compile apart). Given a
    Profile, shows the graph that run executed."""
    if isinstance(plan, Profile):
        plan, profile = plan.plan, plan
        if plan is None:
            return message("this profile carries no plan: it comes from a run on a cluster")
    if not isinstance(plan, Plan):
        return message("nothing to place: pass the Plan from tensor.explain()" if plan is None
                       else f"placement: expected a hermes Plan, got {type(plan).__name__}")
    kernels = list(plan.kernels)
    if not kernels:
        return message(EMPTY)
    ran_on, measured = _measured(profile)
    compiled: dict[str, float] = {}
    for c in profile.compile_events() if profile is not None else ():
        kernel = c.key.split("[", 1)[0]
        compiled[kernel] = compiled.get(kernel, 0.0) + c.seconds
    device = {k.name: ran_on.get(k.name, k.device) for k in kernels}
    pos = layout_positions(kernels)
    colors = device_colors(device.values())
    title = (profile.kernel_names() if profile is not None else kernel_names(plan))
    names = set(pos)
    boxes = ColumnDataSource(data={
        "name": [k.name for k in kernels],
        "title": [title.get(k.name, k.name) for k in kernels],
        "x": [pos[k.name][0] for k in kernels],
        "y": [pos[k.name][1] for k in kernels],
        "label": [_box_label(title.get(k.name, k.name), measured.get(k.name)) for k in kernels],
        "ops": [" + ".join(k.ops) for k in kernels],
        "shape": [str(list(k.shape)) for k in kernels],
        "dtype": [k.dtype for k in kernels],
        "bytes": [fmt_bytes(k.bytes_moved) for k in kernels],
        "device": [device[k.name] for k in kernels],
        "reason": [k.reason for k in kernels],
        "estimates": [fmt_estimates(k.estimates) for k in kernels],
        "estimate": [fmt_ms(k.estimates.get(k.device)) for k in kernels],
        "measured": [fmt_ms(measured.get(k.name)) for k in kernels],
        "compile": [fmt_ms(compiled[k.name]) if k.name in compiled else "—" for k in kernels],
        "sources": [", ".join(i for i in k.inputs if i not in names) or "—" for k in kernels],
        "color": [colors[device[k.name]] for k in kernels],
    }, name="kernels")
    edges = [(i, k.name) for k in kernels for i in k.inputs if i in names]
    edge_source = ColumnDataSource(data={
        "start": [a for a, _ in edges],
        "end": [b for _, b in edges],
        "xs": [[pos[a][0] + BOX_W / 2, pos[b][0] - BOX_W / 2] for a, b in edges],
        "ys": [[pos[a][1], pos[b][1]] for a, b in edges],
    }, name="edges")
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    fig = figure(
        title=f"{'Run' if profile is not None else 'Plan'}: {len(kernels)} kernel(s)",
        tools="pan,wheel_zoom,reset,save",
        x_range=Range1d(min(xs) - 0.6, max(xs) + 0.6), y_range=Range1d(min(ys) - 0.6, 0.6),
        # room on the right for the legend
        width=max(340, 230 * (int(max(xs)) + 1) + 110), height=max(160, 90 * (len(set(ys)) + 1)),
    )
    fig.multi_line(xs="xs", ys="ys", source=edge_source, line_color="#888", line_width=1.5,
                   name="edges")
    rects = fig.rect(x="x", y="y", width=BOX_W, height=BOX_H, source=boxes, fill_color="color",
                     fill_alpha=0.8, line_color="black", name="kernels")
    fig.text(x="x", y="y", text="label", source=boxes, text_align="center",
             text_baseline="middle", text_font_size="8pt", name="labels")
    shown = device_order(device.values())
    device_legend(fig, rects, shown, {d: list(device.values()).index(d) for d in shown})
    fig.add_tools(HoverTool(renderers=[rects], tooltips=[
        ("kernel", "@title"), ("key", "@name"), ("ops", "@ops"), ("output", "@dtype @shape"),
        ("traffic", "@bytes"),
        ("device", "@device"), ("estimated", "@estimate"), ("measured", "@measured"),
        ("compile", "@compile"), ("why", "@reason"), ("all estimates", "@estimates"),
        ("source inputs", "@sources"),
    ]))
    fig.axis.visible = False
    fig.grid.visible = False
    return fig
