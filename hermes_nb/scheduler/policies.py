"""Placement decisions: which device runs a kernel, with every candidate's estimate and why.

Policies (names from :data:`hermes_nb.scheduler.scope.POLICIES`):

``auto``
    Earliest estimated finish over the healthy candidates, in the spirit of StarPU's
    dmda / HEFT: ``finish = max(queue wait, inputs ready) + copies + run``.
``fastest``
    Shortest ``copies + run``, ignoring how busy each device is.
``round_robin``
    The healthy candidates in turn.
``cpu``
    The first healthy host (``cpu``) device.

A pinned device (``hm.device(...)``) overrides the policy. ``auto`` and ``fastest``
first *calibrate*: while a (signature, device) pair has fewer than
``calibration_runs`` timed runs (counting runs still in flight), the kernel goes to
the least-tried such device and the decision says ``calibrating``.

A kernel no device has timed yet is new: its first run on a device pays a compile
there, so exploring would make the user wait for compiles on devices the run does not
need. With ``explore_new_kernels=False`` (the runtime's :func:`default_scheduler`),
every instance of a new kernel goes to the device the prior predicts best (copies, then
each device's speed on the kernels it has run, see :meth:`PerfModel.prior`, then the
candidates' order); the other devices are explored on later runs. Simulated devices
compile nothing, so there the default spreads a new kernel's instances over the devices.
A device whose first timings of a kernel are over ``SLOW_FACTOR`` × a calibrated device's
is not explored further.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_nb import logrecords
from hermes_nb.scheduler.health import HealthRegistry
from hermes_nb.scheduler.history import HistoryStore
from hermes_nb.scheduler.kernel import KernelInfo
from hermes_nb.scheduler.model import CALIBRATION_RUNS, Link, PerfModel, TransferModel, measure_link
from hermes_nb.scheduler.scope import check_policy, current_policy


class DeviceLike(Protocol):
    @property
    def id(self) -> str: ...


class NoHealthyDevice(RuntimeError):
    """Every candidate device failed this kernel before."""


def fmt_s(seconds: float | None) -> str:
    """A duration as a person reads it: ``'850 µs'``, ``'12.3 ms'``, ``'2.05 s'``."""
    if seconds is None:
        return "?"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


@dataclass(frozen=True)
class InputData:
    """One input of a kernel: its size, the devices holding it, and when it is ready.

    ``ready_s`` is seconds from now (0 for data that exists). ``row_split`` says whether
    co-execution slices it by rows (else every share needs all of it).
    """

    nbytes: int
    on: Collection[str] = ()
    ready_s: float = 0.0
    row_split: bool = True


@dataclass(frozen=True)
class CandidateEstimate:
    """What a policy knew about one device: times in seconds from now."""

    device: str
    run_s: float | None
    transfer_s: float
    wait_s: float
    finish_s: float | None
    source: str
    runs: int
    healthy: bool = True

    def describe(self) -> str:
        if not self.healthy:
            return f"{self.device}: unhealthy (failed before)"
        return (f"{self.device}: finish {fmt_s(self.finish_s)} = wait {fmt_s(self.wait_s)} + copy "
                f"{fmt_s(self.transfer_s)} + run {fmt_s(self.run_s)} ({self.source}, {self.runs} runs)")


@dataclass(frozen=True)
class Decision:
    """Where a kernel runs and why; what ``explain()`` shows.

    Attributes
    ----------
    device
        The chosen device id.
    policy
        The policy that chose (``"pinned"`` when a pin overrode it, ``"fallback"`` after a failure).
    reason
        One short human-readable line: why this device won.
    kernel
        The kernel decided on.
    candidates
        Every candidate's estimate (unhealthy ones included, flagged).
    calibrating
        True while the choice is an exploration run to calibrate the model.
    """

    device: str
    policy: str
    reason: str
    kernel: KernelInfo
    candidates: tuple[CandidateEstimate, ...]
    calibrating: bool = False

    @property
    def chosen(self) -> CandidateEstimate:
        for c in self.candidates:
            if c.device == self.device:
                return c
        raise LookupError(self.device)

    @property
    def estimate_s(self) -> float | None:
        """Estimated run time on the chosen device (for ``Device.submit(estimate_s=...)``)."""
        return self.chosen.run_s

    def ranking(self) -> list[str]:
        """Healthy candidates, best first by estimated finish (unknown last): the fallback order."""
        healthy = [c for c in self.candidates if c.healthy]
        return [c.device for c in sorted(healthy, key=lambda c: (c.finish_s is None, c.finish_s or 0.0))]

    def table(self) -> str:
        """Every candidate, one line each, the chosen one marked."""
        return "\n".join(("* " if c.device == self.device else "  ") + c.describe() for c in self.candidates)

    def __str__(self) -> str:
        return f"{self.device} ({self.policy}): {self.reason}"


class Scheduler:
    """The placement brain: performance model, transfer model, failures and policies.

    Parameters
    ----------
    store
        Persistent history (``None``: in memory only). See :func:`default_scheduler`
        for the process-wide one backed by the user cache directory.
    calibration_runs
        Timed runs per (signature, device) before its estimate is trusted.
    overlap_copies
        Whether a device copies inputs while it computes earlier work (a DMA engine
        with prefetch: ``finish = max(wait, ready + copy) + run``) or copies on its
        worker before computing (``max(wait, ready) + copy + run``, today's runtime).
    explore_new_kernels
        Whether a kernel no device has timed is explored on several devices at once
        (its instances in flight spread over them). False for devices that compile a
        kernel on its first run there: every instance goes to the prior's best device.
    """

    def __init__(
        self,
        store: HistoryStore | None = None,
        *,
        calibration_runs: int = CALIBRATION_RUNS,
        model: PerfModel | None = None,
        transfers: TransferModel | None = None,
        health: HealthRegistry | None = None,
        overlap_copies: bool = False,
        explore_new_kernels: bool = True,
    ) -> None:
        self.store = store
        self.overlap_copies = overlap_copies
        self.explore_new_kernels = explore_new_kernels
        self.model = model or PerfModel(store, calibration_runs=calibration_runs)
        self.transfers = transfers or TransferModel(store)
        self.health = health or HealthRegistry()
        self.calibration_runs = self.model.calibration_runs
        self._turn = itertools.count()
        self._exploring: dict[tuple[str, str], int] = {}  # calibration runs in flight
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ deciding
    def decide(
        self,
        kernel: KernelInfo,
        devices: Sequence[str | DeviceLike],
        *,
        policy: str | None = None,
        pinned: str | None = None,
        inputs: Sequence[InputData] = (),
        wait_s: Mapping[str, float] | None = None,
        commit: bool = True,
    ) -> Decision:
        """Choose the device for one kernel.

        Parameters
        ----------
        kernel
            From :func:`~hermes_nb.scheduler.kernel_info_of` (or ``kernel_info``).
        devices
            Capable candidates (ids or devices), in preference order for ties.
        policy
            A name from ``scope.POLICIES``; ``None`` for the current ``hm.policy``.
        pinned
            A device id that overrides the policy (estimates are still reported).
        inputs
            The kernel's inputs: where they live decides the copy costs.
        wait_s
            Seconds until each device's queue drains (e.g. ``Device.load().expected_free_s``).
        commit
            False for a dry run (``explain()``): no round-robin turn, no calibration slot taken.
        """
        if policy is None:
            policy = current_policy()
        check_policy(policy)
        ids = [d if isinstance(d, str) else d.id for d in devices]
        if pinned is not None and pinned not in ids:
            ids.append(pinned)
        if not ids:
            raise ValueError("decide: no candidate devices")
        candidates = tuple(self._estimate(kernel, d, inputs, wait_s) for d in ids)
        if pinned is not None:
            chosen = next(c for c in candidates if c.device == pinned)
            note = "" if chosen.healthy else \
                f" (it failed this kernel before: {self.health.failure(kernel.signature, pinned)})"
            reason = f"pinned by hm.device(...) or .to(...){note}"
            return Decision(pinned, "pinned", reason, kernel, candidates)
        healthy = [c for c in candidates if c.healthy]
        if not healthy:
            failures = "; ".join(f"{d}: {self.health.failure(kernel.signature, d)}" for d in ids)
            raise NoHealthyDevice(f"no healthy device left for {kernel.signature}: {failures}")
        if policy == "round_robin":
            turn = next(self._turn) if commit else 0
            chosen = healthy[turn % len(healthy)]
            return Decision(chosen.device, policy, f"round_robin: turn {turn % len(healthy) + 1} of "
                            f"{len(healthy)} healthy devices", kernel, candidates)
        if policy == "cpu":
            hosts = [c for c in healthy if self.transfers.is_host(c.device)]
            if hosts:
                return Decision(hosts[0].device, policy, "cpu policy", kernel, candidates)
            decision = self._by_estimate(kernel, healthy, candidates, "auto", commit)
            reason = f"cpu policy, but no healthy cpu device: {decision.reason}"
            return Decision(decision.device, "cpu", reason, kernel, candidates, decision.calibrating)
        decision = self._by_estimate(kernel, healthy, candidates, policy, commit)
        if commit and decision.calibrating:  # an exploration run: the log says why
            logrecords.emit(logging.DEBUG, decision.reason, logger="hermes_nb.scheduler",
                            device=decision.device, kernel=kernel.signature,
                            category="calibration")
        return decision

    def _estimate(
        self, kernel: KernelInfo, device: str, inputs: Sequence[InputData], wait_s: Mapping[str, float] | None
    ) -> CandidateEstimate:
        est = self.model.estimate(kernel, device)
        copy = 0.0
        ready = 0.0
        for item in inputs:
            copy += self.transfers.input_seconds(device, item.nbytes, item.on)
            ready = max(ready, item.ready_s)
        wait = max(0.0, wait_s.get(device, 0.0)) if wait_s else 0.0
        if est.seconds is None:
            finish = None
        elif self.overlap_copies:
            finish = max(wait, ready + copy) + est.seconds
        else:
            finish = max(wait, ready) + copy + est.seconds
        return CandidateEstimate(device, est.seconds, copy, wait, finish, est.source, est.runs,
                                 self.health.healthy(kernel.signature, device))

    def _by_estimate(
        self,
        kernel: KernelInfo,
        healthy: list[CandidateEstimate],
        candidates: tuple[CandidateEstimate, ...],
        policy: str,
        commit: bool,
    ) -> Decision:
        if not self.explore_new_kernels and all(c.runs == 0 for c in healthy):
            # a new kernel: no compile on devices it may never run on
            return self._first_run(kernel, healthy, candidates, policy, commit)
        sig = kernel.signature
        n = self.calibration_runs
        slow = _clearly_slower(healthy, n)
        tried = [(c.runs + self._exploring.get((sig, c.device), 0), i) for i, c in enumerate(healthy)
                 if c.device not in slow]
        if min(tried)[0] < n:  # explore the least-tried uncalibrated device
            count, i = min(tried)
            chosen = healthy[i]
            if commit:
                self.reserve_runs(kernel, chosen.device, 1)
            reason = (f"calibrating: {chosen.device} has {chosen.runs}/{n} timed runs of this kernel "
                      f"({count - chosen.runs} in flight)")
            return Decision(chosen.device, policy, reason, kernel, candidates, True)
        known = [c for c in healthy if c.finish_s is not None]
        if not known:  # every device calibrating with its runs still in flight
            chosen = min(healthy, key=lambda c: c.wait_s)
            return Decision(chosen.device, policy, "no estimate yet (calibration runs in flight): "
                            "least loaded", kernel, candidates, True)
        if policy == "fastest":
            chosen = min(known, key=_own_time)
            others = sorted((c for c in known if c is not chosen), key=_own_time)
            reason = f"fastest: {chosen.device} copy+run {fmt_s(_own_time(chosen))}"
            if others:
                reason += f" vs {others[0].device} {fmt_s(_own_time(others[0]))}"
            return Decision(chosen.device, policy, reason + " (load ignored)", kernel, candidates)
        chosen = min(known, key=_finish)
        reason = (f"earliest finish: {chosen.device} at {fmt_s(chosen.finish_s)} "
                  f"(wait {fmt_s(chosen.wait_s)} + copy {fmt_s(chosen.transfer_s)} "
                  f"+ run {fmt_s(chosen.run_s)})")
        others = sorted((c for c in known if c is not chosen), key=_finish)
        if others:
            runner = others[0]
            reason += f" vs {runner.device} at {fmt_s(runner.finish_s)}"
            quicker = min(others, key=lambda c: c.run_s or 0.0)
            if (quicker.run_s or 0.0) < (chosen.run_s or 0.0):  # why the fastest device lost
                cause = "busy" if quicker.wait_s - chosen.wait_s >= quicker.transfer_s - chosen.transfer_s \
                    else "its copies"
                reason += f"; {quicker.device} runs faster but loses to {cause}"
        return Decision(chosen.device, policy, reason, kernel, candidates)

    def _first_run(
        self,
        kernel: KernelInfo,
        healthy: list[CandidateEstimate],
        candidates: tuple[CandidateEstimate, ...],
        policy: str,
        commit: bool,
    ) -> Decision:
        """A kernel no device has timed: the prior's best device, for every instance."""
        priors = {c.device: self.model.prior(kernel, c.device) for c in healthy}

        def rank(item: tuple[int, CandidateEstimate]) -> tuple[float, float, int]:
            i, c = item
            prior = priors[c.device]
            return (c.transfer_s + (prior or 0.0), prior is None, i)

        chosen = min(enumerate(healthy), key=rank)[1]
        if commit:
            self.reserve_runs(kernel, chosen.device, 1)
        prior = priors[chosen.device]
        why = f"prior {fmt_s(prior)} + copy {fmt_s(chosen.transfer_s)}" if prior is not None \
            else f"no timings yet; copy {fmt_s(chosen.transfer_s)}"
        reason = (f"calibrating: {chosen.device} runs this new kernel first ({why}); "
                  "other devices are timed on later runs")
        return Decision(chosen.device, policy, reason, kernel, candidates, True)

    # ------------------------------------------------------------------ learning
    def record(
        self, decision: Decision, seconds: float, *, device: str | None = None, bytes_moved: int = 0,
        host: str = "", name: str = "",
    ) -> None:
        """Feed back one finished run: ``seconds`` of kernel time (copies excluded) on
        ``device`` (default: the decision's) of ``host`` (``""``: this machine); ``name`` is
        the kernel's name in the views, stored with the run. Its calibration slot is the
        decision's even when another device ran it (a fallback, or a cluster worker without
        that device). Thread-safe; cheap (no I/O unless a batch is due)."""
        self.release(decision)
        self.model.observe(decision.kernel, device or decision.device, seconds,
                           bytes_moved=bytes_moved, host=host, name=name)

    def release(self, decision: Decision) -> None:
        """Give back the calibration slot ``decide`` took for ``decision`` without a timing
        (its run failed, or its report never came back)."""
        if decision.calibrating:
            self.release_runs(decision.kernel, decision.device, 1)

    def reserve_runs(self, kernel: KernelInfo, device: str, runs: int) -> None:
        """Count ``runs`` of the pair as in flight (timed elsewhere, e.g. in the background),
        so calibration does not also explore it in the foreground; undo with
        :meth:`release_runs`."""
        with self._lock:
            key = (kernel.signature, device)
            self._exploring[key] = self._exploring.get(key, 0) + runs

    def release_runs(self, kernel: KernelInfo, device: str, runs: int) -> None:
        with self._lock:
            key = (kernel.signature, device)
            left = self._exploring.get(key, 0) - runs
            if left > 0:
                self._exploring[key] = left
            else:
                self._exploring.pop(key, None)

    def in_flight(self) -> int:
        """Calibration runs handed out and not yet recorded or released."""
        with self._lock:
            return sum(self._exploring.values())

    def observe(self, kernel: KernelInfo, device: str, seconds: float, *, bytes_moved: int = 0,
                host: str = "") -> None:
        """Feed back a run that was not placed by :meth:`decide` (e.g. a pinned kernel run elsewhere)."""
        self.model.observe(kernel, device, seconds, bytes_moved=bytes_moved, host=host)

    def failed(
        self,
        decision: Decision,
        error: BaseException | str | None = None,
        *,
        inputs: Sequence[InputData] = (),
        wait_s: Mapping[str, float] | None = None,
    ) -> Decision | None:
        """Mark the decision's (signature, device) unhealthy and choose the next-best device.

        Returns ``None`` when no healthy candidate is left (the caller re-raises the error).
        """
        self.health.mark_failed(decision.kernel.signature, decision.device, error)
        if decision.calibrating:
            self._exploring.pop((decision.kernel.signature, decision.device), None)
        rest = [c.device for c in decision.candidates if c.device != decision.device]
        if not rest:
            return None
        try:
            again = self.decide(decision.kernel, rest, policy="auto", inputs=inputs, wait_s=wait_s)
        except NoHealthyDevice:
            return None
        return Decision(again.device, "fallback", f"{decision.device} failed this kernel; {again.reason}",
                        again.kernel, again.candidates, again.calibrating)

    def measure_link(
        self,
        device: str,
        h2d: Callable[[int], object],
        d2h: Callable[[int], object] | None = None,
        *,
        force: bool = False,
        **options: Any,
    ) -> Link:
        """Measure and store ``device``'s host link once (again only when ``force``).

        ``h2d(n)``/``d2h(n)`` copy ``n`` bytes and return when done; see
        :func:`~hermes_nb.scheduler.model.measure_link` for ``options``.
        """
        if not force and self.transfers.has_link(device):
            return self.transfers.link(device)
        link = measure_link(h2d, d2h, **options)
        self.transfers.set_link(device, link)
        return link

    def flush(self) -> None:
        """Write pending runs to the store now."""
        if self.store is not None:
            self.store.flush()


#: a device whose first timings of a kernel are this many times a calibrated device's is
#: not calibrated further: more runs there would only cost the user time
SLOW_FACTOR = 2.0


def _clearly_slower(healthy: Sequence[CandidateEstimate], n: int) -> set[str]:
    """Uncalibrated devices already timed at over ``SLOW_FACTOR`` × the best calibrated one."""
    calibrated = [c.run_s for c in healthy if c.runs >= n and c.run_s is not None]
    if not calibrated:
        return set()
    best = min(calibrated)
    return {c.device for c in healthy
            if 0 < c.runs < n and c.run_s is not None and c.run_s > SLOW_FACTOR * best}


def _finish(c: CandidateEstimate) -> float:
    return c.finish_s if c.finish_s is not None else float("inf")


def _own_time(c: CandidateEstimate) -> float:
    return c.transfer_s + (c.run_s if c.run_s is not None else float("inf"))


_default: Scheduler | None = None
_default_lock = threading.Lock()


def default_scheduler() -> Scheduler:
    """The process-wide scheduler, its history in ``cache_dir()/perf_history.sqlite3``; a
    new kernel runs on one device first (real devices compile on first use)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Scheduler(HistoryStore(), explore_new_kernels=False)
    return _default
