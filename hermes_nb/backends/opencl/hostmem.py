"""Host-visible buffers for OpenCL devices that share the host's memory
(``CL_DEVICE_HOST_UNIFIED_MEMORY``: CPU devices such as PoCL, integrated GPUs).

* Inputs are used in place: a C-contiguous, native-order array whose address suits its
  dtype is wrapped ``READ_ONLY | USE_HOST_PTR``; pyopencl's buffer holds the array
  (``hostbuf``), so it outlives the buffer, and no kernel writes a wrapped buffer.
* Every buffer the device makes (kernel outputs, copies of arrays that cannot be wrapped)
  lives in a host array Hermes owns (aligned to ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``), reused
  through a small pool once no buffer refers to it.
* ``to_host`` maps the buffer (which makes the host array current, and costs ~0.1 ms on
  PoCL at any size) and hands out the host array itself; from then on it is the caller's
  and never goes back to the pool. A wrapped input is copied instead: a result must not
  alias the caller's array.

Why not the driver's ``MEM_BASE_ADDR_ALIGN`` for inputs: it is the alignment of
sub-buffer offsets, not a requirement on ``host_ptr``, and NumPy's large arrays start 16
bytes past a page, so requiring it would copy every real input. Hermes' kernels read with
``vloadN``, which needs only the element's alignment; a driver that wants more copies
internally (the OpenCL spec lets it), which is still correct.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

import numpy as np

__all__ = ["HostMemory", "aligned_empty", "borrowed", "host_unified", "wrappable"]


def host_unified(cl_device: Any) -> bool:
    """Whether the device reads and writes the host's memory (0 where the query fails)."""
    try:
        return bool(cl_device.host_unified_memory)
    except Exception:  # deprecated in OpenCL 3.0: a driver may not answer
        return False


def aligned_empty(nbytes: int, align: int) -> np.ndarray:
    """``nbytes`` uninitialised host bytes starting at a multiple of ``align``."""
    raw = np.empty(nbytes + align, np.uint8)
    skip = (-raw.ctypes.data) % align
    return raw[skip:skip + nbytes]


@cache
def _buffer_class() -> type:
    """``cl.Buffer`` with the host array and its pool as Python attributes (made on first
    use: PyOpenCL is imported lazily)."""
    import pyopencl as cl

    class HostBuffer(cl.Buffer):  # type: ignore[misc, name-defined]
        host: np.ndarray
        memory: HostMemory
        borrowed = False  # wraps a caller's array: never pooled, never handed out
        handed_out = False  # its host array was given to a caller: never reuse it

        def __del__(self) -> None:
            memory = self.__dict__.get("memory")
            if memory is not None:
                memory.retire(self.host, not self.borrowed,
                              not (self.borrowed or self.handed_out))

    return HostBuffer


class HostMemory:
    """The allocator of a host-unified device's buffers (pyopencl calls it with a byte
    count), its pool of free host arrays, and the transfers in and out."""

    def __init__(self, context: Any, queue: Any, align: int, keep_bytes: int) -> None:
        self.context = context
        self.queue = queue
        self.align = max(int(align), 64)
        self.keep_bytes = keep_bytes  # free host bytes the pool may hold
        self.active_bytes = 0  # bytes of live buffers (the device's memory in use)
        self._held = 0
        self._free: dict[int, list[np.ndarray]] = {}
        # host memory of dead buffers that queued commands may still use: (marker, host,
        # reusable), held until the marker completes (USE_HOST_PTR memory must outlive them)
        self._retired: list[tuple[Any, np.ndarray, bool]] = []
        self._lock = threading.Lock()  # buffers die on whichever thread drops them

    # ---- allocation ----------------------------------------------------------------------

    def __call__(self, nbytes: int) -> Any:
        import pyopencl as cl

        self.reap()
        size = -(-int(nbytes) // self.align) * self.align
        host = self._take(size)
        if host is None:
            host = aligned_empty(size, self.align)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
        buf = _buffer_class()(self.context, flags, hostbuf=host)
        buf.host, buf.memory = host, self
        with self._lock:
            self.active_bytes += size
        return buf

    def _take(self, size: int) -> np.ndarray | None:
        with self._lock:
            free = self._free.get(size)
            if not free:
                return None
            self._held -= size
            return free.pop()

    def retire(self, host: np.ndarray, owned: bool, reusable: bool) -> None:
        """A buffer died: hold its host memory until the commands queued so far are done
        (they may still read or write it; USE_HOST_PTR memory must outlive them), then
        pool it where ``reusable``."""
        try:
            import pyopencl as cl

            marker = cl.enqueue_marker(self.queue)
        except Exception:  # the queue is gone (interpreter exit): nothing uses the memory
            marker = None
        with self._lock:
            if owned:
                self.active_bytes -= host.nbytes
            self._retired.append((marker, host, reusable))

    def reap(self) -> None:
        """Release (or pool) the retired host memory whose commands have finished."""
        with self._lock:
            retired, self._retired = self._retired, []
        done, waiting = [], []
        for entry in retired:  # one status query per marker (CL_COMPLETE is 0)
            marker = entry[0]
            (done if marker is None or marker.command_execution_status == 0 else waiting).append(entry)
        with self._lock:
            self._retired.extend(waiting)
            for _, host, reusable in done:
                if reusable and self._held + host.nbytes <= self.keep_bytes:
                    self._held += host.nbytes
                    self._free.setdefault(host.nbytes, []).append(host)

    # ---- transfers -----------------------------------------------------------------------

    def upload(self, queue: Any, array: np.ndarray) -> Any:
        """A device array reading ``array`` in place where it can, else a copy of it in
        Hermes' host memory (queued, so it is ordered after the queue's earlier readers of
        that memory)."""
        import pyopencl as cl
        import pyopencl.array as cla

        self.reap()
        array = np.asarray(array)
        if array.size == 0:
            return cla.to_device(queue, np.asarray(array, order="C"), allocator=self)
        if wrappable(array):
            flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
            buf = _buffer_class()(self.context, flags, hostbuf=array)
            buf.host, buf.memory, buf.borrowed = array, self, True
            return cla.Array(queue, array.shape, array.dtype, data=buf)
        native = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))
        out = cla.empty(queue, native.shape, native.dtype, allocator=self)
        cl.enqueue_copy(queue, out.base_data, native, is_blocking=False)  # keeps ``native``
        return out

    def download(self, queue: Any, buffer: Any) -> np.ndarray:
        """``buffer``'s value as a host array: its own host memory after a map, or a copy
        when that memory is a caller's array or not Hermes' (a buffer from elsewhere)."""
        base = buffer.base_data
        if buffer.size == 0 or not isinstance(base, _buffer_class()):
            return buffer.get(queue=queue)
        _map_and_unmap(queue, base, buffer.offset, buffer.nbytes)
        start = buffer.offset
        raw = base.host.reshape(-1).view(np.uint8)[start:start + buffer.nbytes]
        host = raw.view(buffer.dtype).reshape(buffer.shape)
        if base.borrowed:
            return np.array(host, copy=True)  # a wrapped input: never alias the caller's array
        base.handed_out = True
        return host


def wrappable(array: np.ndarray) -> bool:
    """Whether a kernel can read ``array`` in place: C-contiguous, native byte order,
    at an address that suits its dtype (what ``vloadN`` needs)."""
    return bool(array.flags.c_contiguous and array.flags.aligned and array.dtype.isnative
                and array.ctypes.data % max(array.dtype.alignment, 1) == 0)


def borrowed(buffer: Any) -> bool:
    """Whether ``buffer`` reads a caller's array in place (a wrapped input)."""
    base = getattr(buffer, "base_data", None)
    return isinstance(base, _buffer_class()) and base.borrowed


def _map_and_unmap(queue: Any, base: Any, offset: int, nbytes: int) -> None:
    """Map for reading, which waits for the queue and, for a ``USE_HOST_PTR`` buffer, makes
    the host array current (the spec's rule; PoCL computes in place, so it is ~0.1 ms)."""
    import pyopencl as cl

    mapped, _ = cl.enqueue_map_buffer(queue, base, cl.map_flags.READ, offset, (nbytes,),
                                      np.uint8, is_blocking=True)
    mapped.base.release(queue).wait()
