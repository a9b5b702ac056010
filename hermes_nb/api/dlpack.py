"""DLPack: a ``Tensor``'s value handed to another library without a copy, and arrays of
other libraries (NumPy, PyTorch, JAX, CuPy) read by Hermes in place.

Exporting (``Tensor.__dlpack__``/``__dlpack_device__``, what ``np.from_dlpack(t)``,
``torch.from_dlpack(t)`` and ``torch.as_tensor(t)`` call):

* On the host (``cpu:0``, and OpenCL devices that share the host's memory, such as PoCL)
  the capsule holds the computed value's own host array: the same data pointer that
  ``t.numpy()`` returns, no copy. A tensor is immutable, so the capsule is marked
  read-only (DLPack 1.0's ``DLPACK_FLAG_BITMASK_READ_ONLY``, given to a consumer that
  asks with ``max_version=(1, 0)`` or later, as NumPy >= 2.1 and PyTorch >= 2.6 do);
  NumPy then gives a read-only array. A consumer of an older DLPack, which cannot mark
  memory read-only, gets a copy instead (``copy=False`` raises ``BufferError`` there).
  PyTorch has no read-only tensors: it shares the memory and ignores the flag, so write
  into ``torch.from_dlpack(t)`` only after ``.clone()``.
* On ``cuda:N`` the capsule is CuPy's, made on the device's own thread: the consumer's
  ``stream`` is made to wait for the kernels that computed the value, and no byte goes
  through the host. CUDA capsules carry no read-only flag.
* A lazy tensor is computed first (on ``cuda:N`` if it is pinned there, else read on the
  host).

Importing (``hm.from_dlpack``, ``hm.asarray`` of a PyTorch, JAX or CuPy array): a host
producer is read in place like a NumPy array given to ``hm.asarray`` (a read-only view,
read at each compute; ``copy=True`` takes a snapshot); a CUDA producer becomes a tensor
computed on ``cuda:N`` that holds the producer's memory. None of these libraries is
imported by ``import hermes_nb``: Hermes only calls the producer's ``__dlpack__``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np

from hermes_nb import runtime
from hermes_nb.api.tensor import Tensor
from hermes_nb.backends import get_device
from hermes_nb.ir import dtypes
from hermes_nb.ir.node import Node


class DLDeviceType(IntEnum):
    """The DLPack device types Hermes meets (``DLDeviceType`` in ``dlpack.h``)."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    CUDA_MANAGED = 13


_HOST_TYPES = frozenset({DLDeviceType.CPU, DLDeviceType.CUDA_HOST, DLDeviceType.CUDA_MANAGED})
_NUMPY_VERSIONED = np.lib.NumpyVersion(np.__version__) >= "2.1.0"  # max_version, copy


def export_device(tensor: Tensor) -> tuple[int, int]:
    """``__dlpack_device__``: ``(2, N)`` for a tensor computed on, or pinned to,
    ``cuda:N``; ``(1, 0)`` (the host) for every other tensor."""
    cuda = _cuda_index(_home(tensor))
    return (DLDeviceType.CUDA, cuda) if cuda is not None else (DLDeviceType.CPU, 0)


def _home(tensor: Tensor) -> str | None:
    node = tensor.node
    if node.op == "buffer":
        return getattr(node.attrs["handle"], "device", node.device)
    return node.device


def _cuda_index(device: str | None) -> int | None:
    kind, _, index = (device or "").partition(":")
    return int(index) if kind == "cuda" else None


def export(tensor: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """``__dlpack__``: a DLPack capsule of ``tensor``'s value (see the module docstring)."""
    home = export_device(tensor)
    wanted = home if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
    if home[0] == DLDeviceType.CUDA and wanted == home:
        return _export_cuda(tensor, stream=stream, max_version=max_version, copy=copy)
    if wanted[0] != DLDeviceType.CPU:
        raise BufferError(f"__dlpack__: cannot export a tensor on {_home(tensor) or 'the host'}"
                          f" to DLPack device {wanted}; use t.to('cuda:N') first")
    if home != wanted and copy is False:
        raise BufferError(f"__dlpack__: the tensor lives on {_home(tensor)}; exporting it to the "
                          "host needs a copy, which copy=False refuses")
    if stream is not None:
        raise ValueError(f"__dlpack__: stream must be None for a host export, got {stream!r}")
    return _export_host(tensor.numpy(), max_version, copy)


def _export_host(array: np.ndarray, max_version: tuple[int, int] | None,
                 copy: bool | None) -> Any:
    """The capsule of a read-only host array: flagged read-only for DLPack >= 1.0, a copy for
    older consumers (they could write into it)."""
    if max_version is not None and tuple(max_version) >= (1, 0) and _NUMPY_VERSIONED:
        return array.__dlpack__(max_version=max_version, copy=copy)
    if copy is False:
        raise BufferError("__dlpack__: a tensor's value is read-only and DLPack before 1.0 "
                          "cannot mark it so; copy=False refuses the copy a writable export "
                          "needs (ask with max_version=(1, 0))")
    return np.array(array, copy=True).__dlpack__()


def _export_cuda(tensor: Tensor, **kwargs: Any) -> Any:
    (value,) = runtime.execute([tensor.node])
    device = get_device(_home(tensor) or value.device)
    buffer = value.on(device.id) if isinstance(value, runtime.Resident) else value
    capsule = device.export_dlpack(buffer, **kwargs)
    if capsule is None:
        raise BufferError(f"__dlpack__: {device.id} cannot export its buffers through DLPack")
    return capsule


def producer_device(obj: Any) -> tuple[int, int]:
    """The DLPack device ``obj`` (anything with ``__dlpack__``) holds its data on."""
    kind, index = obj.__dlpack_device__()
    return int(kind), int(index)


def host_array(obj: Any) -> np.ndarray:
    """``obj``'s data as a NumPy array sharing its memory (DLPack, no copy), read-only when
    the producer says so."""
    if int(producer_device(obj)[0]) not in _HOST_TYPES:
        raise BufferError(f"from_dlpack: {type(obj).__name__} is on DLPack device "
                          f"{producer_device(obj)}, not the host")
    return np.from_dlpack(obj)


def cuda_tensor(obj: Any, copy: bool | None) -> Tensor:
    """A computed tensor on ``cuda:N`` holding the CUDA producer ``obj``'s memory (a copy
    where ``copy=True`` or the data is not C-contiguous; ``copy=False`` refuses that)."""
    index = producer_device(obj)[1]
    try:
        device = get_device(f"cuda:{index}")
    except ValueError:
        raise BufferError(f"from_dlpack: the array is on CUDA device {index}, but Hermes has no "
                          f"cuda:{index} (is CuPy installed?)") from None
    buffer = device.import_dlpack(obj, copy)
    if buffer is None:
        raise BufferError(f"from_dlpack: {device.id} cannot read DLPack data")
    dtype = dtypes.as_dtype(buffer.dtype, op="from_dlpack")
    value = runtime.Resident(device.id, buffer)
    return Tensor(Node("buffer", (), tuple(buffer.shape), dtype, {"handle": value}, device.id))
