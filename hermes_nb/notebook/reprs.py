"""Small result objects with a plain-text and an HTML view, for notebooks.

Every value that reaches HTML goes through ``html.escape``: device names come from
drivers and tensor names from user code, so neither is trusted markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_nb.api.plan import Plan
    from hermes_nb.backends import Device
    from hermes_nb.backends.load import LoadSnapshot
    from hermes_nb.runtime.profile import Profile


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]], cls: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return (
        f"<div class='{cls}'><b>{html.escape(title)}</b><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def _text(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(map(str, headers)), *[list(map(str, r)) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [title] + ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


@dataclass(frozen=True)
class DeviceList:
    """The devices Hermes found, shown as a table; iterates like a list of ``Device``."""

    devices: tuple[Device, ...]

    headers = ("id", "name", "memory", "compute units", "fp64")

    def rows(self) -> list[tuple[object, ...]]:
        from hermes_nb.backends.memory import memory_text  # the CLI's and the lab panel's figure

        return [
            (d.id, d.name, memory_text(d), d.compute_units, "yes" if d.fp64 else "no")
            for d in self.devices
        ]

    def __len__(self) -> int:
        return len(self.devices)

    def __iter__(self) -> Iterator[Device]:
        return iter(self.devices)

    def __getitem__(self, i: int) -> Device:
        return self.devices[i]

    def __repr__(self) -> str:
        return _text(f"{len(self.devices)} device(s)", self.headers, self.rows())

    def _repr_html_(self) -> str:
        return _table(f"{len(self.devices)} device(s)", self.headers, self.rows(), "hermes-devices")


def device_table() -> DeviceList:
    """Every device Hermes can run on, as a table that renders in a notebook."""
    from hermes_nb.backends import devices

    return DeviceList(tuple(devices()))


@dataclass(frozen=True)
class LoadTable:
    """A ``hm.load()`` snapshot as a table."""

    snapshots: tuple[LoadSnapshot, ...]

    headers = ("device", "queued", "busy", "free in", "memory in use", "completed")

    def rows(self) -> list[tuple[object, ...]]:
        return [
            (s.device, s.queued, f"{s.busy_fraction:.0%}", f"{s.expected_free_s * 1e3:.1f} ms",
             f"{s.memory_in_use / 2**20:.1f} MiB", s.completed)
            for s in self.snapshots
        ]

    def __repr__(self) -> str:
        return _text("Device load", self.headers, self.rows())

    def _repr_html_(self) -> str:
        return _table("Device load", self.headers, self.rows(), "hermes-load")


@dataclass(frozen=True)
class RunSummary:
    """What one ``%%hermes`` cell computed: which names, how many kernels, where, how long."""

    names: tuple[str, ...]
    kernels: int
    devices: tuple[str, ...]
    wall_s: float
    profile: Profile | None = field(default=None, repr=False, compare=False)

    def _parts(self) -> tuple[str, str, str]:
        names = ", ".join(self.names) if self.names else "nothing to compute"
        where = ", ".join(self.devices) if self.devices else "-"
        compiled = self.profile.compile_s if self.profile is not None else 0.0
        built = f" ({compiled * 1e3:.0f} ms of it compiling)" if compiled else ""
        return names, where, f"{self.wall_s * 1e3:.2f} ms{built}"

    def __repr__(self) -> str:
        names, where, wall = self._parts()
        return f"hermes: computed {names} | {self.kernels} kernel(s) on {where} | {wall}"

    def _repr_html_(self) -> str:
        names, where, wall = (html.escape(p) for p in self._parts())
        return (
            f"<div class='hermes-summary'><b>hermes</b>: computed <code>{names}</code> &middot; "
            f"{self.kernels} kernel(s) on {where} &middot; {wall}</div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": self._repr_html_()}


@dataclass(frozen=True)
class NamedPlans:
    """``%%hermes --explain``: the plan of each tensor the cell assigned, by name."""

    plans: tuple[tuple[str, Plan], ...]

    def __repr__(self) -> str:
        if not self.plans:
            return "hermes: the cell assigned no lazy tensors"
        return "\n".join(f"{name}: {plan}" for name, plan in self.plans)

    def _repr_html_(self) -> str:
        if not self.plans:
            return "<div class='hermes-plans'>hermes: the cell assigned no lazy tensors</div>"
        return "<div class='hermes-plans'>" + "".join(
            f"<div><b><code>{html.escape(name)}</code></b>{plan._repr_html_()}</div>"
            for name, plan in self.plans
        ) + "</div>"
