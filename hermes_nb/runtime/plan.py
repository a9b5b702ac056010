"""Plans: the kernels an optimised graph runs, where, and why (what ``explain()`` shows).
Plain data; :mod:`hermes_nb.runtime.explain` builds them."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

#: the most stage names a kernel's title lists
MAX_PARTS = 4


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
    #: its ops as the user named them ("blur5", "sobel", "hypot"); ``ops`` where empty
    names: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """A name that stays the same from run to run: its stages' names, each once, in
        order ("blur5+sobel+hypot", "multiply+pow+sum"), never the graph's node key."""
        parts = list(dict.fromkeys(self.names or self.ops))
        return "+".join(parts[:MAX_PARTS] + (["…"] if len(parts) > MAX_PARTS else []))


def kernel_names(plan: Plan | None, variables: dict[str, str] | None = None) -> dict[str, str]:
    """Per kernel key of ``plan``: the name every view and trace shows, its title after the
    variable it computes where ``variables`` (pre-fusion node key -> the user's name) knows
    one ("edges: blur5+sobel")."""
    variables = variables or {}
    names: dict[str, str] = {}
    for k in plan.kernels if plan is not None else ():
        held = [variables[m] for m in (*k.members, k.name) if m in variables]
        names[k.name] = f"{', '.join(dict.fromkeys(held))}: {k.title}" if held else k.title
    return names


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
