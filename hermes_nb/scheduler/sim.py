"""Discrete-event simulation of a DAG on simulated devices, placed by the real policy code.

Each ready task is placed at once (StarPU dmda style) by :meth:`Scheduler.decide`
— the same code the runtime calls — with every device's queue wait, the devices
holding each input, and the model's estimates. A device runs its queue in order;
running a task first copies its non-resident inputs over the host links (the copy
occupies the device, as the runtime's worker thread does), then computes for
``work / speed`` seconds, jittered by ``noise`` (log-normal) and, with probability
``outliers``, ten times slower (a busy machine). The measured run time is fed back
through :meth:`Scheduler.record`, so an uncalibrated scheduler visibly explores.
Copies made for a task stay resident: later readers on that device pay nothing.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from hermes_nb.scheduler.bound import LowerBound, lower_bound
from hermes_nb.scheduler.dags import DAG, Task, cholesky_dag, image_pipelines, random_layered_dag
from hermes_nb.scheduler.kernel import KernelInfo
from hermes_nb.scheduler.policies import Decision, InputData, Scheduler
from hermes_nb.scheduler.simdevice import CPU, GPU, IGPU, SimDevice, mix

__all__ = [
    "CPU", "DAG", "GPU", "IGPU", "LowerBound", "SimDevice", "SimResult", "Task", "cholesky_dag",
    "image_pipelines", "lower_bound", "mix", "random_layered_dag", "simulate",
]

HOST = "host"  # where a DAG's initial data lives


@dataclass
class SimResult:
    """What one simulated run did."""

    makespan: float
    policy: str
    tasks_per_device: Counter[str] = field(default_factory=Counter)
    busy_s: dict[str, float] = field(default_factory=dict)
    copy_s: float = 0.0
    calibrating: int = 0
    decide_us: float = 0.0  # mean wall time of one Scheduler.decide call
    record_us: float = 0.0  # mean wall time of one Scheduler.record call
    cpu_us: float = 0.0  # mean thread CPU time of decide + record per kernel
    decisions: list[Decision] = field(default_factory=list)

    @property
    def overhead_us(self) -> float:
        """Policy-code wall time per kernel: one decide plus one record."""
        return self.decide_us + self.record_us


def kernel_of(task: Task) -> KernelInfo:
    """The scheduler's view of a simulated task (signature = kind, size key = task size)."""
    in_bytes = tuple(task.host_bytes)
    return KernelInfo(f"sim:{task.kind}", task.size, task.out_bytes + sum(in_bytes), task.flops,
                      in_bytes, task.out_bytes)


def simulate(
    dag: DAG,
    devices: Sequence[SimDevice],
    policy: str = "auto",
    *,
    scheduler: Scheduler | None = None,
    noise: float = 0.03,
    outliers: float = 0.0,
    seed: int = 0,
    keep_decisions: bool = False,
) -> SimResult:
    """Run ``dag`` on ``devices`` under ``policy``; returns the makespan and statistics.

    Parameters
    ----------
    scheduler
        Reused across runs to keep what it learnt (pass the same one to calibrate
        first, then measure); a fresh in-memory one with ``overlap_copies=True`` by
        default. Its ``overlap_copies`` also decides how the simulated devices copy:
        on a DMA engine while computing (prefetched when the task is queued, one copy
        at a time per link) or on the device before computing.
    noise
        Standard deviation of the log-normal jitter of run times.
    outliers
        Probability that a run is ten times slower.
    """
    sched = scheduler if scheduler is not None else Scheduler(None, overlap_copies=True)
    for d in devices:
        if not sched.transfers.is_host(d.id):
            sched.transfers.set_link(d.id, d.link(), persist=False)
    return _Simulation(dag, devices, sched, policy, random.Random(seed), noise, outliers,
                       keep_decisions).run()


class _Queued(NamedTuple):
    priority: float
    task: int
    decision: Decision
    estimate_s: float  # what the device's queue wait counts for it
    ready_at: float  # when its inputs have arrived
    copy_s: float  # copying the device does itself before computing


class _Clocks:
    """Wall and thread CPU time of the policy code (CPU time: immune to preemption)."""

    def __init__(self) -> None:
        self.decide_s = self.record_s = self.cpu_s = 0.0
        self.n_decide = self.n_record = 0

    def start(self) -> tuple[float, float]:
        return time.thread_time(), time.perf_counter()

    def decided(self, started: tuple[float, float]) -> None:
        self.decide_s += time.perf_counter() - started[1]
        self.cpu_s += time.thread_time() - started[0]
        self.n_decide += 1

    def recorded(self, started: tuple[float, float]) -> None:
        self.record_s += time.perf_counter() - started[1]
        self.cpu_s += time.thread_time() - started[0]
        self.n_record += 1


class _Simulation:
    """One run: tasks placed as they become ready, device queues, timed events."""

    def __init__(self, dag: DAG, devices: Sequence[SimDevice], sched: Scheduler, policy: str,
                 rng: random.Random, noise: float, outliers: float, keep_decisions: bool) -> None:
        self.dag, self.sched, self.policy = dag, sched, policy
        self.overlap, self.keep_decisions = sched.overlap_copies, keep_decisions
        self.rng, self.noise, self.outliers = rng, noise, outliers
        self.by_id = {d.id: d for d in devices}
        tasks = self.tasks = dag.tasks
        self.kernels = [kernel_of(t) for t in tasks]
        self.capable = [[d.id for d in devices if d.time(t) is not None] for t in tasks]
        self.priority = _bottom_levels(dag)
        self.missing = [len(t.deps) for t in tasks]
        self.where: list[set[str]] = [set() for _ in tasks]  # devices holding each output
        self.queue: dict[str, list[_Queued]] = {d: [] for d in self.by_id}
        self.queued_est = dict.fromkeys(self.by_id, 0.0)
        self.running_until_est = dict.fromkeys(self.by_id, 0.0)
        self.link_free = dict.fromkeys(self.by_id, 0.0)
        self.running: dict[str, tuple[int, Decision, float] | None] = dict.fromkeys(self.by_id)
        self.result = SimResult(0.0, policy, busy_s=dict.fromkeys(self.by_id, 0.0))
        self.events: list[tuple[float, int, str, bool]] = []  # (time, seq, device, finished a task)
        self.seq = 0
        self.now = 0.0
        self.done = 0
        self.ready = [(-self.priority[i], i) for i, t in enumerate(tasks) if not t.deps]
        heapq.heapify(self.ready)
        self.clocks = _Clocks()

    def run(self) -> SimResult:
        self.place()
        while self.events:
            self.step()
        if self.done != len(self.tasks):
            raise RuntimeError(
                f"simulate: {len(self.tasks) - self.done} tasks never ran (a dependency cycle?)")
        result, clocks = self.result, self.clocks
        result.makespan = self.now
        result.decide_us = 1e6 * clocks.decide_s / max(clocks.n_decide, 1)
        result.record_us = 1e6 * clocks.record_s / max(clocks.n_record, 1)
        result.cpu_us = 1e6 * clocks.cpu_s / max(len(self.tasks), 1)
        return result

    def push_event(self, at: float, dev: str, finished_task: bool) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, self.seq, dev, finished_task))

    def step(self) -> None:
        """Everything that happens at the next event time, then the placements it allows."""
        self.now, _, dev, finished_task = heapq.heappop(self.events)
        touched = [(dev, finished_task)]
        while self.events and self.events[0][0] == self.now:
            _, _, d, f = heapq.heappop(self.events)
            touched.append((d, f))
        for dev, finished_task in touched:
            if finished_task:
                self.finish(dev)
        self.place()
        for dev, _ in touched:
            self.try_start(dev)

    def finish(self, dev: str) -> None:
        i, decision, run = self.running[dev]  # type: ignore[misc]
        self.running[dev] = None
        self.where[i].add(dev)
        self.done += 1
        started = self.clocks.start()
        self.sched.record(decision, run)
        self.clocks.recorded(started)
        for s in self.dag.successors[i]:
            self.missing[s] -= 1
            if self.missing[s] == 0:
                heapq.heappush(self.ready, (-self.priority[s], s))

    def place(self) -> None:
        while self.ready:
            _, i = heapq.heappop(self.ready)
            decision = self.decide(i)
            self.enqueue(i, decision)
            result = self.result
            result.tasks_per_device[decision.device] += 1
            result.calibrating += decision.calibrating
            if self.keep_decisions:
                result.decisions.append(decision)
            self.try_start(decision.device)

    def decide(self, i: int) -> Decision:
        """The policy's choice for task ``i``, with each device's queue wait and inputs."""
        tasks, now = self.tasks, self.now
        inputs = [InputData(tasks[d].out_bytes, self.where[d]) for d in tasks[i].deps]
        inputs += [InputData(b, (HOST,)) for b in tasks[i].host_bytes]
        wait = {d: (max(0.0, self.running_until_est[d] - now) if self.running[d] else 0.0)
                + self.queued_est[d] for d in self.capable[i]}
        started = self.clocks.start()
        decision = self.sched.decide(self.kernels[i], self.capable[i], policy=self.policy,
                                     inputs=inputs, wait_s=wait)
        self.clocks.decided(started)
        return decision

    def enqueue(self, i: int, decision: Decision) -> None:
        run_est = decision.chosen.run_s
        if run_est is None:  # calibrating with nothing known: guess from the other devices
            known = [c.run_s for c in decision.candidates if c.run_s is not None]
            run_est = max(known) if known else 0.0
        dev = decision.device
        copy = self.copy_seconds(i, dev)
        self.result.copy_s += copy
        if self.overlap:  # the link copies now, one transfer after another
            start = max(self.now, self.link_free[dev])
            self.link_free[dev] = start + copy
            self.queue[dev].append(_Queued(self.priority[i], i, decision, run_est, start + copy, 0.0))
            self.queued_est[dev] += run_est
        else:  # the device copies when it starts the task
            self.queue[dev].append(_Queued(self.priority[i], i, decision, run_est + copy, self.now, copy))
            self.queued_est[dev] += run_est + copy

    def copy_seconds(self, i: int, dev: str) -> float:
        tasks, tm = self.tasks, self.sched.transfers
        task = tasks[i]
        copy = sum(tm.input_seconds(dev, tasks[d].out_bytes, self.where[d]) for d in task.deps)
        copy += sum(tm.input_seconds(dev, b, (HOST,)) for b in task.host_bytes)
        for d in task.deps:
            self.where[d].add(dev)  # the copy stays resident for later readers
        return copy

    def try_start(self, dev: str) -> None:
        """Start the highest-priority queued task whose inputs have arrived, if ``dev`` is idle."""
        queue, now = self.queue[dev], self.now
        if self.running[dev] is not None or not queue:
            return
        startable = [q for q in queue if q.ready_at <= now]
        if not startable:
            self.push_event(min(q.ready_at for q in queue), dev, False)
            return
        item = max(startable, key=lambda q: q.priority)
        queue.remove(item)
        self.queued_est[dev] -= item.estimate_s
        run = self.run_seconds(dev, item.task)
        self.running[dev] = (item.task, item.decision, run)
        self.running_until_est[dev] = now + item.estimate_s + item.copy_s
        self.result.busy_s[dev] += item.copy_s + run
        self.push_event(now + item.copy_s + run, dev, True)

    def run_seconds(self, dev: str, i: int) -> float:
        """The task's run time on ``dev``, jittered (log-normal noise, rare outliers)."""
        run = self.by_id[dev].time(self.tasks[i]) or 0.0
        run *= math.exp(self.rng.gauss(0.0, self.noise)) if self.noise else 1.0
        if self.outliers and self.rng.random() < self.outliers:
            run *= 10.0
        return run


def _bottom_levels(dag: DAG) -> list[float]:
    """Reference work on the longest path from each task to the end (list-scheduling priority)."""
    level = [0.0] * len(dag.tasks)
    for i in range(len(dag.tasks) - 1, -1, -1):
        level[i] = dag.tasks[i].work + max((level[s] for s in dag.successors[i]), default=0.0)
    return level
