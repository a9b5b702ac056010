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
    overlap = sched.overlap_copies
    for d in devices:
        if not sched.transfers.is_host(d.id):
            sched.transfers.set_link(d.id, d.link(), persist=False)
    rng = random.Random(seed)
    by_id = {d.id: d for d in devices}
    tasks = dag.tasks
    kernels = [kernel_of(t) for t in tasks]
    capable = [[d.id for d in devices if d.time(t) is not None] for t in tasks]
    priority = _bottom_levels(dag)

    missing = [len(t.deps) for t in tasks]
    where: list[set[str]] = [set() for _ in tasks]  # devices holding each task's output
    # per device: queued (priority, task, decision, estimated run, inputs ready at, copy seconds)
    queue: dict[str, list[tuple[float, int, Decision, float, float, float]]] = {d: [] for d in by_id}
    queued_est = dict.fromkeys(by_id, 0.0)
    running_until_est = dict.fromkeys(by_id, 0.0)
    link_free = dict.fromkeys(by_id, 0.0)
    running: dict[str, tuple[int, Decision, float] | None] = dict.fromkeys(by_id)
    result = SimResult(0.0, policy, busy_s=dict.fromkeys(by_id, 0.0))
    events: list[tuple[float, int, str, bool]] = []  # (time, seq, device, finished a task)
    seq = 0
    now = 0.0
    ready: list[tuple[float, int]] = [(-priority[i], i) for i, t in enumerate(tasks) if not t.deps]
    heapq.heapify(ready)
    decide_s = record_s = cpu_s = 0.0
    n_decide = n_record = 0
    tm = sched.transfers
    clock, cpu_clock = time.perf_counter, time.thread_time  # CPU time: immune to preemption

    def copy_seconds(i: int, dev: str) -> float:
        task = tasks[i]
        copy = sum(tm.input_seconds(dev, tasks[d].out_bytes, where[d]) for d in task.deps)
        copy += sum(tm.input_seconds(dev, b, (HOST,)) for b in task.host_bytes)
        for d in task.deps:
            where[d].add(dev)  # the copy stays resident for later readers
        return copy

    def try_start(dev: str) -> None:
        nonlocal seq
        if running[dev] is not None or not queue[dev]:
            return
        # highest priority among the queued tasks whose inputs have arrived
        startable = [q for q in queue[dev] if q[4] <= now]
        if not startable:
            seq += 1
            heapq.heappush(events, (min(q[4] for q in queue[dev]), seq, dev, False))
            return
        item = max(startable, key=lambda q: q[0])
        queue[dev].remove(item)
        _, i, decision, est, _, copy = item
        queued_est[dev] -= est
        run = by_id[dev].time(tasks[i]) or 0.0
        run *= math.exp(rng.gauss(0.0, noise)) if noise else 1.0
        if outliers and rng.random() < outliers:
            run *= 10.0
        running[dev] = (i, decision, run)
        running_until_est[dev] = now + est + copy
        result.busy_s[dev] += copy + run
        seq += 1
        heapq.heappush(events, (now + copy + run, seq, dev, True))

    def place() -> None:
        nonlocal decide_s, cpu_s, n_decide
        while ready:
            _, i = heapq.heappop(ready)
            task = tasks[i]
            inputs = [InputData(tasks[d].out_bytes, where[d]) for d in task.deps]
            inputs += [InputData(b, (HOST,)) for b in task.host_bytes]
            ids = capable[i]
            wait = {d: (max(0.0, running_until_est[d] - now) if running[d] else 0.0) + queued_est[d]
                    for d in ids}
            c0, t0 = cpu_clock(), clock()
            decision = sched.decide(kernels[i], ids, policy=policy, inputs=inputs, wait_s=wait)
            decide_s += clock() - t0
            cpu_s += cpu_clock() - c0
            n_decide += 1
            chosen = decision.chosen
            run_est = chosen.run_s
            if run_est is None:  # calibrating with nothing known: guess from the other devices
                known = [c.run_s for c in decision.candidates if c.run_s is not None]
                run_est = max(known) if known else 0.0
            dev = decision.device
            copy = copy_seconds(i, dev)
            result.copy_s += copy
            if overlap:  # the link copies now, one transfer after another
                start = max(now, link_free[dev])
                link_free[dev] = start + copy
                queue[dev].append((priority[i], i, decision, run_est, start + copy, 0.0))
                queued_est[dev] += run_est
            else:  # the device copies when it starts the task
                queue[dev].append((priority[i], i, decision, run_est + copy, now, copy))
                queued_est[dev] += run_est + copy
            result.tasks_per_device[dev] += 1
            result.calibrating += decision.calibrating
            if keep_decisions:
                result.decisions.append(decision)
            try_start(dev)

    place()
    done = 0
    while events:
        now, _, dev, finished_task = heapq.heappop(events)
        touched = [(dev, finished_task)]
        while events and events[0][0] == now:  # everything happening now, before placing
            _, _, d, f = heapq.heappop(events)
            touched.append((d, f))
        for dev, finished_task in touched:
            if not finished_task:
                continue
            i, decision, run = running[dev]  # type: ignore[misc]
            running[dev] = None
            where[i].add(dev)
            done += 1
            c0, t0 = cpu_clock(), clock()
            sched.record(decision, run)
            record_s += clock() - t0
            cpu_s += cpu_clock() - c0
            n_record += 1
            for s in dag.successors[i]:
                missing[s] -= 1
                if missing[s] == 0:
                    heapq.heappush(ready, (-priority[s], s))
        place()
        for dev, _ in touched:
            try_start(dev)
    if done != len(tasks):
        raise RuntimeError(f"simulate: {len(tasks) - done} tasks never ran (a dependency cycle?)")
    result.makespan = now
    result.decide_us = 1e6 * decide_s / max(n_decide, 1)
    result.record_us = 1e6 * record_s / max(n_record, 1)
    result.cpu_us = 1e6 * cpu_s / max(len(tasks), 1)
    return result


def _bottom_levels(dag: DAG) -> list[float]:
    """Reference work on the longest path from each task to the end (list-scheduling priority)."""
    level = [0.0] * len(dag.tasks)
    for i in range(len(dag.tasks) - 1, -1, -1):
        level[i] = dag.tasks[i].work + max((level[s] for s in dag.successors[i]), default=0.0)
    return level
