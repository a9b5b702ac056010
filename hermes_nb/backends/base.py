"""What every device offers the runtime: memory, transfers and running one op."""

from __future__ import annotations

import functools
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar, TypeVar

import numpy as np

from hermes_nb.backends.load import LoadCounters, LoadSnapshot
from hermes_nb.errors import DeviceError
from hermes_nb.ir.node import OpSpec

T = TypeVar("T")

#: between the sources of the kernels one spec runs in turn (``Device.kernel_source``)
PASS_SEPARATOR = "\n// ---- next pass: the partial results of the pass above ----\n"

_live: weakref.WeakSet[Device] = weakref.WeakSet()


def live_devices() -> list[Device]:
    """Every ``Device`` object this process has made and still holds."""
    return list(_live)


class Device(ABC):
    """One piece of hardware Hermes can run kernels on.

    Device buffers are whatever the backend's array type is (NumPy, PyOpenCL,
    CuPy arrays), always C-contiguous with the node's shape and dtype.
    Each device runs its work on its own worker thread, so kernels on
    different devices overlap while each device sees one stream of work.

    Writing a backend (the contract a plug-in implements)
    -----------------------------------------------------
    Subclass ``Device``, call ``super().__init__(index, name, memory_bytes=...,
    compute_units=..., fp64=...)`` and register a ``discover()`` that returns the
    instances under the entry-point group ``hermes_nb.backends`` (see
    ``hermes_nb.backends``). Hermes calls every method below on the device's own
    worker thread (``submit``/``run``), one call at a time, so a backend needs no
    locking of its own.

    Required:

    ``kind`` (class attribute)
        A short name of its own, without ``':'`` (``cpu``, ``opencl`` and ``cuda``
        are Hermes' own). The device's id is ``f"{kind}:{index}"`` and must be
        unique among ``hm.devices()``.
    ``from_host(array)`` / ``to_host(buffer)``
        Copy a C-contiguous NumPy array in, and a buffer back out as a NumPy array
        of the same shape and dtype.
    ``execute(spec, inputs)``
        Run one op (``spec.op``, ``spec.attrs``, ``spec.shape``, ``spec.dtype``) on
        buffers this device made, return a new C-contiguous buffer of ``spec.shape``
        and ``spec.dtype``. The ops are those of ``hermes_nb.ir.ops`` (plus, in
        ``fused_ops``, the compiler's fused kernels); ``hermes_nb.ir.array_ops.ArrayOps``
        runs every single op with any NumPy-compatible array module, and is the
        reference a backend's results must match. Raise any exception on failure:
        the runtime reports it as a ``DeviceError`` naming the op and the device.

    Optional (the defaults suit a device that runs every dtype but float64 where
    ``fp64`` is false, fuses nothing and launches synchronously):

    ``fused_ops`` (class attribute)
        Which compiler-made kernels ``execute`` runs: any of ``fused_elementwise``,
        ``fused_reduce``, ``fused_matmul``, ``fused_stencil``. The compiler fuses
        only for the kinds listed here; left empty, the device is sent single ops.
    ``supports(dtype)``
        Whether buffers of ``dtype`` can live here (placement and build-time checks).
    ``synchronize()``
        Wait for queued work, so timings are the kernel's own.
    ``memory_in_use()``
        Bytes the device's memory pool holds (the load view).
    ``kernel_source(spec)``
        The generated source a fused ``spec`` runs here, or None where nothing generated
        runs (library calls, NumPy). ``explain()`` shows exactly this, so it must come from
        the same function the device builds from, with the same variant choices (size
        thresholds, vector widths, tiles); a spec that runs several kernels gives their
        sources in launch order, joined by ``PASS_SEPARATOR``.
    ``runs_generated_kernel(spec)``
        Whether a fused ``spec`` runs as generated code (else as library calls).
    ``shares_host_memory`` (attribute, default False)
        True where buffers are host memory, so host transfers cost nothing to speak of;
        ``from_host`` may then read the array in place (never writing it) and ``to_host``
        may return the buffer's own host memory.
    ``info()``
        A dict describing the device (``hermes doctor``, the notebook views); extend
        the base dict rather than replace it.
    ``survives_fork``
        Whether a forked child may keep using the device (default: only ``cpu``).
    ``runs_on_caller`` (class attribute, default False)
        True where ``execute`` is safe on any thread: ``run`` then works on the calling
        thread under the device's lock instead of handing the work to the device's own
        thread, and a graph placed only on such devices runs on the calling thread.
    """

    #: the device's kind, the part of its id before ``':'`` (required)
    kind: ClassVar[str]
    #: compiler-made ops this device can run (the compiler fuses only for these);
    #: empty: the compiler sends single ops
    fused_ops: ClassVar[frozenset[str]] = frozenset()
    #: ``run`` works on the calling thread (under ``_run_lock``), not the device's thread:
    #: each hand-off wakes a sleeping thread, which on an idle core costs more than a
    #: short kernel (see ``Device`` above)
    runs_on_caller: ClassVar[bool] = False

    def __init__(
        self, index: int, name: str, *, memory_bytes: int, compute_units: int, fp64: bool
    ) -> None:
        self.index = index
        self.name = name
        self.memory_bytes = memory_bytes
        self.compute_units = compute_units
        self.fp64 = fp64
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._run_lock = threading.RLock()
        self.counters = LoadCounters()
        #: runs on the host's CPU cores (cpu:0, OpenCL CPU devices): two such devices add
        #: no throughput together, so co-execution never splits a kernel between them
        self.shares_host_cores = False
        #: computes in the host's memory (cpu:0, OpenCL devices with host-unified memory):
        #: ``from_host``/``to_host`` wrap or map rather than copy, so the scheduler counts
        #: moving data between the host and this device as free
        self.shares_host_memory = False
        #: why this device cannot run work in this process (set in a forked child), or None
        self.unusable_reason: str | None = None
        _live.add(self)

    @property
    def survives_fork(self) -> bool:
        """Whether a forked child can keep using this device: only the host (``cpu``) can;
        a driver's context (OpenCL, CUDA) does not survive ``os.fork()``."""
        return self.kind == "cpu"

    def after_fork_in_child(self) -> None:
        """Forget the parent's worker thread, its lock and load figures; a device whose
        driver context does not survive a fork is marked unusable."""
        self._executor = None
        self._executor_lock = threading.Lock()
        self._run_lock = threading.RLock()
        self.counters = LoadCounters()
        if not self.survives_fork:
            self.unusable_reason = (
                f"{self.id} ({self.name}) cannot be used in a process forked from one that "
                f"used it: its {self.kind} context does not survive os.fork(); start worker "
                "processes with the 'spawn' method (multiprocessing.get_context('spawn')), "
                "or use cpu:0 in the child"
            )

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.index}"

    def __str__(self) -> str:
        return self.id

    def __repr__(self) -> str:
        return (
            f"<Device {self.id} {self.name!r} memory={self.memory_bytes / 2**30:.1f} GiB "
            f"compute_units={self.compute_units} fp64={self.fp64}>"
        )

    def supports(self, dtype: np.dtype) -> bool:
        """Whether buffers of ``dtype`` can live on this device (default: all of Hermes'
        dtypes, float64 and complex128 only where ``fp64``)."""
        return self.fp64 or dtype not in (np.float64, np.complex128)

    def info(self) -> dict[str, Any]:
        """What ``hermes doctor`` and the notebook views show; a subclass adds keys."""
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "memory_bytes": self.memory_bytes,
            "compute_units": self.compute_units,
            "fp64": self.fp64,
        }

    def submit(self, fn: Callable[..., T], *args: Any, estimate_s: float = 0.0) -> Future[T]:
        """Run ``fn(*args)`` on this device's worker thread; ``estimate_s`` feeds the load
        figures (expected time until the device is free)."""
        if self.unusable_reason is not None:
            raise DeviceError(self.unusable_reason, device=self.id)
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"hermes-{self.id}")
        self.counters.submitted(estimate_s)
        return self._executor.submit(self._counted, fn, args, estimate_s)

    def _counted(self, fn: Callable[..., T], args: tuple[Any, ...], estimate_s: float) -> T:
        # where work runs on callers' threads, one at a time under the device's lock (as on
        # the device's own thread), taken in short waits so an interrupt is seen; no
        # context manager: a replayed run of small kernels comes through here each time
        lock = self._run_lock if self.runs_on_caller else None
        if lock is not None:
            while not lock.acquire(timeout=0.2):
                pass
        try:
            self.counters.started(estimate_s)
            try:
                return fn(*args)
            finally:
                self.counters.finished()
        finally:
            if lock is not None:
                lock.release()

    def run(self, fn: Callable[..., T], *args: Any, estimate_s: float = 0.0) -> T:
        """Run ``fn(*args)`` on the worker thread (the calling thread where
        ``runs_on_caller``) and wait for its result."""
        if self.runs_on_caller:
            if self.unusable_reason is not None:
                raise DeviceError(self.unusable_reason, device=self.id)
            self.counters.submitted(estimate_s)
            return self._counted(fn, args, estimate_s)
        if threading.current_thread().name.startswith(f"hermes-{self.id}_"):
            return fn(*args)  # already on this device's thread
        return self.submit(fn, *args, estimate_s=estimate_s).result()

    def load(self) -> LoadSnapshot:
        """Queue, busy fraction, expected time until free and memory in use, now."""
        try:
            memory = self.memory_in_use()
        except Exception:  # a pool that cannot answer must not break a load view
            memory = 0
        return self.counters.snapshot(self.id, memory)

    @abstractmethod
    def from_host(self, array: np.ndarray) -> Any:
        """A device buffer of the host array's shape and dtype (a copy, or on a device that
        ``shares_host_memory`` the array itself, read only); required."""

    @abstractmethod
    def to_host(self, buffer: Any) -> np.ndarray:
        """The buffer's value as a host NumPy array of its shape and dtype (a copy, or the
        buffer's own host memory, which the device then never reuses); required."""

    @abstractmethod
    def execute(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        """Run one op on device buffers and return the output buffer; required.

        ``spec.op`` is a single op of ``hermes_nb.ir.ops`` or one of ``fused_ops``;
        ``inputs`` are buffers from this device, in ``spec.in_shapes`` order. The result
        is a new C-contiguous buffer of ``spec.shape`` and ``spec.dtype``, equal to what
        ``ArrayOps(numpy, "scipy.ndimage").run(spec, inputs)`` gives on the host.
        """

    def launcher(self, spec: OpSpec) -> Callable[[Sequence[Any]], Any]:
        """``execute`` of ``spec`` as a function of its inputs alone, where a device can
        decide once what depends on ``spec`` alone (a replay launches one spec at every
        run); the default calls ``execute``."""
        return functools.partial(self.execute, spec)

    def kernel_source(self, spec: OpSpec) -> str | None:
        """The generated source ``spec`` runs here, byte for byte what the device builds
        (what ``explain()`` shows); None (the default): it runs library calls, nothing
        generated."""
        return None

    def runs_generated_kernel(self, spec: OpSpec) -> bool:
        """Whether a fused ``spec`` runs as generated code here (else as library calls)."""
        return True

    def synchronize(self) -> None:
        """Wait for all work queued on the device (no-op where launches are synchronous);
        the runtime calls it after each ``execute`` it times."""

    def memory_in_use(self) -> int:
        """Bytes held by this device's memory pool (0: not known)."""
        return 0

    def export_dlpack(self, buffer: Any, **kwargs: Any) -> Any:
        """A DLPack capsule of ``buffer`` in this device's memory (``kwargs``: ``stream``,
        ``max_version``, ``copy`` as ``__dlpack__`` takes them), or None (the default): the
        device's values are exported from the host (``to_host``)."""
        return None

    def import_dlpack(self, obj: Any, copy: bool | None) -> Any:
        """A C-contiguous buffer of this device holding the DLPack producer ``obj``'s data in
        place (a copy where ``copy`` is True or the data is strided; ``copy=False`` then
        raises ``ValueError``), or None (the default): this device reads no DLPack data."""
        return None
