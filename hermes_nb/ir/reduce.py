"""Every reduction's meaning, declared once: what a fold starts from, what it accumulates
in, how NaN behaves and which NumPy function it must agree with.

Code generators (``codegen.c_fused`` for OpenCL and CUDA, ``codegen.numba_reduce``,
``codegen.opencl_templates``) take identities and accumulation dtypes from here and keep
only how their language spells a combine. Dtypes are named as in ``ir.dtypes``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["REDUCES", "ReduceDef", "reduce_def"]

Value = bool | int | float


@dataclass(frozen=True)
class ReduceDef:
    """One reduction op.

    ``order`` is the comparison under which a value wins (``">"`` for max/argmax,
    ``"<"`` for min/argmin, None for arithmetic folds). ``nan_wins``: a NaN seen is the
    result, as in NumPy; comparisons are false on NaN, so the combine tests for it
    (sums and products carry NaN by arithmetic). ``widens_float32``: float32 accumulates
    in float64 where the device has it, rounded once at the end (as accurate as NumPy's
    pairwise summation at any length). ``promotes_ints``: bool and signed integer inputs
    give int64, unsigned ones uint64 (NumPy's and the array API's default integers).
    """

    name: str
    numpy: Callable[..., Any]
    is_arg: bool = False
    order: str | None = None
    nan_wins: bool = False
    widens_float32: bool = False
    promotes_ints: bool = False
    start: Callable[[str], Value] | None = None  # dtype -> identity; None: no identity

    def identity(self, dtype: str) -> Value | None:
        """The value every fold over ``dtype`` starts from (exact in ``dtype``): None for
        arg reductions, which have none (NumPy raises on an empty input; kernels mark
        "no element yet" with index -1)."""
        return self.start(dtype) if self.start is not None else None

    def work_dtype(self, dtype: str, fp64: bool = True) -> str:
        """The accumulator's dtype for a reduction to ``dtype`` (``fp64``: whether the
        device has float64)."""
        return "float64" if self.widens_float32 and fp64 and dtype == "float32" else dtype

    def result_dtype(self, dtype: np.dtype) -> np.dtype:
        """NumPy's result dtype for an input of ``dtype`` (indices are int64)."""
        if self.is_arg or (self.promotes_ints and dtype.kind in "bi"):
            return np.dtype(np.int64)
        if self.promotes_ints and dtype.kind == "u":
            return np.dtype(np.uint64)
        return dtype


def _zero(dtype: str) -> Value:
    return False if dtype == "bool" else 0


def _one(dtype: str) -> Value:
    return True if dtype == "bool" else 1


def _lowest(dtype: str) -> Value:
    if dtype == "bool":
        return False
    return float("-inf") if dtype.startswith("float") else int(np.iinfo(dtype).min)


def _highest(dtype: str) -> Value:
    if dtype == "bool":
        return True
    return float("inf") if dtype.startswith("float") else int(np.iinfo(dtype).max)


REDUCES: dict[str, ReduceDef] = {d.name: d for d in (
    ReduceDef("sum", np.sum, start=_zero, widens_float32=True, promotes_ints=True),
    ReduceDef("prod", np.prod, start=_one, promotes_ints=True),
    ReduceDef("max", np.max, order=">", nan_wins=True, start=_lowest),
    ReduceDef("min", np.min, order="<", nan_wins=True, start=_highest),
    ReduceDef("argmax", np.argmax, is_arg=True, order=">", nan_wins=True),
    ReduceDef("argmin", np.argmin, is_arg=True, order="<", nan_wins=True),
)}


def reduce_def(op: str) -> ReduceDef:
    """The declaration of reduction ``op`` (KeyError naming the known ones otherwise)."""
    try:
        return REDUCES[op]
    except KeyError:
        raise KeyError(f"{op!r} is not a reduction; known: {', '.join(REDUCES)}") from None
