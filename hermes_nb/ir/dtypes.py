"""The dtypes Hermes supports and how they combine.

Promotion follows NumPy 2 (NEP 50), which agrees with the Python array API
standard wherever the standard specifies a result: Python scalars are "weak"
and take the tensor's dtype when their kind allows it.
"""

from __future__ import annotations

import numpy as np

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

#: every dtype Hermes supports, one row each; the other tables derive from these
SIGNED = (int8, int16, int32, int64)
UNSIGNED = (uint8, uint16, uint32, uint64)
INTEGERS = SIGNED + UNSIGNED
FLOATS = (float32, float64)
COMPLEX = (complex64, complex128)
SUPPORTED = (bool_, *INTEGERS, *FLOATS, *COMPLEX)
#: their names ("bool", "int8", ..., "complex128"), as the code generators' tables key them
NAMES = tuple(d.name for d in SUPPORTED)
INTEGER_NAMES = tuple(d.name for d in INTEGERS)
FLOAT_NAMES = tuple(d.name for d in FLOATS)
COMPLEX_NAMES = tuple(d.name for d in COMPLEX)
SUPPORTED_NAMES = ", ".join(NAMES)
REAL_NAMES = ", ".join(d.name for d in SUPPORTED if d.kind != "c")

_ALIASES = dict(zip(NAMES, SUPPORTED))


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


def is_unsigned(dtype: np.dtype) -> bool:
    return dtype.kind == "u"


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    """Real or complex floating point."""
    return dtype.kind in "fc"


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a complex dtype's components (complex64: float32); others unchanged."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def refuse_complex(op: str, dtype: np.dtype, *, ordered: bool = True,
                   allowed: str = REAL_NAMES) -> None:
    """``TypeError`` naming ``op`` for a complex ``dtype`` where the array API leaves the op
    undefined: ``ordered`` ops (comparisons, rounding, max/min, sort) because complex numbers
    have no order, others because they are real functions."""
    if not is_complex(dtype):
        return
    why = ("complex dtypes have no order" if ordered else
           "complex dtypes are not supported (it is a function of real numbers)")
    hint = "; compare abs(x), real(x) or imag(x) instead" if ordered else \
        "; apply it to real(x) and imag(x) instead"
    raise TypeError(f"{op}: {why}; {op} is defined for {allowed}, got {dtype.name}{hint}")


def result_type(*operands: np.dtype | bool | int | float | complex) -> np.dtype:
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
    """The floating dtype a transcendental function returns for ``dtype``: itself for real and
    complex floats; NumPy's rule for 32- and 64-bit integers (float64), and float64 for the
    narrower ones too, where NumPy gives float16/float32 (the standard leaves integer inputs
    to the library)."""
    return dtype if is_inexact(dtype) else float64


def _default_for_scalar(value: bool | int | float | complex) -> np.dtype:
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return complex128 if isinstance(value, complex) else float64
