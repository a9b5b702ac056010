"""``cuda:N``: every GPU CuPy finds. Ops run through CuPy and cupyx.scipy.ndimage,
with memory from CuPy's default pool and BLAS from cuBLAS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from hermes_nb.backends.base import Device
from hermes_nb.backends.cuda import kernels as cuda_kernels
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec


def discover() -> list[CUDADevice]:
    """One device per GPU, or none when CuPy or a GPU is missing."""
    try:
        import cupy
    except ImportError:
        return []
    try:
        if not cupy.cuda.is_available():
            return []
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no driver, or CUDA initialisation failed
        return []
    return [CUDADevice(i) for i in range(count)]


class CUDADevice(Device):
    kind = "cuda"
    fused_ops = frozenset({"fused_elementwise", "fused_reduce", "fused_matmul", "fused_stencil",
                           "fused_softmax"})

    def __init__(self, index: int) -> None:
        import cupy
        import cupyx.scipy.ndimage

        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"]
        super().__init__(
            index,
            name.decode() if isinstance(name, bytes) else str(name),
            memory_bytes=int(props["totalGlobalMem"]),
            compute_units=int(props["multiProcessorCount"]),
            fp64=True,
        )
        self._cupy = cupy
        self._device = cupy.cuda.Device(index)
        self._ops = ArrayOps(cupy, cupyx.scipy.ndimage)

    def from_host(self, array: np.ndarray) -> Any:
        with self._device:
            return self._cupy.array(array, order="C", copy=True)

    def to_host(self, buffer: Any) -> np.ndarray:
        with self._device:
            return self._cupy.asnumpy(buffer)

    def kernel_source(self, spec: OpSpec) -> str | None:
        """The text of the CuPy kernels ``execute`` builds for ``spec`` (``cuda.kernels``:
        the arguments CuPy is given); None where CuPy's library calls run it."""
        return cuda_kernels.kernel_source(spec)

    def execute(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        run = self._EXECUTORS.get(spec.op)
        with self._device:
            return self._ops.run(spec, inputs) if run is None else run(self, spec, inputs)

    def _fused_library(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        """``fused_reduce``/``fused_matmul``: ReductionKernel, or cuBLAS and an epilogue."""
        from hermes_nb.backends.cuda import fused as cuda_fused

        return cuda_fused.run(self._ops, spec, inputs)

    def _fused(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        """One generated CUDA kernel (``codegen.c_source``) for the whole program; CuPy's
        ElementwiseKernel broadcasts the inputs to the output's shape."""
        program = spec.attrs["program"]
        if not program.n_inputs:  # all literals (0-d): nothing for a kernel to broadcast over
            return self._ops.run(spec, inputs)
        out = self._cupy.empty(spec.shape, dtype=spec.dtype)
        if out.size:
            # scalar parameters are call arguments: one kernel for any of their values
            cuda_kernels.built(cuda_kernels.elementwise(program))(
                *inputs, *program.arguments(), out)
        return out

    def _stencil(self, spec: OpSpec, inputs: Sequence[Any]) -> Any:
        """The whole pipeline as ONE generated kernel (``codegen.stencil_c``, tiles in shared
        memory); programs it cannot express run stage by stage through cupyx."""
        from hermes_nb.codegen import stencil_c

        cfg = stencil_c.CUDA_CONFIG
        kernel = cuda_kernels.stencil(spec.attrs["stencil"])
        if kernel is None:
            return self._ops.run(spec, inputs)
        out = self._cupy.empty(spec.shape, dtype=spec.dtype)
        if out.size:
            gx, gy, nb = stencil_c.grid(spec.shape, cfg)
            image = self._cupy.ascontiguousarray(inputs[0])
            cuda_kernels.built(kernel)(
                (gx, gy, min(nb, 65535)), (cfg.wx, cfg.wy, 1),  # the kernel loops over the batch
                (out, image, np.int64(spec.shape[-2]), np.int64(spec.shape[-1]), np.int64(nb),
                 *stencil_c.kernel_arguments(spec.attrs["stencil"])),  # scalars: arguments
            )  # fmt: skip
        return out

    # op -> how this device runs it (any other op: CuPy through ArrayOps)
    _EXECUTORS: ClassVar[Mapping[str, Callable[..., Any]]] = {
        "fused_reduce": _fused_library,
        "fused_matmul": _fused_library,
        "fused_elementwise": _fused,
        "fused_stencil": _stencil,
    }

    def synchronize(self) -> None:
        with self._device:
            self._device.synchronize()

    def memory_in_use(self) -> int:
        return int(self._cupy.get_default_memory_pool().used_bytes())

    def export_dlpack(self, buffer: Any, **kwargs: Any) -> Any:
        """CuPy's capsule, made on this device's thread, so CuPy makes the consumer's
        ``stream`` wait for the stream Hermes' kernels ran on (no host synchronisation)."""
        given = {k: v for k, v in kwargs.items() if v is not None}

        def export() -> Any:
            with self._device:
                try:
                    return buffer.__dlpack__(**given)
                except TypeError:  # a CuPy before DLPack 1.0 takes the stream only
                    if kwargs.get("copy") or kwargs.get("max_version") is None:
                        raise
                    return buffer.__dlpack__(stream=kwargs.get("stream"))

        return self.run(export)

    def import_dlpack(self, obj: Any, copy: bool | None) -> Any:
        """``cupy.from_dlpack`` on this device's thread: the producer orders its work before
        the stream Hermes launches on."""
        def read() -> Any:
            with self._device:
                array = self._cupy.from_dlpack(obj)
                strided = not array.flags.c_contiguous
                if copy is False and strided:
                    raise ValueError("from_dlpack: copy=False, but the array is not "
                                     "C-contiguous; pass copy=None to copy only when needed")
                return self._cupy.array(array, order="C", copy=True) if copy or strided else array

        return self.run(read)

