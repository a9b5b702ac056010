"""Makespan lower bounds for a DAG on heterogeneous (simulated) devices.

``max(critical path, area)``, both ignoring transfers (so a true lower bound):

critical path
    The longest dependency chain with every task at its fastest capable device.
area
    The LP relaxation of "every device busy at most T": tasks grouped by kind, a
    fraction ``x[k, d]`` of kind ``k``'s total work runs on device ``d`` at that
    device's speed for ``k``; minimise T subject to ``Σ_d x[k, d] = 1`` and each
    device's load ``≤ T`` (StarPU's "area bound"). Without SciPy it falls back to
    the weaker ``Σ_tasks min_d time / number of devices``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hermes_nb.scheduler.dags import DAG
from hermes_nb.scheduler.simdevice import SimDevice


@dataclass(frozen=True)
class LowerBound:
    critical_path_s: float
    area_s: float
    method: str

    @property
    def value(self) -> float:
        return max(self.critical_path_s, self.area_s)


def lower_bound(dag: DAG, devices: Sequence[SimDevice]) -> LowerBound:
    """The lower bound of ``dag``'s makespan on ``devices`` (see the module docstring)."""
    fastest = []
    for task in dag.tasks:
        times = [t for d in devices if (t := d.time(task)) is not None]
        if not times:
            raise ValueError(f"lower_bound: no device can run {task.name} ({task.kind})")
        fastest.append(min(times))
    finish = [0.0] * len(dag.tasks)
    for i, task in enumerate(dag.tasks):
        finish[i] = max((finish[d] for d in task.deps), default=0.0) + fastest[i]
    critical = max(finish, default=0.0)
    try:
        return LowerBound(critical, _area_lp(dag, devices), "critical path + LP area")
    except ImportError:
        return LowerBound(critical, sum(fastest) / len(devices), "critical path + sum(min)/devices")


def _area_lp(dag: DAG, devices: Sequence[SimDevice]) -> float:
    import numpy as np
    from scipy.optimize import linprog

    work: dict[str, float] = {}
    sample: dict[str, object] = {}
    for task in dag.tasks:
        work[task.kind] = work.get(task.kind, 0.0) + task.work
        sample.setdefault(task.kind, task)
    kinds = list(work)
    pairs = [(k, j) for k in kinds for j, d in enumerate(devices) if d.speed_for(sample[k]) > 0]  # type: ignore[arg-type]
    n = len(pairs)
    c = np.zeros(n + 1)
    c[-1] = 1.0  # minimise T
    a_eq = np.zeros((len(kinds), n + 1))
    a_ub = np.zeros((len(devices), n + 1))
    a_ub[:, -1] = -1.0
    for v, (k, j) in enumerate(pairs):
        a_eq[kinds.index(k), v] = 1.0
        a_ub[j, v] = work[k] / devices[j].speed_for(sample[k])  # type: ignore[arg-type]
    result = linprog(c, A_ub=a_ub, b_ub=np.zeros(len(devices)), A_eq=a_eq, b_eq=np.ones(len(kinds)),
                     bounds=[(0, None)] * (n + 1), method="highs")
    if not result.success:
        raise ImportError(result.message)  # treated as "LP unavailable": use the simple bound
    return float(result.x[-1])
