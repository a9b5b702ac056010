"""Placement of kernels on devices: performance history, estimates, policies, co-execution.

Modules, one job each
---------------------
``kernel``    :class:`KernelInfo` — a size-free signature plus sizes, bytes and flops of a kernel.
``history``   :class:`HistoryStore` — every run in SQLite (WAL, busy timeout, batched
              short transactions) under ``cache_dir()``; corrupt → rebuilt, locked →
              bypassed, both with :class:`PerfStoreWarning`, never an exception.
``robust``    low median, trimmed mean, Theil–Sen line: outliers do not poison estimates.
``model``     :class:`PerfModel` (history → fit → scaled → unknown) and
              :class:`TransferModel` / :func:`measure_link` (latency + bytes / bandwidth).
``health``    :class:`HealthRegistry` — (signature, device) pairs that failed.
``policies``  :class:`Scheduler`, :class:`Decision` — ``auto`` / ``fastest`` /
              ``round_robin`` / ``cpu`` / pinned, calibration, fallback.
``scope``     ``POLICIES`` and the ``policy`` scope in force (``hm.policy`` re-exports it).
``coexec``    :func:`plan_split` / :func:`split_rows` — row ranges per device.
``sim``       simulated devices, DAG generators (``dags``), lower bound (``bound``) and a
              discrete-event simulator that places tasks with the same ``Scheduler``.

Runtime integration (``hermes_nb/runtime/lower.py``)
----------------------------------------------------
::

    from hermes_nb.scheduler import InputData, default_scheduler, kernel_info_of

    sched = default_scheduler()                      # process-wide; history in the cache dir

    # once per device (only measured if not stored yet)
    sched.measure_link(dev.id, h2d=lambda n: ..., d2h=lambda n: ...)   # copy n bytes, synchronised

    # placing one kernel (node: graph Node or OpSpec)
    kernel = kernel_info_of(node)                    # cache per node: it is immutable
    decision = sched.decide(
        kernel,
        [d for d in hm.devices() if capable(d, node)],   # fp64, fused_ops, ...
        pinned=node.device,                          # None when unpinned
        inputs=[InputData(i.nbytes, on={resident.device}) for i, resident in ...],
        wait_s={d.id: d.load().expected_free_s for d in candidates},
    )                                                # policy=None → hm.policy(...) in force
    device = decision.device
    dev.submit(work, estimate_s=decision.estimate_s or 0.0)   # feeds the live load counters

    # after the kernel ran: its own time, copies excluded
    sched.record(decision, seconds, bytes_moved=copied)

    # when it failed (DeviceError)
    retry = sched.failed(decision, exc)             # marks the pair unhealthy
    if retry is None: raise                         # no healthy device left
    ...run on retry.device...

``explain()``: call ``decide(..., commit=False)`` (a dry run: no round-robin turn, no
calibration slot) and show ``decision.device`` and ``decision.reason`` (one line, e.g.
``"earliest finish: cuda:0 at 1.2 ms (wait 0 µs + copy 210 µs + run 1 ms) vs cpu:0 at
8 ms"`` or ``"calibrating: opencl:0 has 1/3 timed runs of this kernel"``);
``decision.table()`` lists every candidate's wait / copy / run estimate and source
(``history``, ``fit``, ``scaled``, ``none``) for a detailed view.

Co-execution of a large data-parallel kernel: ``plan = plan_split(sched, kernel, ids,
inputs=...)``; ``plan.ranges`` is ``[(device, start_row, stop_row), ...]`` (one range
when splitting would not gain ``min_gain``), ``plan.reason`` says why.

Simulation and figures: ``python -m benchmarks.scheduler_sim [--quick]``.
"""

from hermes_nb.scheduler.coexec import DeviceRate, Share, SplitPlan, plan_split, split_rows
from hermes_nb.scheduler.health import HealthRegistry
from hermes_nb.scheduler.history import HistoryStore, PerfStoreWarning, Run, default_path
from hermes_nb.scheduler.kernel import KernelInfo, kernel_info, kernel_info_of
from hermes_nb.scheduler.model import Estimate, Link, PerfModel, TransferModel, measure_link
from hermes_nb.scheduler.policies import (
    CandidateEstimate,
    Decision,
    InputData,
    NoHealthyDevice,
    Scheduler,
    check_policy,
    default_scheduler,
)

__all__ = [
    "CandidateEstimate", "Decision", "DeviceRate", "Estimate", "HealthRegistry", "HistoryStore",
    "InputData", "KernelInfo", "Link", "NoHealthyDevice", "PerfModel", "PerfStoreWarning", "Run",
    "Scheduler", "Share", "SplitPlan", "TransferModel", "check_policy", "default_path",
    "default_scheduler", "kernel_info", "kernel_info_of", "measure_link", "plan_split", "split_rows",
]
