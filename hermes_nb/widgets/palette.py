"""One colour per device in every view and run: the Okabe-Ito palette (safe for the common
colour-vision deficiencies), assigned in a fixed device order, and the device legend."""

from __future__ import annotations

import re
from collections.abc import Iterable

from bokeh.models import GlyphRenderer, Legend, LegendItem
from bokeh.plotting import figure

#: Okabe & Ito (2008), without black (kept for text and outlines)
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#999999")
#: the order kinds take their colours in: cpu:0 is always the first colour
KIND_ORDER = ("cpu", "opencl", "cuda")


def device_order(names: Iterable[str]) -> list[str]:
    """Device ids in a fixed order: by kind (cpu, opencl, cuda, then others by name), then
    by index as a number (opencl:2 before opencl:10); the same order in every view."""
    def key(name: str) -> tuple[int, str, int, str]:
        kind, _, rest = name.partition(":")
        rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
        digits = re.match(r"\d+", rest)
        return rank, kind, int(digits.group()) if digits else -1, rest

    return sorted(set(names), key=key)


def device_colors(names: Iterable[str], known: Iterable[str] = ()) -> dict[str, str]:
    """A colour per device: ``known`` (this machine's devices) and ``names`` together in
    :func:`device_order`, so a device keeps its colour whichever of them a view shows."""
    names = list(names)
    order = device_order([*known, *names])
    return {name: OKABE_ITO[order.index(name) % len(OKABE_ITO)] for name in names}


def device_legend(fig: figure, renderer: GlyphRenderer, devices: list[str],
                  rows: dict[str, int], title: str = "device") -> Legend:
    """A legend entry per device (its colour, from the row ``rows[device]`` of
    ``renderer``'s data), to the right of ``fig``."""
    items = [LegendItem(label=d, renderers=[renderer], index=rows[d]) for d in devices
             if d in rows]
    legend = Legend(items=items, title=title, location="top_left", name="devices",
                    click_policy="none", label_text_font_size="8pt")
    fig.add_layout(legend, "right")
    return legend
