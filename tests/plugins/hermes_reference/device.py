"""``reference:0``: every op run one by one with NumPy/SciPy on the host."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.base import Device
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec


def _host_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


class ReferenceDevice(Device):
    kind = "reference"
    fused_ops = frozenset()  # no compiler-made kernels: single ops only

    def __init__(self) -> None:
        super().__init__(0, "NumPy reference", memory_bytes=_host_memory_bytes(),
                         compute_units=1, fp64=True)
        self._ops = ArrayOps(np, "scipy.ndimage")
        self._held_bytes = 0
        self._held_lock = threading.Lock()  # buffers are freed by the GC, on any thread

    def from_host(self, array: np.ndarray) -> np.ndarray:
        return self._held(np.array(array, order="C", copy=True))

    def to_host(self, buffer: Any) -> np.ndarray:
        return np.array(buffer, order="C", copy=True)

    def execute(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        return self._held(self._ops.run(spec, inputs))

    def runs_generated_kernel(self, spec: OpSpec) -> bool:
        return False  # NumPy calls: nothing generated to show in explain()

    def memory_in_use(self) -> int:
        return self._held_bytes

    def info(self) -> dict[str, Any]:
        return {**super().info(), "driver": "NumPy (hermes_reference plug-in)"}

    def _held(self, buffer: np.ndarray) -> np.ndarray:
        """Count ``buffer``'s bytes as this device's until it is freed."""
        self._count(buffer.nbytes)
        weakref.finalize(buffer, self._count, -buffer.nbytes)
        return buffer

    def _count(self, nbytes: int) -> None:
        with self._held_lock:
            self._held_bytes += nbytes
