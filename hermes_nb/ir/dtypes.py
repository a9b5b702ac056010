"""The dtypes Hermes supports and how they combine.

Promotion follows NumPy 2 (NEP 50), which agrees with the Python array API
standard wherever the standard specifies a result: Python scalars are "weak"
and take the tensor's dtype when their kind allows it.
"""

from __future__ import annotations

import numpy as np

bool_ = np.dtype(np.bool_)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)

SUPPORTED = (bool_, int32, int64, float32, float64)
SUPPORTED_NAMES = ", ".join(d.name for d in SUPPORTED)

_ALIASES = {"bool": bool_, "int32": int32, "int64": int64, "float32": float32, "float64": float64}


def as_dtype(dtype: object, *, op: str = "asarray") -> np.dtype:
    """Return the NumPy dtype (native byte order) for ``dtype`` or raise ``TypeError`` naming
    the allowed ones."""
    if isinstance(dtype, str) and dtype in _ALIASES:
        return _ALIASES[dtype]
    try:
        resolved = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError as exc:
        raise TypeError(f"{op}: unknown dtype {dtype!r}; supported: {SUPPORTED_NAMES}") from exc
    if not resolved.isnative:  # e.g. big-endian ">f4": the same dtype in native byte order
        resolved = resolved.newbyteorder("=")
    if resolved not in SUPPORTED:
        raise TypeError(f"{op}: unsupported dtype {resolved.name}; supported: {SUPPORTED_NAMES}")
    return resolved


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def is_bool(dtype: np.dtype) -> bool:
    return dtype.kind == "b"


def result_type(*operands: np.dtype | bool | int | float) -> np.dtype:
    """The dtype an elementwise op computes in, from dtypes and Python scalars."""
    dtypes = [o for o in operands if isinstance(o, np.dtype)]
    scalars = [o for o in operands if not isinstance(o, np.dtype)]
    if not dtypes:  # only Python scalars: default dtypes of the array API
        dtypes = [_default_for_scalar(s) for s in scalars]
        scalars = []
    # NumPy 2 treats Python scalars as weak; give it the types, not the values,
    # so that a large int never turns into an object dtype.
    weak = [type(s)(0) if not isinstance(s, bool) else False for s in scalars]
    return np.result_type(*dtypes, *weak)


def float_result(dtype: np.dtype) -> np.dtype:
    """The floating dtype a transcendental function returns for ``dtype`` (NumPy's rule)."""
    return dtype if is_float(dtype) else float64


def _default_for_scalar(value: bool | int | float) -> np.dtype:
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return float64
