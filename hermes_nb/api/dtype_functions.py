"""The array API's data type functions: ``can_cast``, ``finfo``, ``iinfo``, ``isdtype``,
``result_type``, for Hermes' dtypes (``ir.dtypes.SUPPORTED``: bool, the signed and
unsigned integers of 8 to 64 bits, float32, float64, complex64, complex128)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.api.namespace_info import kinds
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes

DtypeLike = np.dtype | str | type


def _dtype(value: Any, op: str, name: str, *, arrays: bool = True) -> np.dtype:
    """The Hermes dtype of ``value`` (a dtype, a dtype name, or a Tensor when ``arrays``)."""
    if arrays and isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (bool, int, float, complex, Tensor)) or value is None:
        what = "a dtype or a Tensor" if arrays else "a dtype"
        raise TypeError(f"{op}: {name} must be {what}, got {value!r} "
                        f"({type(value).__name__})")
    try:
        return dtypes.as_dtype(value, op=op)
    except TypeError as exc:
        raise TypeError(f"{op}: {name}={value!r} is not a Hermes dtype; supported: "
                        f"{dtypes.SUPPORTED_NAMES}") from exc


def isdtype(dtype: DtypeLike, kind: str | DtypeLike | tuple[str | DtypeLike, ...]) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name (``"bool"``, ``"signed
    integer"``, ``"unsigned integer"``, ``"integral"``, ``"real floating"``, ``"complex
    floating"``, ``"numeric"``) or a tuple of them (any of them).

    >>> import hermes_nb as hm
    >>> hm.isdtype(hm.float32, "real floating"), hm.isdtype(hm.int64, ("bool", hm.float64))
    (True, False)
    """
    dt = _dtype(dtype, "isdtype", "dtype", arrays=False)
    table = kinds()
    options = kind if isinstance(kind, tuple) else (kind,)
    for k in options:
        if isinstance(k, str) and k in table:
            if dt in table[k]:
                return True
        elif isinstance(k, str) and k not in dtypes.SUPPORTED_NAMES.split(", "):
            raise ValueError(f"isdtype: kind {k!r} is not a dtype kind; allowed: "
                             f"{', '.join(map(repr, table))}, a dtype, or a tuple of them")
        elif _dtype(k, "isdtype", "kind", arrays=False) == dt:
            return True
    return False


def result_type(*arrays_and_dtypes: Tensor | DtypeLike | bool | int | float | complex
                ) -> np.dtype:
    """The dtype an elementwise op computes in for these tensors, dtypes and Python scalars.

    Within a kind (bool, integers, floats) this is the standard's promotion. Between kinds,
    where the standard defines no result, Hermes follows NumPy as its operators do
    (``int32`` with ``float32`` gives ``float64``; ``int64`` with ``float32`` gives
    ``float64``; ``uint64`` with a signed integer gives ``float64``). Signed with unsigned
    gives the smallest signed type holding both (``int8`` with ``uint8``: ``int16``). Real
    and complex floats promote as in the standard (``float64`` with ``complex64`` gives
    ``complex128``). Python scalars are weak: they take the other operand's dtype when their
    kind allows it. At least one tensor or dtype is needed.

    >>> import hermes_nb as hm
    >>> hm.result_type(hm.int32, hm.int64).name, hm.result_type(hm.float32, 1.0).name
    ('int64', 'float32')
    >>> hm.result_type(hm.int8, hm.uint8).name, hm.result_type(hm.uint64, hm.int64).name
    ('int16', 'float64')
    >>> hm.result_type(hm.float32, 1j).name
    'complex64'
    """
    named: list[np.dtype] = []
    scalars: list[bool | int | float | complex] = []
    for i, value in enumerate(arrays_and_dtypes):
        if isinstance(value, (bool, int, float, complex)):
            scalars.append(value)
        else:
            named.append(_dtype(value, "result_type", f"argument {i}"))
    if not named:
        raise ValueError("result_type: at least one Tensor or dtype is needed, got "
                         f"{len(arrays_and_dtypes)} Python scalars")
    return dtypes.result_type(*named, *scalars)


def can_cast(from_: Tensor | DtypeLike, to: DtypeLike, /) -> bool:
    """Whether ``from_`` (a dtype or a Tensor) converts to ``to`` by the standard's type
    promotion: within a kind (bool, integers, floats), to a type holding every value (bool
    only to bool; ``uint8`` to ``int16``, not to ``int8``), and from a real floating dtype
    to a complex one at least as precise.

    Between kinds the standard promotes nothing, so this is ``False`` even where NumPy's
    ``can_cast`` says a safe cast exists (``int32`` to ``float64``); ``astype`` performs
    any conversion.

    >>> import hermes_nb as hm
    >>> hm.can_cast(hm.int32, hm.int64), hm.can_cast(hm.float64, hm.float32)
    (True, False)
    >>> hm.can_cast(hm.uint8, hm.int16), hm.can_cast(hm.int8, hm.uint64)
    (True, False)
    """
    source = _dtype(from_, "can_cast", "from_")
    target = _dtype(to, "can_cast", "to", arrays=False)
    if _category(source) != _category(target) and (source.kind, target.kind) != ("f", "c"):
        return False
    return bool(np.can_cast(source, target, casting="safe"))


def _category(dtype: np.dtype) -> str:
    """The standard's kind of ``dtype`` for promotion: signed and unsigned integers are one."""
    return "i" if dtype.kind == "u" else dtype.kind


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating-point dtype, as Python floats."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:
    """Limits of an integer dtype, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type: DtypeLike | Tensor, /) -> finfo_object:
    """Machine limits of a floating-point dtype (or of a Tensor's dtype); for a complex
    dtype, those of its real components (the standard's rule: ``dtype`` is float32 for
    complex64).

    >>> import hermes_nb as hm
    >>> hm.finfo(hm.float32).bits, hm.finfo(hm.float64).eps == 2.0 ** -52
    (32, True)
    >>> hm.finfo(hm.complex64).dtype.name
    'float32'
    """
    dt = _dtype(type, "finfo", "type")
    if not dtypes.is_inexact(dt):
        raise ValueError(f"finfo: type {dt.name} is not a floating-point dtype; allowed: "
                         "float32, float64, complex64, complex128 (use iinfo for integers)")
    dt = dtypes.real_dtype(dt)
    info = np.finfo(dt)
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min),
                        float(info.smallest_normal), dt)


def iinfo(type: DtypeLike | Tensor, /) -> iinfo_object:
    """Limits of an integer dtype (or of a Tensor's dtype).

    >>> import hermes_nb as hm
    >>> hm.iinfo(hm.int32).max, hm.iinfo(hm.uint8).max
    (2147483647, 255)
    """
    dt = _dtype(type, "iinfo", "type")
    if not dtypes.is_integer(dt):
        raise ValueError(f"iinfo: type {dt.name} is not an integer dtype; allowed: "
                         f"{', '.join(dtypes.INTEGER_NAMES)} (use finfo for floats)")
    info = np.iinfo(dt)
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dt)
