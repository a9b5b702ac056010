"""OpenCL backend: one device per OpenCL device on any platform (PoCL on CPUs, GPUs).

Buffers are ``pyopencl.array.Array`` objects from a per-device memory pool, C-contiguous with
the node's shape and dtype (bool stored as one byte, always 0 or 1). On a device with
host-unified memory (PoCL, integrated GPUs) the pool is ``hostmem``'s host arrays and host
inputs are read in place. PyOpenCL is imported lazily, so this module imports on machines
without it.

The device holds its context, queue, memory and program cache and dispatches each op to
its runner: ``buffers`` (transfers, movement), ``single_ops``, ``elementwise``, ``fused``,
``stencil``; ``sources`` picks the source of a fused kernel as those runners pick it, and
``discovery`` finds the devices and their drivers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from hermes_nb.backends.base import Device
from hermes_nb.backends.opencl import buffers, discovery, elementwise, hostmem, single_ops, sources
from hermes_nb.backends.opencl import fused as opencl_fused
from hermes_nb.backends.opencl import stencil as opencl_stencil
from hermes_nb.backends.opencl import window as opencl_window
from hermes_nb.backends.opencl.capabilities import Capabilities
from hermes_nb.backends.opencl.programs import ProgramCache
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.ops import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, REDUCTIONS

__all__ = ["OpenCLDevice", "discover", "hidden_devices"]

log = logging.getLogger("hermes_nb.backends")
_WG = 256  # work-group size of the 1-D kernels; global sizes are rounded up to it
_I64 = np.dtype(np.int64)
_POOL_KEEP_BYTES = 2 << 30  # free host memory a host-unified device keeps for reuse


_hidden: list[Any] = []  # opencl_drivers.Hidden: devices left out, and why


def discover() -> list[OpenCLDevice]:
    """One ``OpenCLDevice`` per physical OpenCL device (the newest driver that passes its
    self-test); ``[]`` without OpenCL. The rest are in :func:`hidden_devices`."""
    from hermes_nb.backends.opencl import drivers as opencl_drivers

    drivers = discovery.choose_drivers()
    if drivers is None:
        return []  # no OpenCL: what was hidden before stays listed
    chosen, hidden = drivers
    found: list[OpenCLDevice] = []
    for candidate, verdict in chosen:
        try:
            found.append(OpenCLDevice(len(found), candidate.device, candidate, verdict))
        except Exception as exc:  # a device we cannot open a context on is not usable
            hidden.append(opencl_drivers.Hidden(candidate.device.name.strip(), candidate.driver,
                                                f"cannot open a context: {exc}"))
    _hidden[:] = hidden
    return found


def hidden_devices() -> list[Any]:
    """OpenCL devices found but not used (duplicates, failed self-tests), with reasons."""
    return list(_hidden)


class OpenCLDevice(Device):
    kind = "opencl"
    fused_ops = frozenset({"fused_elementwise", "fused_reduce", "fused_matmul", "fused_stencil"})

    def __init__(self, index: int, cl_device: Any, candidate: Any = None, verdict: Any = None) -> None:
        import pyopencl as cl
        import pyopencl.tools as cl_tools

        fp64 = bool(getattr(cl_device, "double_fp_config", 0)) or ("cl_khr_fp64" in cl_device.extensions)
        super().__init__(
            index,
            cl_device.name.strip(),
            memory_bytes=int(cl_device.global_mem_size),
            compute_units=int(cl_device.max_compute_units),
            fp64=fp64,
        )
        self.cl_device = cl_device
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context)  # in-order: launches need no events
        #: host memory the device computes in, or None (a discrete device: today's copies)
        self.host_memory = self._host_memory(cl_device)
        self.shares_host_memory = self.host_memory is not None
        self.pool: Any = self.host_memory if self.host_memory is not None else \
            cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))
        self.candidate = candidate
        self.driver = candidate.driver if candidate is not None else cl_device.platform.version
        self.verdict = verdict
        self.degraded: list[str] = []  # features switched off after a crash at run time
        self.programs = ProgramCache(self.context, self._guard(index))
        self._dummy: Any = None
        self._stencil_configs: dict[Any, Any] = {}  # StencilProgram -> StencilConfig | None
        self._capabilities = discovery.capabilities_of(cl, cl_device, verdict)
        self.shares_host_cores = self._capabilities.is_cpu  # PoCL & co. use cpu:0's cores

    def _host_memory(self, cl_device: Any) -> hostmem.HostMemory | None:
        """Host-visible buffers where the device shares the host's memory."""
        if not hostmem.host_unified(cl_device):
            return None
        align = int(cl_device.mem_base_addr_align) // 8  # the info is in bits
        keep = min(self.memory_bytes // 8, _POOL_KEEP_BYTES)
        return hostmem.HostMemory(self.context, self.queue, align, keep)

    def _guard(self, index: int) -> Any:
        """The build worker's guard of this driver (None: builds run in this process)."""
        from hermes_nb.backends import isolation
        from hermes_nb.backends.opencl import drivers as opencl_drivers
        from hermes_nb.backends.opencl import guard as opencl_guard

        candidate, verdict = self.candidate, self.verdict
        if candidate is None or not isolation.enabled():
            return None
        fingerprint = verdict.fingerprint if verdict is not None else \
            opencl_drivers.fingerprint(candidate)
        return opencl_guard.Guard(candidate.ref, fingerprint,
                                  opencl_drivers.configure_driver_cache(), f"opencl:{index}")

    @property
    def capabilities(self) -> Capabilities:
        """What fused kernels may use here (narrowed after a kernel crashes the driver)."""
        return self._capabilities

    @property
    def local_stencils(self) -> bool:
        return self._capabilities.local_stencils

    def info(self) -> dict[str, Any]:
        out = super().info()
        out["driver"] = self.driver
        out["selftest"] = self.verdict.summary() if self.verdict is not None else "not run"
        if self.degraded:
            out["degraded"] = list(self.degraded)
        return out

    # ---- memory and launches ------------------------------------------------------------

    def from_host(self, array: np.ndarray) -> Any:
        """The array in place where the device shares host memory (a copy only where it
        cannot be read in place), else a copy in device memory."""
        import pyopencl.array as cla

        if self.host_memory is not None:
            return self.host_memory.upload(self.queue, array)
        # np.asarray(order="C") copies non-contiguous views and, unlike ascontiguousarray,
        # keeps 0-d arrays 0-d.
        return cla.to_device(self.queue, np.asarray(array, order="C"), allocator=self.pool)

    def to_host(self, buffer: Any) -> np.ndarray:
        """A map where the device shares host memory (the buffer's host array), else a copy."""
        if self.host_memory is not None:
            return self.host_memory.download(self.queue, buffer)
        return buffer.get(queue=self.queue)

    def synchronize(self) -> None:
        self.queue.finish()
        if self.host_memory is not None:
            self.host_memory.reap()  # every retired buffer's commands are done now

    def memory_in_use(self) -> int:
        return int(self.pool.active_bytes)

    def empty(self, shape: Sequence[int], dtype: np.dtype) -> Any:
        import pyopencl.array as cla

        return cla.empty(self.queue, tuple(shape), np.dtype(dtype), allocator=self.pool)

    def meta(self, values: Sequence[int]) -> Any:
        """A small int64 buffer of shapes/strides for a kernel (never an empty one)."""
        return self.from_host(np.array([*values, 0], dtype=_I64))

    @property
    def unused(self) -> Any:
        """A tiny buffer passed for kernel arguments a variant ignores (e.g. indices of a sum)."""
        if self._dummy is None:
            self._dummy = self.meta([])
        return self._dummy

    def copy_strided(self, dst: Any, dst_off: int, dst_st: Sequence[int], src_buf: Any,
                     src_off: int, src_st: Sequence[int], shape: Sequence[int]) -> None:
        """dst[dst_off + c·dst_st] = src[src_off + c·src_st] for every coordinate c of shape."""
        buffers.copy_strided(self, dst, dst_off, dst_st, src_buf, src_off, src_st, shape)

    def launch(self, source: str, name: str, n: int, *args: Any) -> None:
        """Run a 1-D kernel over ``n`` items (rounded up to the work-group size)."""
        knl = self.programs.kernel(source, name)
        wg = self.group_size(knl)
        knl(self.queue, (buffers.round_up(n, wg),), (wg,), *args)

    def group_size(self, knl: Any) -> int:
        """Largest power of two <= _WG the device allows for this kernel."""
        import pyopencl as cl

        limit = knl.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.cl_device)
        return min(_WG, 1 << (int(limit).bit_length() - 1))

    # ---- dispatch -------------------------------------------------------------------------

    def execute(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        """Run one op; a kernel that crashes the driver in the build worker is retried
        with safer variants (narrower vectors, then no local-memory tiles)."""
        from hermes_nb.errors import KernelCrashError

        while True:
            try:
                return self._execute(spec, inputs)
            except KernelCrashError as exc:
                if not self._degrade(exc):
                    raise

    def _degrade(self, exc: Exception) -> bool:
        """Switch off the next riskiest feature; False when nothing is left to switch off."""
        safer = self._capabilities.safer()
        if safer is None:
            return False
        self._capabilities, change = safer
        self._stencil_configs.clear()
        signal = getattr(exc, "signal", "")
        self.degraded.append(f"{change} (after {signal or 'a crash'})")
        log.warning("hermes: %s: a kernel crashed the driver (%s); retrying with %s", self.id,
                    signal, change)
        return True

    def _execute(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        op = spec.op
        wide = (np.float64, np.complex128)
        if not self.fp64 and any(d in wide for d in (spec.dtype, *spec.in_dtypes)):
            raise TypeError(f"{op}: device {self.id} ({self.name}) has no float64 support "
                            "(needed by float64 and complex128)")
        handler = self._HANDLERS.get(op)
        if handler is None:
            raise NotImplementedError(f"{op} on {self.id}")
        return handler(self, spec, inputs)

    def kernel_source(self, spec: OpSpec) -> str | None:
        """The source this device builds for a fused kernel, chosen exactly as execution
        chooses it (vector width, tiles, passes): what ``explain()`` shows is what runs."""
        return sources.kernel_source(self, spec)

    def stencil_config(self, stencil: Any) -> Any:
        """The launch geometry for ``stencil`` here, or None if it cannot run as one kernel.
        Cached per program: the choice tries a few tile sizes."""
        if stencil not in self._stencil_configs:
            self._stencil_configs[stencil] = opencl_stencil.choose_config(self._capabilities,
                                                                          stencil)
        return self._stencil_configs[stencil]

    def run_fused_elementwise(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        """One generated kernel for a ``fused_elementwise`` spec (the vector form where it
        applies)."""
        return elementwise.run_fused(self, spec, inputs)

    def run_conv2d(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        """A 2-D convolution over the last two axes (two 1-D passes when separable)."""
        return single_ops.run_conv2d(self, spec, inputs)

    # op -> what runs it, as f(device, spec, inputs): built once, for every device of this class
    _HANDLERS: ClassVar[Mapping[str, Callable[..., Any]]] = {
        **dict.fromkeys((*ELEMENTWISE_UNARY, *ELEMENTWISE_BINARY, "where"), elementwise.op_single),
        **dict.fromkeys(REDUCTIONS, single_ops.op_reduce),
        "to_device": buffers.op_to_device,  # listed as unary elementwise: a no-op here
        "fused_elementwise": elementwise.run_fused,
        "fused_stencil": opencl_stencil.fused_stencil,  # one kernel, local-memory tiles
        "fused_reduce": opencl_fused.fused_reduce,  # prologue + reduction + epilogue
        "fused_matmul": opencl_fused.fused_matmul,  # tiled, epilogue at the store
        "full": single_ops.op_full,
        "arange": single_ops.op_arange,
        "reshape": buffers.op_reshape,
        "permute": buffers.op_permute,
        "broadcast_to": buffers.op_broadcast_to,
        "slice": buffers.op_slice,
        "concat": buffers.op_concat,
        "matmul": single_ops.op_matmul,
        "conv2d": single_ops.run_conv2d,
        "conv": opencl_window.op_window,
        "pool": opencl_window.op_window,
    }
