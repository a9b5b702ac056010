"""What a process forked from one that ran Hermes must forget, so the child computes.

``os.fork()`` copies memory but only the forking thread: the device worker threads, Dask's
thread pools and any lock one of them held are gone or stuck in the child, and a driver's
context (OpenCL, CUDA) is not usable there. The handler registered here, run in every
forked child (``os.fork``, ``multiprocessing`` with the ``fork`` start method), drops the
parent's threads and pools, reopens the performance database on first use, and marks
every device whose context does not survive a fork unusable with an error naming it;
``cpu:0`` keeps working. When the parent has started Numba's GNU OpenMP threading layer
(which ends a forked child that enters a parallel kernel), the child's ``cpu:0`` runs fused
elementwise, reduction, matmul-epilogue, convolution and pooling kernels through NumPy
instead; stencils need no Numba threads and keep their compiled kernels.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import defaultdict

#: objects of the parent's that the child must never close or free (a SQLite connection
#: closed in the child can disturb the parent's database)
_abandoned: list[object] = []
#: how many times this process's fork handler ran (``0`` in a process that was not forked)
forks_seen = 0


def after_fork_in_child() -> None:
    """Reset Hermes's process state in a freshly forked child."""
    global forks_seen
    forks_seen += 1
    _reset_devices()
    _reset_dask_pools()
    _reset_history_stores()
    _reset_scheduler_locks()
    _keep_numba_parallel_out()


def _reset_devices() -> None:
    from hermes_nb.backends.base import live_devices

    for device in live_devices():
        device.after_fork_in_child()


def _reset_dask_pools() -> None:
    """Dask's threaded scheduler keeps its pools per thread: the parent's have no threads
    in the child (they would wait for ever), so the child starts new ones."""
    threaded = sys.modules.get("dask.threaded")
    if threaded is None:
        return
    threaded.pools_lock = threading.Lock()
    threaded.pools = defaultdict(dict)
    threaded.default_pool = None
    threaded.main_thread = threading.current_thread()


def _reset_history_stores() -> None:
    """Each history store reopens its database in the child; runs the parent had not yet
    written stay the parent's to write."""
    history = sys.modules.get("hermes_nb.scheduler.history")
    if history is None:
        return
    for store in list(history._live_stores):
        store._lock = threading.RLock()
        store._pending = []
        if store._conn is not None:
            _abandoned.append(store._conn)
        store._conn = None
        store._retry_at = 0.0


def _reset_scheduler_locks() -> None:
    """Locks another thread of the parent may have held at the fork: new ones (what they
    guarded is the parent's, complete or not, and no thread of the child holds them)."""
    profile = sys.modules.get("hermes_nb.runtime.profile")
    if profile is not None:
        profile._ids_lock = threading.Lock()
    policies = sys.modules.get("hermes_nb.scheduler.policies")
    if policies is None:
        return
    policies._default_lock = threading.Lock()
    scheduler = policies._default
    if scheduler is not None:
        scheduler._lock = threading.Lock()
        scheduler.model._lock = threading.RLock()
        scheduler.health._lock = threading.Lock()


def numba_parallel_fork_unsafe() -> bool:
    """Whether this process started Numba's OpenMP threading layer, whose parallel kernels
    end a forked child (GNU OpenMP is not fork-safe; ``tbb`` and ``workqueue`` are)."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return bool(parallel is not None and parallel._is_initialized
                and parallel._threading_layer == "omp")


def _keep_numba_parallel_out() -> None:
    if not numba_parallel_fork_unsafe():
        return
    cpu = sys.modules.get("hermes_nb.backends.cpu.device")
    if cpu is not None:
        cpu.JIT_MIN_ELEMENTS = sys.maxsize  # every fused kernel below it runs through NumPy
        cpu.WINDOW_MIN_WORK = sys.maxsize  # and every conv and pool


os.register_at_fork(after_in_child=after_fork_in_child)
