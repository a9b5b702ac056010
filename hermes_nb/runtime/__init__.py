"""Running graphs: locally on per-device worker threads, or on a dask.distributed cluster.

The runtime takes nodes and returns device values (:class:`Resident`); the API wraps them
in tensors."""

from __future__ import annotations

import concurrent.futures
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

import dask.local
import dask.threaded

from hermes_nb.backends import devices, get_device
from hermes_nb.ir.node import Node, is_borrowed, toposort
from hermes_nb.runtime import graph_cache, profile
from hermes_nb.runtime.cluster import check_cluster, direct, killed_worker_error
from hermes_nb.runtime.cluster_data import for_cluster, kept
from hermes_nb.runtime.cluster_inventory import active_client
from hermes_nb.runtime.cluster_run import cluster_get
from hermes_nb.runtime.explain import kernel_source, plan_of
from hermes_nb.runtime.lower import lower
from hermes_nb.runtime.placement import Placement, place
from hermes_nb.runtime.profile import last_profile
from hermes_nb.runtime.progress import progress_bar
from hermes_nb.runtime.resident import Resident, detached
from hermes_nb.runtime.targets import compile_target
from hermes_nb.runtime.work import run_work

__all__ = ["Resident", "compile_target", "execute", "last_profile", "materialised"]


def _debug_level() -> int:
    from hermes_nb.settings import env_int

    return env_int("HERMES_DEBUG", 0, minimum=0)


def execute(outputs: Sequence[Node], *, persist: bool = False) -> list[Resident]:
    """Run the graph behind ``outputs`` once and return their values. ``persist``: with a
    Client active, the values stay on the workers (:class:`~hermes_nb.runtime.remote.Remote`
    handles); without one it changes nothing."""
    from hermes_nb.context import current_options

    if all(n.op == "buffer" for n in outputs):  # already computed: nothing runs, no profile
        return [n.attrs["handle"] for n in outputs]
    optimized = graph_cache.optimized(list(outputs), compile_target(), current_options())
    placed = place(optimized)
    if _debug_level() >= 2:
        _print_schedule(optimized, placed)
    if _debug_level() >= 4:
        _print_sources(optimized, placed)
    plan = plan_of(optimized, placed, sources=False)
    bar = progress_bar(current_options().progress, len(plan.kernels))
    work = run_work(list(outputs), optimized, {m for k in plan.kernels for m in k.members})
    run_id = profile.begin(plan, on_kernel=bar, work=work)
    graph, keys = lower(optimized, placed, run_id)
    try:
        client = active_client()
        if client is not None:
            results = _run_on_cluster(client, graph, keys, optimized, persist=persist)
        elif _runs_on_caller(placed):
            results = dask.local.get_sync(graph, keys)
        else:
            # each task blocks while its device's own thread runs it, so one Dask
            # thread per device lets tasks on different devices overlap
            results = interruptible(dask.threaded.get, graph, keys,
                                    num_workers=max(2, len(devices())))
    except KeyboardInterrupt:
        # a compile in the build worker would keep its device busy: abandon it
        from hermes_nb.backends.isolation import cancel_running

        cancel_running()
        raise
    finally:
        profile.end(run_id)
        if bar is not None:
            bar.close()
    # a persisted value lives on a worker, never in the caller's array's memory
    borrowed = _borrowed_arrays(optimized) if client is None else []
    return [detached(r, borrowed) for r in results] if borrowed else list(results)


#: a graph expected to finish within this runs on the calling thread: an interrupt then
#: waits for the running kernel, so longer or unmeasured graphs keep the helper thread
CALLER_THREAD_BUDGET_S = 0.25


def _runs_on_caller(placed: dict[int, Placement]) -> bool:
    """Whether the graph runs on the calling thread, with no hand-off between threads (each
    wakes a sleeping one, ~0.1-0.5 ms on an idle core): every value lives on devices that
    run work on the caller's thread, and the scheduler expects it to be short."""
    ids = {p.device for p in placed.values()} | {t.device for p in placed.values()
                                                  for t in p.tiles}
    if not all(get_device(i).runs_on_caller for i in ids):
        return False
    estimates = [p.decision.estimate_s for p in placed.values() if p.decision is not None]
    return all(e is not None for e in estimates) and sum(estimates) <= CALLER_THREAD_BUDGET_S


def _run_on_cluster(client: Any, graph: dict[Any, Any], keys: list[str],
                    optimized: list[Node], persist: bool = False) -> list[Any]:
    """Run ``graph`` on ``client``'s cluster: its values, or with ``persist`` handles of
    them on the workers. Large inputs go to the workers once, not inside the graph."""
    check_cluster(client)
    graph = for_cluster(client, graph, keys)
    try:
        futures = cluster_get(client, graph, keys, sync=False)  # placed on workers' devices
        if persist:
            return kept(futures, graph, keys, [n.nbytes for n in optimized])
        return client.gather(futures, direct=direct(client))
    except Exception as exc:
        nodes = {n.key: n for n in toposort(optimized)}
        error = killed_worker_error(exc, graph, nodes)
        if error is None:
            raise
        raise error from exc


def _borrowed_arrays(graph: list[Node]) -> list[Any]:
    """The caller's arrays that this run read in place (borrowed constants)."""
    return [n.attrs["value"] for n in toposort(graph) if is_borrowed(n)]


_runner: concurrent.futures.ThreadPoolExecutor | None = None


def interruptible(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, run on a helper thread while the main thread waits in short
    slices: an untimed lock wait does not see an interrupt raised by
    ``_thread.interrupt_main`` (some front ends' Ctrl-C) until the run ends."""
    global _runner
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)
    if _runner is None:
        _runner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hermes-run")
    future = _runner.submit(fn, *args, **kwargs)
    while True:
        try:
            return future.result(timeout=0.2)
        except concurrent.futures.TimeoutError:
            continue


def _forget_runner() -> None:
    global _runner
    _runner = None


os.register_at_fork(after_in_child=_forget_runner)


def _print_schedule(outputs: list[Node], placed: dict[int, Placement]) -> None:
    for node in toposort(outputs):
        where = placed[id(node)]
        why = f": {where.decision.reason}" if where.decision is not None else ""
        print(f"hermes: {node.key} on {where.device}{why}", file=sys.stderr)


def _print_sources(outputs: list[Node], placed: dict[int, Placement]) -> None:
    for node in toposort(outputs):
        device = placed[id(node)].device
        source = kernel_source(node, device)
        if source is not None:
            print(f"hermes: source of {node.key} on {device}:\n{source}", file=sys.stderr)


def materialised(node: Node, value: Resident) -> Node:
    """The ``buffer`` node holding ``node``'s computed ``value`` (``node`` itself if it is one)."""
    if node.op == "buffer":
        return node
    return Node("buffer", (), node.shape, node.dtype, {"handle": value}, value.device)
