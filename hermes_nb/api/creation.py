"""Tensors from host data and from fill rules (zeros, ones, full, arange)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.api import dlpack
from hermes_nb.api.cluster_input import from_cluster
from hermes_nb.api.graph import make_node
from hermes_nb.api.namespace_info import DeviceLike, device_id, on_device
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes
from hermes_nb.ir.node import BORROWED

ShapeLike = int | Sequence[int]


def normalize_shape(shape: ShapeLike, op: str) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, or ``TypeError``/``ValueError`` naming ``op``."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        dims: tuple[Any, ...] = (shape,)
    elif isinstance(shape, (Sequence, np.ndarray)) and not isinstance(shape, (str, bytes)):
        dims = tuple(shape)
    else:
        raise TypeError(f"{op}: shape must be an int or a sequence of ints, got {shape!r}")
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, (bool, np.bool_)):
            raise TypeError(f"{op}: shape entries must be ints, got {shape!r}")
        if d < 0:
            raise ValueError(f"{op}: negative dimension in shape {tuple(dims)}")
    return tuple(int(d) for d in dims)


def from_numpy(array: np.ndarray, *, op: str = "from_numpy") -> Tensor:
    """A constant tensor holding a copy of ``array`` (in native byte order).

    Masked arrays are refused with ``TypeError`` naming ``op``: the mask would otherwise
    be lost.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{op}: expected a numpy.ndarray, got {type(array).__name__}")
    check_representable(array, op)
    dtype = dtypes.as_dtype(array.dtype, op=op)
    return _copied_constant(array, dtype)


def _copied_constant(array: np.ndarray, dtype: np.dtype) -> Tensor:
    """A constant holding its own read-only copy: keyed by content, a snapshot."""
    value = np.array(array, dtype=dtype, order="C", copy=True)
    value.flags.writeable = False
    return Tensor(make_node("constant", (), value.shape, dtype, value=value))


def _borrowed_constant(array: np.ndarray) -> Tensor:
    """A constant holding a read-only view of ``array`` (the caller's flags stay as they
    are): it reads ``array`` at each compute and Hermes never writes through it."""
    view = array.view(np.ndarray)
    view.flags.writeable = False
    return Tensor(make_node("constant", (), view.shape, view.dtype, value=view,
                            **{BORROWED: True}))


def asarray(obj: Any, dtype: object = None, *, device: DeviceLike = None,
            copy: bool | None = None) -> Tensor:
    """A tensor from a Tensor, NumPy array, nested sequence or Python scalar.

    ``copy`` follows the array API standard. ``True``: the tensor holds a copy (a snapshot:
    later writes to ``obj`` are not seen). ``None`` (the default): a NumPy array is copied
    only when needed (a dtype change, not C-contiguous, non-native byte order); otherwise
    the tensor holds a read-only view of it, like ``dask.array.from_array``. Such a tensor
    reads the array when it is computed, so a write to the array before a compute is seen
    by that compute and no result computed from the old contents is reused; a result
    already computed (``t.compute()``, ``t.numpy()``) is a snapshot and does not change.
    Hermes never writes into the array. ``False``: never copy; ``ValueError`` when a copy
    is needed (also for Python sequences and scalars, which are always copied).

    On a ``dask.distributed`` cluster, ``obj`` may be a ``distributed.Future`` of an array:
    the tensor reads it on the worker that holds it (its shape and dtype are asked of that
    worker now; the data never comes to this process unless the tensor is read here, e.g.
    ``numpy()``). A ``dask.array.Array`` is computed: with a Client active, on the cluster into
    one array held on a worker (``client.compute``), read there as a Future is; without one,
    here, into host memory. Both are values already made, so ``copy`` changes nothing.

    ``device`` pins the tensor to a Hermes device (an id such as ``"opencl:0"`` or a
    ``hm.Device``); a tensor already on another device is moved there, which ``copy=False``
    refuses.

    >>> import hermes_nb as hm
    >>> hm.asarray([[1, 2], [3, 4]]).dtype.name
    'int64'
    >>> hm.asarray([1.0, 2.0], device="cpu:0").device
    'cpu:0'
    """
    copy = _copy_flag(copy)
    wanted = device_id(device, "asarray")
    if wanted is not None:
        with on_device(wanted, "asarray"):
            tensor = asarray(obj, dtype, copy=copy)
        return _moved_to(tensor, wanted, copy)
    obj = from_cluster(obj)
    if isinstance(obj, Tensor):
        return _tensor_as(obj, dtype, copy)
    want = None if dtype is None else dtypes.as_dtype(dtype, op="asarray")
    if isinstance(obj, np.ndarray):
        return _array_as(obj, want, copy)
    if isinstance(obj, (bool, int, float, complex, np.generic)):
        check_representable(np.asarray(obj), "asarray")
        default = dtypes.result_type(obj) if not isinstance(obj, np.generic) else obj.dtype
        array = np.asarray(obj, dtype=want or default)
    elif isinstance(obj, (list, tuple)):
        array = _from_sequence(obj, want)
    elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_producer(obj, want, copy)
    elif hasattr(obj, "__array__"):
        return _array_as(np.asarray(obj), want, copy)
    else:
        kind = "expected a Tensor, an array (NumPy, PyTorch, JAX, CuPy, ...), a nested " \
            "list or tuple of numbers, or a number"
        raise TypeError(f"asarray: cannot make a tensor from {_short(obj)} "
                        f"({type(obj).__name__}): {kind}")
    if copy is False:
        _refuse_copy(f"a Python {type(obj).__name__}", "it is always copied into a new array")
    return from_numpy(np.asarray(array), op="asarray")


def _copy_flag(copy: object, op: str = "asarray") -> bool | None:
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise TypeError(f"{op}: copy must be True, False or None, got {copy!r}")
    return None if copy is None else bool(copy)


def from_dlpack(x: Any, /, *, device: DeviceLike = None, copy: bool | None = None) -> Tensor:
    """A tensor of ``x``'s data, read through DLPack (``x.__dlpack__``): a NumPy, PyTorch,
    JAX or CuPy array, or anything else that exports DLPack.

    Host data (``x.__dlpack_device__()`` is the CPU) is read in place, like a NumPy array
    given to :func:`asarray`: no copy, a read-only view read at each compute (Hermes never
    writes into it). CUDA data becomes a tensor computed on ``cuda:N`` holding ``x``'s device
    memory, with no trip through the host; the producer orders its pending work before the
    stream Hermes runs on. ``copy=True`` takes a snapshot; ``copy=False`` raises
    ``ValueError`` where a copy is needed (strided data, a change of device); ``device``
    pins the tensor to a Hermes device. The libraries are never imported by Hermes.

    >>> import numpy as np, hermes_nb as hm
    >>> a = np.arange(4.0)
    >>> t = hm.from_dlpack(a)
    >>> (t * 2).numpy().tolist()
    [0.0, 2.0, 4.0, 6.0]
    >>> np.from_dlpack(t.compute()).flags.writeable  # a tensor is exported read-only
    False
    """
    copy = _copy_flag(copy, "from_dlpack")
    if not isinstance(x, Tensor) and not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not export DLPack "
                        "(it has no __dlpack__); hm.asarray reads NumPy-like arrays")
    wanted = device_id(device, "from_dlpack")
    with on_device(device, "from_dlpack"):
        tensor = x if isinstance(x, Tensor) else _from_producer(x, None, copy)
    return _moved_to(tensor, wanted, copy)


def _from_producer(obj: Any, want: np.dtype | None, copy: bool | None) -> Tensor:
    """A tensor from a DLPack producer (PyTorch, JAX, CuPy, ...): in place where it can be."""
    if dlpack.producer_device(obj)[0] == dlpack.DLDeviceType.CUDA:
        return _tensor_as(dlpack.cuda_tensor(obj, copy), want, copy)
    return _array_as(dlpack.host_array(obj), want, copy)


def _moved_to(tensor: Tensor, wanted: str | None, copy: bool | None) -> Tensor:
    """``tensor`` on the device ``wanted`` (None: where it is), moved there if it is
    elsewhere, which ``copy=False`` refuses."""
    if wanted is None or tensor.device == wanted:
        return tensor
    if copy is False:
        _refuse_copy(f"a tensor on {tensor.device}", f"moving it to {wanted}")
    return tensor.to(wanted)


def _refuse_copy(what: str, why: str) -> None:
    raise ValueError(f"asarray: copy=False, but {what} cannot be used without a copy: {why}; "
                     "pass copy=None to copy only when needed")


def _tensor_as(tensor: Tensor, dtype: object, copy: bool | None) -> Tensor:
    """A tensor's value never changes, so ``copy=True`` needs no data copy, only a new
    Tensor object (``x[key] = value`` rebinds the object it is applied to, which must not
    reach the original); a dtype change makes a new tensor, which ``copy=False`` refuses."""
    if dtype is None:
        return Tensor(tensor.node) if copy else tensor
    if copy is False:
        want = dtypes.as_dtype(dtype, op="asarray")
        if want != tensor.dtype:
            _refuse_copy(f"a {tensor.dtype.name} tensor", f"converting it to {want.name}")
    return tensor.astype(dtype)


def _array_as(array: np.ndarray, want: np.dtype | None, copy: bool | None) -> Tensor:
    check_representable(array, "asarray")
    target = want if want is not None else dtypes.as_dtype(array.dtype, op="asarray")
    why = _why_copy_needed(array, target)
    if copy is False and why is not None:
        _refuse_copy(f"the {array.dtype.name} array of shape {array.shape}", why)
    if copy or why is not None:
        return _copied_constant(array, target)
    return _borrowed_constant(array)


def _why_copy_needed(array: np.ndarray, target: np.dtype) -> str | None:
    """Why ``array`` cannot be read in place as a C-contiguous ``target`` array, or None."""
    if array.dtype != target:
        if array.dtype.newbyteorder("=") == target:
            return f"its dtype {array.dtype.str!r} is not in native byte order"
        return f"converting its dtype {array.dtype.name} to {target.name}"
    if not array.flags.c_contiguous:
        return "it is not C-contiguous (e.g. a transposed or strided view)"
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _from_sequence(obj: list | tuple, want: np.dtype | None) -> np.ndarray:
    try:
        array = np.asarray(obj)
    except ValueError as exc:  # NumPy refuses ragged nesting
        raise ValueError(
            f"asarray: cannot make a tensor from the ragged sequence {_short(obj)}: every "
            "nested list must have the same length at each level") from exc
    check_representable(array, "asarray", obj)
    if want is not None:
        return np.asarray(obj, dtype=want)
    if array.dtype == np.float64 and array.size and _all_ints(obj):
        return array.astype(np.int64)
    return array


def check_representable(array: np.ndarray, op: str, shown: Any = None, name: str = "input"
                        ) -> None:
    """Refuse, with ``TypeError`` naming ``op`` and the argument ``name``, what a tensor would
    silently change: a mask, or elements that are not numbers."""
    if not isinstance(array, np.ma.MaskedArray) and array.dtype.kind in "biufc":
        return  # the common case: no preview to build (repr of a large array costs ~0.1 ms)
    what = _short(array if shown is None else shown)
    if isinstance(array, np.ma.MaskedArray):
        raise TypeError(
            f"{op}: {name} is a masked array, which is not supported (the mask would be lost): "
            f"{what}. Fill the masked elements first, e.g. a.filled(0)")
    if array.dtype.kind not in "biufc":
        raise TypeError(
            f"{op}: {name} must hold bools, ints, floats or complex numbers, got dtype "
            f"{array.dtype} ({what}); supported dtypes: {dtypes.SUPPORTED_NAMES}")


def _all_ints(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return all(_all_ints(o) for o in obj)
    return isinstance(obj, int)


def full(shape: ShapeLike, fill_value: bool | int | float | complex, dtype: object = None, *,
         device: DeviceLike = None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``, pinned to ``device`` if given."""
    with on_device(device, "full"):
        return _full(shape, fill_value, dtype, "full")


def _full(shape: ShapeLike, fill_value: bool | int | float | complex, dtype: object, op: str
          ) -> Tensor:
    dims = normalize_shape(shape, op)
    if not isinstance(fill_value, (bool, int, float, complex, np.number, np.bool_)):
        raise TypeError(f"{op}: fill_value must be a Python scalar, got {type(fill_value).__name__}")
    dt = dtypes.as_dtype(dtype, op=op) if dtype is not None else dtypes.result_type(
        fill_value.item() if isinstance(fill_value, np.generic) else fill_value
    )
    value = _fill_value(fill_value, dt)
    return Tensor(make_node("full", (), dims, dt, fill_value=value))


def _fill_value(fill_value: bool | int | float | complex | np.generic, dt: np.dtype
                ) -> bool | int | float | complex:
    """``fill_value`` in ``dt``; like NumPy, an integer out of ``dt``'s range raises
    ``OverflowError`` (as does a float that no integer of ``dt`` can hold)."""
    plain = fill_value.item() if isinstance(fill_value, np.generic) else fill_value
    if isinstance(plain, complex) and not dtypes.is_complex(dt):
        raise TypeError(f"full: fill_value {plain!r} is complex, but dtype is {dt.name}; "
                        "use complex64 or complex128 (or pass fill_value.real)")
    if dtypes.is_integer(dt) and not isinstance(plain, bool):
        info = np.iinfo(dt)
        if isinstance(plain, float) and not math.isfinite(plain):
            raise ValueError(f"full: fill_value {plain!r} cannot be stored in {dt.name}; "
                             "use a float dtype for nan or inf")
        if not info.min <= plain <= info.max:
            raise OverflowError(
                f"full: fill_value {plain!r} is out of bounds for {dt.name} "
                f"({info.min} to {info.max})")
    return np.asarray(plain).astype(dt).item()


def zeros(shape: ShapeLike, dtype: object = None, *, device: DeviceLike = None) -> Tensor:
    """A tensor of zeros (float64 by default), pinned to ``device`` if given."""
    with on_device(device, "zeros"):
        return _full(shape, 0, dtype if dtype is not None else dtypes.float64, "zeros")


def ones(shape: ShapeLike, dtype: object = None, *, device: DeviceLike = None) -> Tensor:
    """A tensor of ones (float64 by default), pinned to ``device`` if given."""
    with on_device(device, "ones"):
        return _full(shape, 1, dtype if dtype is not None else dtypes.float64, "ones")


def arange(
    start: int | float, stop: int | float | None = None, step: int | float = 1, dtype: object = None,
    *, device: DeviceLike = None,
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``, like ``numpy.arange``, pinned to ``device``
    if given."""
    with on_device(device, "arange"):
        return _arange(start, stop, step, dtype)


def _arange(start: int | float, stop: int | float | None, step: int | float, dtype: object
            ) -> Tensor:
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
            raise TypeError(f"arange: {name} must be a real number, got {v!r}")
        if not math.isfinite(v):
            raise ValueError(f"arange: {name} must be a finite number, got {v!r}")
    dt = (
        dtypes.as_dtype(dtype, op="arange")
        if dtype is not None
        else np.result_type(np.asarray(start), np.asarray(stop), np.asarray(step))
    )
    dt = dtypes.as_dtype(dt, op="arange")
    length = max(0, math.ceil((stop - start) / step))
    return Tensor(make_node("arange", (), (length,), dt, start=start, step=step))
