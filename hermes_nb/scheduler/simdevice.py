"""A simulated device: per-kind speeds relative to a reference CPU and a host link."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hermes_nb.scheduler.dags import Task
from hermes_nb.scheduler.model import Link


@dataclass(frozen=True)
class SimDevice:
    """A device for the simulator.

    Parameters
    ----------
    kind
        ``"cpu"`` (host memory: no copies to/from the host), ``"gpu"``, ``"igpu"``, ...
    speed
        Speed per task kind or op class relative to the reference device (1.0);
        looked up by ``task.kind``, then ``task.cls``, then ``"default"``; 0 or
        missing means the device cannot run it.
    link_gbps
        Host link bandwidth in gigabytes per second (each direction).
    latency_us
        Host link latency per copy in microseconds.
    index
        Makes the id ``f"{kind}:{index}"``; :func:`mix` numbers devices for you.

    Examples
    --------
    >>> gpu = SimDevice("gpu", speed={"matmul": 30, "elementwise": 8}, link_gbps=16, latency_us=10)
    >>> gpu.id
    'gpu:0'
    """

    kind: str
    speed: Mapping[str, float] = field(default_factory=lambda: {"default": 1.0})
    link_gbps: float = 16.0
    latency_us: float = 10.0
    index: int = 0

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.index}"

    def speed_for(self, task: Task) -> float:
        s = self.speed
        value = s.get(task.kind)
        if value is None:
            value = s.get(task.cls)
        if value is None:
            value = s.get("default", 0.0)
        return float(value)

    def time(self, task: Task) -> float | None:
        """Seconds to run ``task`` here, or ``None`` when it cannot."""
        speed = self.speed_for(task)
        return task.work / speed if speed > 0 else None

    def link(self) -> Link:
        bw = self.link_gbps * 1e9
        lat = self.latency_us * 1e-6
        return Link(lat, bw, lat, bw)


def mix(*devices: SimDevice) -> tuple[SimDevice, ...]:
    """Number devices of the same kind 0, 1, ... (``cpu:0``, ``gpu:0``, ``gpu:1``)."""
    counts: dict[str, int] = {}
    out = []
    for d in devices:
        i = counts.get(d.kind, 0)
        counts[d.kind] = i + 1
        out.append(SimDevice(d.kind, dict(d.speed), d.link_gbps, d.latency_us, i))
    return tuple(out)


CPU = SimDevice("cpu", {"default": 1.0})
GPU = SimDevice("gpu", {"gemm": 30, "matmul": 30, "syrk": 25, "trsm": 12, "potrf": 3,
                        "elementwise": 8, "stencil": 15, "reduce": 6, "decode": 3},
                link_gbps=16, latency_us=10)
IGPU = SimDevice("igpu", {"gemm": 5, "matmul": 5, "syrk": 4, "trsm": 3, "potrf": 1,
                          "elementwise": 3, "stencil": 4, "reduce": 2}, link_gbps=32, latency_us=5)
