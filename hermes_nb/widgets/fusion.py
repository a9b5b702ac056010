"""Before/after fusion: the unfused plan's ops on the left, the fused kernels on the right."""

from __future__ import annotations

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, LayoutDOM, Range1d
from bokeh.plotting import figure

from hermes_nb.plan import Kernel, Plan
from hermes_nb.widgets._common import device_colors, message

LEFT_X, RIGHT_X, BOX_W = 0.0, 2.0, 1.0


def match(unfused: list[Kernel], fused: list[Kernel]) -> list[tuple[int, int]]:
    """(unfused index, fused index) pairs: the same kernel name first, then each fused op
    claims the first unclaimed unfused kernel running that op (plans carry no provenance)."""
    claimed: set[int] = set()
    pairs: list[tuple[int, int]] = []
    by_name = {k.name: i for i, k in enumerate(unfused)}
    for j, k in enumerate(fused):
        if k.name in by_name:
            claimed.add(by_name[k.name])
            pairs.append((by_name[k.name], j))
    for j, k in enumerate(fused):
        if k.name in by_name:
            continue
        for op in k.ops:
            for i, u in enumerate(unfused):
                if i not in claimed and op in u.ops:
                    claimed.add(i)
                    pairs.append((i, j))
                    break
    return sorted(pairs)


def fusion_diagram(plan_unfused: Plan | None, plan_fused: Plan | None) -> LayoutDOM:
    """The unfused plan's kernels (one op each) on the left, the fused plan's kernels on the
    right as boxes listing the ops they hold, with lines from each op to the kernel holding it."""
    if not isinstance(plan_unfused, Plan) or not isinstance(plan_fused, Plan):
        return message("fusion_diagram needs two Plans: with hm.options(fuse=False): "
                       "t.explain(), and t.explain()")
    unfused, fused = list(plan_unfused.kernels), list(plan_fused.kernels)
    if not unfused or not fused:
        return message("a plan has no kernels: explain() a tensor that does some work")
    colors = device_colors([k.device for k in unfused] + [k.device for k in fused])
    left_h = 0.7
    left_y = [-float(i) for i in range(len(unfused))]
    heights = [max(1, len(k.ops)) * 0.5 + 0.2 for k in fused]
    right_y, top = [], 0.35
    for h in heights:
        right_y.append(top - h / 2)
        top -= h + 0.3
    left = ColumnDataSource(data={
        "x": [LEFT_X] * len(unfused), "y": left_y, "name": [k.name for k in unfused],
        "ops": [" + ".join(k.ops) for k in unfused], "device": [k.device for k in unfused],
        "color": [colors[k.device] for k in unfused],
    }, name="unfused")
    right = ColumnDataSource(data={
        "x": [RIGHT_X] * len(fused), "y": right_y, "h": heights,
        "name": [k.name for k in fused], "ops": ["\n".join(k.ops) for k in fused],
        "op_count": [len(k.ops) for k in fused], "device": [k.device for k in fused],
        "color": [colors[k.device] for k in fused],
    }, name="fused")
    pairs = match(unfused, fused)
    links = ColumnDataSource(data={
        "unfused": [unfused[i].name for i, _ in pairs], "fused": [fused[j].name for _, j in pairs],
        "xs": [[LEFT_X + BOX_W / 2, RIGHT_X - BOX_W / 2] for _ in pairs],
        "ys": [[left_y[i], right_y[j]] for i, j in pairs],
    }, name="links")
    bottom = min(min(left_y) - left_h, top)
    fig = figure(title=f"Fusion: {len(unfused)} kernel(s) unfused -> {len(fused)} fused",
                 x_range=Range1d(-0.7, 2.7), y_range=Range1d(bottom - 0.2, 0.8),
                 width=520, height=int(max(200, 60 * (0.8 - bottom) + 60)),
                 tools="pan,wheel_zoom,reset,save")
    fig.multi_line(xs="xs", ys="ys", source=links, line_color="#999", name="links")
    lrect = fig.rect(x="x", y="y", width=BOX_W, height=left_h * 0.8, source=left,
                     fill_color="color", fill_alpha=0.5, line_color="black", name="unfused")
    rrect = fig.rect(x="x", y="y", width=BOX_W, height="h", source=right, fill_color="color",
                     fill_alpha=0.5, line_color="black", name="fused")
    fig.text(x="x", y="y", text="ops", source=left, text_align="center",
             text_baseline="middle", text_font_size="9pt")
    fig.text(x="x", y="y", text="ops", source=right, text_align="center",
             text_baseline="middle", text_font_size="9pt")
    fig.add_tools(HoverTool(renderers=[lrect, rrect], tooltips=[
        ("kernel", "@name"), ("ops", "@ops"), ("device", "@device"),
    ]))
    fig.axis.visible = False
    fig.grid.visible = False
    header = "unfused (left) → fused (right); lines match ops by name"
    return column(message(header), fig)
