"""Errors Hermes raises beyond ``ValueError`` and ``TypeError``."""

from __future__ import annotations


class DeviceError(RuntimeError):
    """A kernel failed on a device at run time (out of memory, build failure, device lost).

    The message names the op, its shapes and dtypes, the device and, for a
    build failure, the compiler's log.
    """

    def __init__(self, message: str, *, op: str = "", device: str = "") -> None:
        super().__init__(message)
        self.op = op
        self.device = device


class DeviceMemoryError(DeviceError, MemoryError):
    """A kernel's buffers cannot fit on its device (known before allocating where possible):
    the message names the bytes needed and the device's limit."""


class KernelBuildError(RuntimeError):
    """A generated kernel did not compile. The message holds the compiler's log and the
    path of the saved source; the failed build is not cached."""

    def __init__(self, message: str, *, log: str = "", source_path: str = "") -> None:
        super().__init__(message)
        self.log = log
        self.source_path = source_path


class KernelCrashError(KernelBuildError):
    """Building or first launching a kernel crashed the driver (or ran past its time limit)
    in the isolated build worker; the user's process was not touched. ``signal`` names
    how the worker ended. The device retries with a safer variant of the kernel."""

    def __init__(self, message: str, *, log: str = "", source_path: str = "",
                 signal: str = "") -> None:
        super().__init__(message, log=log, source_path=source_path)
        self.signal = signal


class ClusterError(RuntimeError):
    """A ``dask.distributed`` cluster cannot run Hermes graphs (e.g. Hermes is not installed
    on its scheduler or workers)."""
