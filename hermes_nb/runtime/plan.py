"""Plans: the kernels an optimised graph runs, where, and why (what ``explain()`` shows).
Plain data; :mod:`hermes_nb.runtime.explain` builds them."""

from __future__ import annotations

import html
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Kernel:
    """One unit of work in a plan: the ops it holds and where it runs."""

    name: str
    ops: tuple[str, ...]
    device: str
    reason: str
    inputs: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    bytes_moved: int
    source: str | None = None
    calibrating: bool = False  # the scheduler is still measuring the candidates
    estimates: dict[str, float | None] = field(default_factory=dict)  # device -> finish (s)
    #: keys of the graph's nodes before fusion that this kernel computes
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    kernels: list[Kernel] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kernels)

    def __str__(self) -> str:
        lines = [f"Plan: {len(self.kernels)} kernel(s)"]
        for i, k in enumerate(self.kernels):
            lines.append(
                f"  [{i}] {k.name}: {'+'.join(k.ops)} -> {k.dtype}{list(k.shape)} on {k.device} "
                f"({k.reason}; {k.bytes_moved / 1e6:.2f} MB moved)"
            )
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{i}</td><td>{html.escape(k.name)}</td><td>{html.escape(' + '.join(k.ops))}"
            f"</td><td>{html.escape(k.dtype)}{list(k.shape)}</td><td>{html.escape(k.device)}</td>"
            f"<td>{html.escape(k.reason)}</td><td>{k.bytes_moved / 1e6:.2f} MB</td></tr>"
            for i, k in enumerate(self.kernels)
        )
        return (
            f"<div class='hermes-plan'><b>Plan</b>: {len(self.kernels)} kernel(s)"
            "<table><thead><tr><th>#</th><th>kernel</th><th>ops</th><th>output</th>"
            f"<th>device</th><th>why</th><th>traffic</th></tr></thead><tbody>{rows}</tbody>"
            "</table></div>"
        )
