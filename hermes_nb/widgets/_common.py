"""Shared pieces of the notebook views: device colours, messages and number formats."""

from __future__ import annotations

from collections.abc import Iterable

from bokeh.models import Div
from bokeh.palettes import Category10_10

_OTHER = "#7f7f7f"


def message(text: str) -> Div:
    """The small Div a view returns when it has nothing to draw."""
    return Div(text=f"<i>{_escape(text)}</i>", styles={"color": "#555"})


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _known_devices() -> list[str]:
    try:
        from hermes_nb.backends import devices

        return [d.id for d in devices()]
    except Exception:  # discovery failing must not stop a view from drawing
        return []


def device_colors(names: Iterable[str]) -> dict[str, str]:
    """A colour per device, stable across views: hermes' device order first, then by name."""
    order = _known_devices()
    extra = sorted(set(names) - set(order))
    palette = list(Category10_10)
    return {name: palette[i % len(palette)] for i, name in enumerate([*order, *extra])}


def fmt_ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3f} ms"


def fmt_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def fmt_estimates(estimates: dict[str, float | None]) -> str:
    if not estimates:
        return "—"
    return ", ".join(f"{dev}: {fmt_ms(s)}" for dev, s in estimates.items())
