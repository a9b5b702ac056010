"""Co-execution: split one large data-parallel kernel's rows across devices.

Each device ``d`` is described by a :class:`DeviceRate`: a fixed cost ``a_d`` (queue
wait + launch latency + copies that do not shrink with the share) and a cost per row
``r_d`` (run time + row-sliced copies in and out). Giving ``c_d`` rows to ``d`` makes
it finish at ``a_d + r_d·c_d``; all active devices finish together at

    T = (N + Σ a_d / r_d) / Σ 1 / r_d,      c_d = (T − a_d) / r_d,

after dropping any device with ``a_d ≥ T`` (it could not help). With no fixed costs
this is the throughput-proportional split. The split is used only when it beats the
best single device by ``min_gain``; otherwise the plan is that single device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hermes_nb.scheduler.kernel import KernelInfo
from hermes_nb.scheduler.policies import InputData, Scheduler, fmt_s


@dataclass(frozen=True)
class DeviceRate:
    """Cost model of one device for a split: ``fixed_s + per_row_s × rows``."""

    device: str
    per_row_s: float
    fixed_s: float = 0.0


@dataclass(frozen=True)
class Share:
    """Rows ``[start, stop)`` run on ``device``, estimated to finish after ``est_s``."""

    device: str
    start: int
    stop: int
    est_s: float

    @property
    def rows(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True)
class SplitPlan:
    """How to run N rows: one share per device used, and the estimate behind it."""

    shares: tuple[Share, ...]
    est_s: float
    single_device: str
    single_s: float
    reason: str

    @property
    def ranges(self) -> list[tuple[str, int, int]]:
        """``(device, start, stop)`` per share, in row order."""
        return [(s.device, s.start, s.stop) for s in self.shares]

    @property
    def coexecute(self) -> bool:
        return len(self.shares) > 1

    @property
    def gain(self) -> float:
        """Estimated speed-up over the best single device (1.0 when not split)."""
        return self.single_s / self.est_s if self.est_s > 0 else 1.0


def split_rows(rows: int, rates: Sequence[DeviceRate], *, min_gain: float = 1.1, align: int = 1) -> SplitPlan:
    """Split ``rows`` across devices so they finish together, if that gains enough.

    Parameters
    ----------
    rows
        Rows of the kernel's output (the data-parallel axis).
    rates
        One cost model per candidate device.
    min_gain
        Co-execute only when the best single device is at least this much slower.
    align
        Share boundaries fall on multiples of this (tiles, vector widths).

    Examples
    --------
    >>> plan = split_rows(1000, [DeviceRate("cpu:0", 3e-3), DeviceRate("cuda:0", 1e-3)])
    >>> plan.ranges
    [('cpu:0', 0, 250), ('cuda:0', 250, 1000)]
    """
    if rows <= 0 or not rates:
        raise ValueError(f"split_rows: need rows > 0 and at least one device (got {rows}, {len(rates)})")
    single = min(rates, key=lambda r: r.fixed_s + r.per_row_s * rows)
    single_s = single.fixed_s + single.per_row_s * rows
    only = SplitPlan((Share(single.device, 0, rows, single_s),), single_s, single.device, single_s, "")
    active = [r for r in rates if r.per_row_s > 0]
    if len(active) < 2 or rows < 2 * align:
        return _single(only, "one device can take part")
    while True:
        finish = (rows + sum(r.fixed_s / r.per_row_s for r in active)) / sum(1 / r.per_row_s for r in active)
        keep = [r for r in active if r.fixed_s < finish]
        if len(keep) == len(active):
            break
        active = keep
    if len(active) < 2:
        return _single(only, "the other devices' fixed costs exceed the whole run")
    # cumulative boundaries rounded to the alignment keep the total exact
    shares, start, acc = [], 0, 0.0
    for k, r in enumerate(active):
        acc += (finish - r.fixed_s) / r.per_row_s
        stop = rows if k == len(active) - 1 else min(rows, max(start, round(acc / align) * align))
        if stop > start:
            shares.append(Share(r.device, start, stop, r.fixed_s + r.per_row_s * (stop - start)))
        start = stop
    est = max(s.est_s for s in shares)
    if len(shares) < 2 or single_s < min_gain * est:
        return _single(only, f"splitting would gain only {single_s / est:.2f}× (< {min_gain}×)")
    detail = ", ".join(f"{s.device} {s.rows}" for s in shares)
    return SplitPlan(tuple(shares), est, single.device, single_s,
                     f"co-execute: {detail} rows, est {fmt_s(est)} vs {fmt_s(single_s)} on {single.device} "
                     f"alone ({single_s / est:.2f}×)")


def _single(plan: SplitPlan, why: str) -> SplitPlan:
    return SplitPlan(plan.shares, plan.est_s, plan.single_device, plan.single_s,
                     f"single device {plan.single_device} ({fmt_s(plan.single_s)}): {why}")


def rates_for(
    scheduler: Scheduler,
    kernel: KernelInfo,
    devices: Sequence[str],
    *,
    inputs: Sequence[InputData] = (),
    gather_on: str = "cpu:0",
    wait_s: Mapping[str, float] | None = None,
) -> list[DeviceRate]:
    """Cost models of ``devices`` for ``kernel`` from the scheduler's estimates.

    The run time is split into the size fit's intercept (fixed) and the rest (per row);
    row-split inputs and the output (gathered on ``gather_on``) cost per row, whole
    inputs cost once. Devices without an estimate or marked unhealthy are left out.
    """
    rows = max(kernel.rows, 1)
    rates = []
    for device in devices:
        if not scheduler.health.healthy(kernel.signature, device):
            continue
        est = scheduler.model.estimate(kernel, device)
        if est.seconds is None:
            continue
        fit = scheduler.model.fit(kernel.signature, device)
        fixed = min(fit.intercept, est.seconds) if fit is not None and fit.points >= 2 else 0.0
        per_row = (est.seconds - fixed) / rows
        tm = scheduler.transfers
        for item in inputs:
            whole = tm.input_seconds(device, item.nbytes, item.on)
            if item.row_split and whole > 0:
                latency = tm.input_seconds(device, 0, item.on)
                fixed += latency
                per_row += (whole - latency) / rows
            else:
                fixed += whole
        out = tm.seconds(device, gather_on, kernel.out_bytes)
        if out > 0:
            latency = tm.seconds(device, gather_on, 0)
            fixed += latency
            per_row += (out - latency) / rows
        fixed += max(0.0, wait_s.get(device, 0.0)) if wait_s else 0.0
        rates.append(DeviceRate(device, per_row, fixed))
    return rates


def plan_split(
    scheduler: Scheduler,
    kernel: KernelInfo,
    devices: Sequence[str],
    *,
    inputs: Sequence[InputData] = (),
    gather_on: str = "cpu:0",
    wait_s: Mapping[str, float] | None = None,
    min_gain: float = 1.1,
    align: int = 1,
) -> SplitPlan:
    """Row ranges per device for a data-parallel ``kernel`` (see :func:`split_rows`).

    Raises ``ValueError`` when no device has an estimate yet (calibrate first).
    """
    rates = rates_for(scheduler, kernel, devices, inputs=inputs, gather_on=gather_on, wait_s=wait_s)
    if not rates:
        raise ValueError(
            f"plan_split: no calibrated healthy device for {kernel.signature} among {list(devices)}"
        )
    return split_rows(max(kernel.rows, 1), rates, min_gain=min_gain, align=align)
