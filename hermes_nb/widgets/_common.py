"""Shared pieces of the notebook views: device colours, messages and number formats."""

from __future__ import annotations

from collections.abc import Iterable

from bokeh.models import Div

from hermes_nb.widgets import palette


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
    """A colour per device, the same in every view: :func:`palette.device_colors` over this
    machine's devices and ``names``."""
    return palette.device_colors(names, _known_devices())


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
