"""The op graph before fusion with each fused kernel drawn as a box around the ops it holds;
selecting a kernel shows its generated source."""

from __future__ import annotations

from bokeh.layouts import column, row
from bokeh.models import (
    ColumnDataSource,
    CustomJS,
    Div,
    HoverTool,
    LayoutDOM,
    PreText,
    Range1d,
    TapTool,
)
from bokeh.plotting import figure

from hermes_nb.api.plan import Kernel, Plan
from hermes_nb.runtime.plan import kernel_names
from hermes_nb.widgets._common import device_colors, message
from hermes_nb.widgets.dag import depths
from hermes_nb.widgets.palette import device_legend, device_order

OP_W, OP_H = 1.1, 0.5  # an op's box
STEP_X, STEP_Y = 1.7, 0.75  # distance between kernel columns, between stacked ops
PAD = 0.18  # margin of a kernel's box around its ops
HINT = "select a kernel (click its box) to see its generated source"
NO_SOURCE = "{name} runs as a library call on {device}: no generated source"


def holdings(unfused: list[Kernel], fused: list[Kernel]) -> dict[str, list[str]]:
    """Fused kernel name -> the unfused kernels (names) it holds, from the plans' provenance;
    plans explained separately carry none, so their ops are matched by name instead."""
    names = {k.name for k in unfused}
    held = {k.name: [m for m in k.members if m in names] for k in fused}
    if any(held.values()):
        return held
    claimed: set[str] = set()
    for k in fused:
        for op in k.ops:
            hit = next((u.name for u in unfused if u.name not in claimed and op in u.ops), None)
            if hit is not None:
                claimed.add(hit)
                held[k.name].append(hit)
    return held


def _layout(unfused: list[Kernel], fused: list[Kernel], held: dict[str, list[str]]
            ) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float, float]]]:
    """Op centres, and each fused kernel's box (x centre, y centre, height): kernels in columns
    by their depth in the fused plan, each kernel's ops stacked inside its box."""
    column_of = depths(fused)
    column_top: dict[int, float] = {}
    op_pos: dict[str, tuple[float, float]] = {}
    boxes: dict[str, tuple[float, float, float]] = {}
    for k in fused:
        ops = held[k.name] or [k.name]
        x = column_of[k.name] * STEP_X
        top = column_top.get(column_of[k.name], 0.0)
        for i, name in enumerate(ops):
            op_pos.setdefault(name, (x, top - PAD - OP_H / 2 - i * STEP_Y))
        height = (len(ops) - 1) * STEP_Y + OP_H + 2 * PAD
        boxes[k.name] = (x, top - height / 2, height)
        column_top[column_of[k.name]] = top - height - 0.35
    # unfused ops no kernel claims (a plan pair that does not match) get a column of their own
    spare_x = (max(column_of.values(), default=-1) + 1) * STEP_X
    spare = [u.name for u in unfused if u.name not in op_pos]
    for i, name in enumerate(spare):
        op_pos[name] = (spare_x, -PAD - OP_H / 2 - i * STEP_Y)
    return op_pos, boxes


def _edge_path(a: tuple[float, float], b: tuple[float, float], k: int
               ) -> tuple[list[float], list[float]]:
    """An edge from op ``a`` to op ``b``: across columns a straight line between their sides;
    within a kernel's column a bracket on the right, each edge at its own offset so stacked
    edges stay apart."""
    if a[0] != b[0]:
        return [a[0] + OP_W / 2, b[0] - OP_W / 2], [a[1], b[1]]
    right = a[0] + OP_W / 2
    out = right + 0.05 + 0.04 * (k % 3)
    return [right, out, out, right], [a[1], a[1], b[1], b[1]]


def fusion_diagram(plan_unfused: Plan | None, plan_fused: Plan | None) -> LayoutDOM:
    """The unfused plan's ops as a left-to-right graph; around them, a box per fused kernel
    coloured by its device. Clicking a kernel's box shows its generated source below.

    Best from ``hermes_nb.api.plan.fusion_plans(t)``, whose plans record which ops each kernel
    holds; two separately explained plans are matched by op name."""
    if not isinstance(plan_unfused, Plan) or not isinstance(plan_fused, Plan):
        return message("fusion_diagram needs two Plans: fusion_plans(t) gives them "
                       "(or t.explain() with and without hm.options(fuse=False))")
    unfused, fused = list(plan_unfused.kernels), list(plan_fused.kernels)
    if not unfused or not fused:
        return message("a plan has no kernels: explain() a tensor that does some work")
    held = holdings(unfused, fused)
    op_pos, boxes = _layout(unfused, fused, held)
    colors = device_colors([k.device for k in fused])
    kernel_of = {op: k.name for k in fused for op in held[k.name]}
    names = kernel_names(plan_fused)

    kernels = ColumnDataSource(data={
        "name": [k.name for k in fused],
        "x": [boxes[k.name][0] for k in fused],
        "y": [boxes[k.name][1] for k in fused],
        "h": [boxes[k.name][2] for k in fused],
        "label_y": [boxes[k.name][1] + boxes[k.name][2] / 2 + 0.12 for k in fused],
        "title": [names[k.name] for k in fused],
        "label": [f"{names[k.name]} · {k.device}" for k in fused],
        "device": [k.device for k in fused],
        "ops": [" + ".join(k.ops) for k in fused],
        "holds": [", ".join(held[k.name]) or "—" for k in fused],
        "color": [colors[k.device] for k in fused],
        "source": [k.source or NO_SOURCE.format(name=k.name, device=k.device) for k in fused],
    }, name="fused")
    shown = [u for u in unfused if u.name in op_pos]
    ops = ColumnDataSource(data={
        "name": [u.name for u in shown],
        "x": [op_pos[u.name][0] for u in shown],
        "y": [op_pos[u.name][1] for u in shown],
        "op": [" + ".join(u.names or u.ops) for u in shown],  # the user's op names
        "output": [f"{u.dtype}{list(u.shape)}" for u in shown],
        "kernel": [kernel_of.get(u.name, "—") for u in shown],
    }, name="unfused")
    edges = [(i, u.name) for u in shown for i in u.inputs if i in op_pos]
    paths = [_edge_path(op_pos[a], op_pos[b], k) for k, (a, b) in enumerate(edges)]
    links = ColumnDataSource(data={
        "start": [a for a, _ in edges], "end": [b for _, b in edges],
        "xs": [xs for xs, _ in paths], "ys": [ys for _, ys in paths],
    }, name="links")

    xs = [p[0] for p in op_pos.values()]
    bottom = min(min(b[1] - b[2] / 2 for b in boxes.values()), min(p[1] for p in op_pos.values()))
    fig = figure(
        title=f"Fusion: {len(unfused)} op(s) → {len(fused)} kernel(s)",
        x_range=Range1d(min(xs) - 0.9, max(xs) + 0.9), y_range=Range1d(bottom - 0.4, 0.6),
        width=max(360, int(170 * (max(xs) - min(xs) + 1.8)) + 110),  # and the legend
        height=max(200, int(80 * (0.8 - bottom) + 60)), tools="pan,wheel_zoom,reset,save",
    )
    boxes_r = fig.rect(x="x", y="y", width=OP_W + 2 * PAD, height="h", source=kernels,
                       fill_color="color", fill_alpha=0.18, line_color="color", line_width=2,
                       selection_fill_alpha=0.4, nonselection_fill_alpha=0.18,
                       name="fused")
    fig.text(x="x", y="label_y", text="label", source=kernels, text_align="center",
             text_baseline="bottom", text_font_size="8pt")
    fig.multi_line(xs="xs", ys="ys", source=links, line_color="#777", line_width=1.2,
                   name="links")
    ops_r = fig.rect(x="x", y="y", width=OP_W, height=OP_H, source=ops, fill_color="white",
                     line_color="#333", name="unfused")
    fig.text(x="x", y="y", text="op", source=ops, text_align="center", text_baseline="middle",
             text_font_size="8pt")
    fig.add_tools(
        HoverTool(renderers=[ops_r], tooltips=[
            ("op", "@op"), ("node", "@name"), ("output", "@output"), ("in kernel", "@kernel")]),
        HoverTool(renderers=[boxes_r], tooltips=[
            ("kernel", "@title"), ("key", "@name"), ("device", "@device"), ("ops", "@ops"),
            ("holds", "@holds")]),
        TapTool(renderers=[boxes_r]),
    )
    devices = [k.device for k in fused]
    legend_devices = device_order(devices)
    device_legend(fig, boxes_r, legend_devices, {d: devices.index(d) for d in legend_devices})
    fig.axis.visible = False
    fig.grid.visible = False

    title = Div(text=f"<b>{HINT}</b>", name="source_title")
    # sized by its text: nothing until a kernel is selected, then at most 320 px, scrolling
    code = PreText(text="", name="source", width=max(720, fig.width or 0),
                   styles={"max-height": "320px", "overflow": "auto"})
    # our own fixed script: it copies data already in the document into the text box
    kernels.selected.js_on_change("indices", CustomJS(
        args={"source": kernels, "code": code, "title": title, "hint": HINT},
        code="""
        const i = source.selected.indices[0];
        if (i === undefined) { title.text = '<b>' + hint + '</b>'; code.text = ''; return; }
        title.text = '<b>source of ' + source.data.title[i] + ' on ' + source.data.device[i] + '</b>';
        code.text = source.data.source[i];
        """))
    return column(fig, row(column(title, code)))
