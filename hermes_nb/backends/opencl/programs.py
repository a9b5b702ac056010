"""Built OpenCL programs: a per-context cache of kernels, built through the guard.

A program new to this machine is built, and each kernel first launched, in the isolated
worker (``backends.opencl.guard``) before it is built here; a build failure raises
``KernelBuildError`` with the compiler's log and the path of the saved source.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from hermes_nb import logrecords
from hermes_nb.backends.opencl.build import build_program
from hermes_nb.cache import save_source

log = logging.getLogger("hermes_nb.backends")


def _build(cl: Any, context: Any, source: str, device: str = "", kernel: str = "") -> Any:
    """Build ``source``; on failure raise KernelBuildError with the log and a saved copy.
    The compiler's output (``CompilerWarning``, the build log) becomes log records."""
    try:
        with logrecords.build_warnings(device=device, kernel=kernel), \
                logrecords.native_stderr(device, kernel, "build"):
            program = build_program(cl, context, source)
        logrecords.emit(logging.DEBUG, f"built OpenCL program for {kernel or 'a kernel'}",
                        logger=log.name, device=device, kernel=kernel, category="compile",
                        detail=_build_log(cl, program))
        return program
    except (cl.RuntimeError, cl.LogicError) as exc:
        from hermes_nb.backends.opencl.guard import short_log
        from hermes_nb.errors import KernelBuildError

        path = save_source(source, ".cl")
        raise KernelBuildError(
            f"OpenCL build failed; source saved to {path}\n{short_log(str(exc))}", log=str(exc),
            source_path=str(path),
        ) from exc


def _build_log(cl: Any, program: Any) -> str:
    """The driver's build log of ``program`` (each device's, joined)."""
    try:
        return "\n".join(program.get_build_info(d, cl.program_build_info.LOG).strip()
                         for d in program.devices).strip()
    except Exception:  # a driver without build logs: nothing to attach
        return ""


class ProgramCache:
    """Built programs and their kernels, per context and source.

    With a ``guard`` (``backends.opencl.guard``), a program new to this machine is built,
    and each kernel first launched, in the isolated worker before it is here; the driver's
    own disk cache makes the second build cheap.
    """

    def __init__(self, context: Any, guard: Any = None) -> None:
        self._context = context
        self._guard = guard
        self._kernels: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def kernel(self, source: str, name: str) -> Any:
        key = (source, name)
        knl = self._kernels.get(key)
        if knl is None:
            with self._lock:
                knl = self._kernels.get(key)
                if knl is None:
                    from hermes_nb.compiler.progress import building

                    where = self._guard.device_id if self._guard is not None else "OpenCL"
                    with building(f"OpenCL kernel {name} for {where}"):
                        knl = self._load(source, name)
        return knl

    def _load(self, source: str, name: str) -> Any:
        import pyopencl as cl

        from hermes_nb.backends.opencl.guard import GuardedKernel
        from hermes_nb.errors import KernelBuildError

        def saved() -> Any:
            return save_source(source, ".cl")

        if self._guard is None:
            program = _build(cl, self._context, source, "", name)
            kernels = {k.function_name: k for k in program.all_kernels()}
        else:
            # shared from the worker's build to ours: no process empties the cache between
            with self._guard.cache_lock.shared():
                kernels = self._guarded_build(cl, source, name, saved)
        if name not in kernels:
            raise KernelBuildError(
                f"OpenCL program has no kernel {name!r} (it holds {sorted(kernels)}); "
                f"source saved to {saved()}", source_path=str(saved()))
        for kname, k in kernels.items():
            wrapped = GuardedKernel(k, self._guard, source, saved) if self._guard else k
            self._kernels[(source, kname)] = wrapped
        return self._kernels[(source, name)]

    def _guarded_build(self, cl: Any, source: str, name: str, saved: Any) -> dict[str, Any]:
        """Build in the worker, then here; a program missing its kernel was loaded from a
        damaged cache entry: the cache is emptied and both builds done once more."""
        where = self._guard.device_id
        for attempt in (0, 1):
            self._guard.build(source, name, saved)
            program = _build(cl, self._context, source, where, name)
            kernels = {k.function_name: k for k in program.all_kernels()}
            if name in kernels or attempt:
                return kernels
            self._guard.clear_driver_cache()
        raise AssertionError("unreachable")

    def __len__(self) -> int:
        return len({s for s, _ in self._kernels})
