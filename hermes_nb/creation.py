"""Tensors from host data and from fill rules (zeros, ones, full, arange)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb import dtypes
from hermes_nb.graph import make_node
from hermes_nb.tensor import Tensor

ShapeLike = int | Sequence[int]


def normalize_shape(shape: ShapeLike, op: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise TypeError(f"{op}: shape entries must be ints, got {shape!r}")
        if d < 0:
            raise ValueError(f"{op}: negative dimension in shape {tuple(dims)}")
    return tuple(int(d) for d in dims)


def from_numpy(array: np.ndarray) -> Tensor:
    """A constant tensor holding a copy of ``array``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    dtype = dtypes.as_dtype(array.dtype, op="from_numpy")
    value = np.array(array, dtype=dtype, order="C", copy=True)
    value.flags.writeable = False
    return Tensor(make_node("constant", (), value.shape, dtype, value=value))


def asarray(obj: Any, dtype: object = None) -> Tensor:
    """A tensor from a Tensor, NumPy array, nested sequence or Python scalar.

    >>> import hermes_nb as hm
    >>> hm.asarray([[1, 2], [3, 4]]).dtype.name
    'int64'
    """
    if isinstance(obj, Tensor):
        return obj if dtype is None else obj.astype(dtype)
    want = None if dtype is None else dtypes.as_dtype(dtype, op="asarray")
    if isinstance(obj, np.ndarray):
        array = obj if want is None else obj.astype(want)
    elif isinstance(obj, (bool, int, float, np.generic)):
        default = dtypes.result_type(obj) if not isinstance(obj, np.generic) else obj.dtype
        array = np.asarray(obj, dtype=want or default)
    elif isinstance(obj, (list, tuple)):
        array = np.asarray(obj, dtype=want)
        if want is None and array.dtype == np.float64 and array.size and _all_ints(obj):
            array = array.astype(np.int64)
    else:
        raise TypeError(f"asarray: cannot make a tensor from {type(obj).__name__}")
    return from_numpy(np.asarray(array))


def _all_ints(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return all(_all_ints(o) for o in obj)
    return isinstance(obj, int)


def full(shape: ShapeLike, fill_value: bool | int | float, dtype: object = None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``."""
    dims = normalize_shape(shape, "full")
    if not isinstance(fill_value, (bool, int, float, np.number, np.bool_)):
        raise TypeError(f"full: fill_value must be a Python scalar, got {type(fill_value).__name__}")
    dt = dtypes.as_dtype(dtype, op="full") if dtype is not None else dtypes.result_type(
        fill_value.item() if isinstance(fill_value, np.generic) else fill_value
    )
    value = np.asarray(fill_value).astype(dt).item()
    return Tensor(make_node("full", (), dims, dt, fill_value=value))


def zeros(shape: ShapeLike, dtype: object = None) -> Tensor:
    return full(shape, 0, dtype=dtype if dtype is not None else dtypes.float64)


def ones(shape: ShapeLike, dtype: object = None) -> Tensor:
    return full(shape, 1, dtype=dtype if dtype is not None else dtypes.float64)


def arange(
    start: int | float, stop: int | float | None = None, step: int | float = 1, dtype: object = None
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``, like ``numpy.arange``."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, (int, float, np.number)) or isinstance(v, bool):
            raise TypeError(f"arange: {name} must be a real number, got {v!r}")
    dt = (
        dtypes.as_dtype(dtype, op="arange")
        if dtype is not None
        else np.result_type(np.asarray(start), np.asarray(stop), np.asarray(step))
    )
    dt = dtypes.as_dtype(dt, op="arange")
    length = max(0, math.ceil((stop - start) / step))
    return Tensor(make_node("arange", (), (length,), dt, start=start, step=step))
