"""The array API's creation functions built from the fill and ``arange`` sources:
``empty``, the ``*_like`` family, ``eye``, ``linspace``, ``meshgrid``, ``tril``, ``triu``.

Each is a composition of existing ops (``full``, ``arange``, comparisons, ``where``,
reshape and broadcast), so it stays lazy and fuses on every device."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hermes_nb.api.creation import ShapeLike, _full, arange, full
from hermes_nb.api.elementwise import _as_tensor, astype, equal, greater_equal, less_equal, where
from hermes_nb.api.manipulation import broadcast_to, reshape
from hermes_nb.api.namespace_info import DeviceLike, on_device
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer

Scalar = bool | int | float


def empty(shape: ShapeLike, *, dtype: object = None, device: DeviceLike = None) -> Tensor:
    """A tensor of ``shape`` whose values are not specified by the standard; Hermes fills
    it with zeros (float64 by default), so it costs what ``zeros`` costs.

    >>> import hermes_nb as hm
    >>> hm.empty((2, 3)).shape
    (2, 3)
    """
    with on_device(device, "empty"):
        return _full(shape, 0, dtype if dtype is not None else dtypes.float64, "empty")


def _like(op: str, x: Any, fill_value: Scalar, dtype: object, device: DeviceLike) -> Tensor:
    t = _as_tensor(x, op)
    dt = t.dtype if dtype is None else dtypes.as_dtype(dtype, op=op)
    with on_device(t.device if device is None else device, op):
        return _full(t.shape, fill_value, dt, op)


def empty_like(x: Any, /, *, dtype: object = None, device: DeviceLike = None) -> Tensor:
    """A tensor of ``x``'s shape, dtype (unless ``dtype``) and device (unless ``device``);
    Hermes fills it with zeros."""
    return _like("empty_like", x, 0, dtype, device)


def zeros_like(x: Any, /, *, dtype: object = None, device: DeviceLike = None) -> Tensor:
    """Zeros of ``x``'s shape, dtype (unless ``dtype``) and device (unless ``device``).

    >>> import hermes_nb as hm
    >>> hm.zeros_like(hm.arange(3)).numpy().tolist()
    [0, 0, 0]
    """
    return _like("zeros_like", x, 0, dtype, device)


def ones_like(x: Any, /, *, dtype: object = None, device: DeviceLike = None) -> Tensor:
    """Ones of ``x``'s shape, dtype (unless ``dtype``) and device (unless ``device``)."""
    return _like("ones_like", x, 1, dtype, device)


def full_like(x: Any, /, fill_value: Scalar, *, dtype: object = None,
              device: DeviceLike = None) -> Tensor:
    """``fill_value`` in ``x``'s shape, dtype (unless ``dtype``) and device (unless
    ``device``). A float ``fill_value`` for an integer dtype is truncated, as in NumPy (the
    standard leaves it unspecified); one out of the dtype's range is an ``OverflowError``.

    >>> import hermes_nb as hm
    >>> hm.full_like(hm.zeros(2, dtype="float32"), 7).numpy().tolist()
    [7.0, 7.0]
    """
    return _like("full_like", x, fill_value, dtype, device)


def _count(op: str, name: str, value: Any) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an int, got {value!r}")
    if value < 0:
        raise ValueError(f"{op}: {name} must not be negative, got {value}")
    return int(value)


def _offsets(rows: int, cols: int) -> Tensor:
    """``col - row`` for every element of a ``rows`` x ``cols`` matrix (int64)."""
    col = reshape(arange(cols, dtype=dtypes.int64), (1, cols))
    row = reshape(arange(rows, dtype=dtypes.int64), (rows, 1))
    return col - row


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: object = None,
        device: DeviceLike = None) -> Tensor:
    """A ``n_rows`` x ``n_cols`` matrix with ones on diagonal ``k`` (above the main one for
    ``k > 0``) and zeros elsewhere; float64 by default.

    >>> import hermes_nb as hm
    >>> hm.eye(2, 3, k=1, dtype="int32").numpy().tolist()
    [[0, 1, 0], [0, 0, 1]]
    """
    rows = _count("eye", "n_rows", n_rows)
    cols = rows if n_cols is None else _count("eye", "n_cols", n_cols)
    _int("eye", "k", k)
    dt = dtypes.float64 if dtype is None else dtypes.as_dtype(dtype, op="eye")
    with on_device(device, "eye"):
        return astype(equal(_offsets(rows, cols), int(k)), dt)


def _int(op: str, name: str, value: Any) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an int, got {value!r}")


def _triangle(op: str, x: Any, k: int, keep_below: bool) -> Tensor:
    t = _as_tensor(x, op)
    _int(op, "k", k)
    if t.ndim < 2:
        raise ValueError(f"{op}: x must have at least 2 dimensions, got shape {infer.fmt(t.shape)}")
    offsets = _offsets(*t.shape[-2:])
    keep = less_equal(offsets, int(k)) if keep_below else greater_equal(offsets, int(k))
    return where(keep, t, full((), 0, t.dtype))


def tril(x: Any, /, *, k: int = 0) -> Tensor:
    """``x`` (a matrix or a stack of them) with the elements above diagonal ``k`` zeroed.

    >>> import hermes_nb as hm
    >>> hm.tril(hm.ones((2, 2), dtype="int32")).numpy().tolist()
    [[1, 0], [1, 1]]
    """
    return _triangle("tril", x, k, keep_below=True)


def triu(x: Any, /, *, k: int = 0) -> Tensor:
    """``x`` (a matrix or a stack of them) with the elements below diagonal ``k`` zeroed.

    >>> import hermes_nb as hm
    >>> hm.triu(hm.ones((2, 2), dtype="int32")).numpy().tolist()
    [[1, 1], [0, 1]]
    """
    return _triangle("triu", x, k, keep_below=False)


def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: object = None, device: DeviceLike = None, endpoint: bool = True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``),
    computed in ``dtype`` (a floating dtype: float64 by default, complex128 when ``start``
    or ``stop`` is complex). The last value is ``stop`` exactly, as in NumPy.

    >>> import hermes_nb as hm
    >>> hm.linspace(0, 1, 5).numpy().tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> hm.linspace(0, 2j, 3).numpy().tolist()
    [0j, 1j, 2j]
    """
    for name, v in (("start", start), ("stop", stop)):
        if not isinstance(v, (int, float, complex, np.number)) or isinstance(v, bool):
            raise TypeError(f"linspace: {name} must be a number, got {v!r}")
    n = _count("linspace", "num", num)
    given_complex = any(isinstance(v, (complex, np.complexfloating)) for v in (start, stop))
    default = dtypes.complex128 if given_complex else dtypes.float64
    dt = default if dtype is None else dtypes.as_dtype(dtype, op="linspace")
    if not dtypes.is_inexact(dt):
        raise TypeError(f"linspace: dtype {dt.name} is not a floating-point dtype; allowed: "
                        "float32, float64, complex64, complex128")
    if given_complex and not dtypes.is_complex(dt):
        raise TypeError(f"linspace: dtype {dt.name} cannot hold the complex start or stop "
                        f"({start!r}, {stop!r}); allowed: complex64, complex128")
    if not isinstance(endpoint, (bool, np.bool_)):
        raise TypeError(f"linspace: endpoint must be True or False, got {endpoint!r}")
    a, b = (complex(start), complex(stop)) if dtypes.is_complex(dt) else (float(start),
                                                                          float(stop))
    div = (n - 1) if endpoint else n
    step = (b - a) / div if div > 0 else math.nan
    with on_device(device, "linspace"):
        index = arange(n, dtype=dt)
        values = index * step + a if div > 0 else index * 0.0 + a
        if endpoint and n > 1:
            values = where(equal(index, float(n - 1)), b, values)
        return values


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids from 1-D tensors: ``indexing="xy"`` (Cartesian: the first two
    output axes swapped) or ``"ij"`` (matrix). Each output keeps its input's dtype, as in
    NumPy (the standard asks for one common dtype).

    >>> import hermes_nb as hm
    >>> x, y = hm.meshgrid(hm.arange(3), hm.arange(2))
    >>> x.shape, y.numpy().tolist()
    ((2, 3), [[0, 0, 0], [1, 1, 1]])
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    ts = [_as_tensor(a, "meshgrid") for a in arrays]
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise ValueError(f"meshgrid: every array must be 1-D, array {i} has shape "
                             f"{infer.fmt(t.shape)}")
    shape = [t.shape[0] for t in ts]
    if indexing == "xy" and len(ts) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, t in enumerate(ts):
        at = {0: 1, 1: 0}.get(i, i) if indexing == "xy" and len(ts) > 1 else i
        lined = reshape(t, tuple(s if j == at else 1 for j, s in enumerate(shape)))
        out.append(broadcast_to(lined, tuple(shape)))
    return out
