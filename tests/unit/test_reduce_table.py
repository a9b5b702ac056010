"""Every reduction op is declared in ``ir.reduce`` and spelled by each code generator, and
its declared identity is NumPy's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hermes_nb.codegen.c_combine import C_COMBINE, c_combine
from hermes_nb.compiler.fuse_reduce import FUSABLE_REDUCTIONS
from hermes_nb.ir.dtypes import SUPPORTED
from hermes_nb.ir.ops import OPS, REDUCTIONS, Kind
from hermes_nb.ir.reduce import REDUCES

DTYPES = [d.name for d in SUPPORTED]
# max/min have no complex form: complex numbers have no order (the tensor layer refuses them)
ORDERED_DTYPES = [d for d in DTYPES if not d.startswith("complex")]


def _kind(op: str) -> Kind:
    entry = OPS[op]
    return entry.kind if hasattr(entry, "kind") else entry[0]


def _reductions() -> list[str]:
    return sorted(op for op in OPS if _kind(op) is Kind.REDUCE)


def _numba_table() -> dict[str, tuple[str, str, str]]:
    numba_reduce = pytest.importorskip("hermes_nb.codegen.numba_reduce")
    return numba_reduce.NUMBA_COMBINE


def test_every_reduction_is_declared_and_spelled() -> None:
    ops = _reductions()
    assert set(ops) == set(REDUCTIONS)
    assert set(ops) <= set(REDUCES), "a reduction without a ReduceDef"
    assert set(ops) <= set(C_COMBINE), "a reduction without a C-style combine"
    # arg reductions never reach fused_reduce, the only Numba reduction generator
    assert {op for op in ops if not REDUCES[op].is_arg} == FUSABLE_REDUCTIONS
    assert set(_numba_table()) >= FUSABLE_REDUCTIONS, "a reduction without a Numba combine"
    assert set(REDUCES) <= set(ops), "a ReduceDef for an op that ir.ops does not know"


def _values(dtype: str) -> np.ndarray:
    """Every edge of ``dtype``: its extremes, zero, one, and for floats infinities."""
    if dtype == "bool":
        return np.array([False, True])
    if dtype.startswith("complex"):
        info = np.finfo(dtype)
        return np.array([complex(-np.inf, 1), complex(info.min, -1), -1j, 0, 1, 1 + 1j,
                         complex(1, info.max), complex(np.inf, 0)], dtype)
    if dtype.startswith("float"):
        info = np.finfo(dtype)
        return np.array([-np.inf, info.min, -1, 0, 1, info.max, np.inf], dtype)
    info = np.iinfo(dtype)
    if info.min == 0:  # unsigned
        return np.array([0, 1, info.max - 1, info.max], dtype)
    return np.array([info.min, -1, 0, 1, info.max], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_arithmetic_identity_is_numpys_empty_result(op: str, dtype: str) -> None:
    rdef = REDUCES[op]
    empty = rdef.numpy(np.zeros(0, dtype), dtype=dtype)
    assert empty.dtype == np.dtype(dtype)
    assert empty == rdef.identity(dtype)
    assert type(rdef.identity(dtype)) is (bool if dtype == "bool" else int)


@pytest.mark.parametrize("dtype", ORDERED_DTYPES)
@pytest.mark.parametrize("op", ["max", "min"])
def test_extremum_identity_is_neutral_and_extreme(op: str, dtype: str) -> None:
    rdef = REDUCES[op]
    ident = rdef.identity(dtype)
    values = _values(dtype)
    # NumPy's result over any values is unchanged by starting from the identity ...
    assert rdef.numpy(values, initial=ident) == rdef.numpy(values)
    assert rdef.numpy(np.zeros(0, dtype), initial=ident) == ident
    # ... and the identity is the dtype's far end, as the kernels have always started
    far = values[0] if op == "max" else values[-1]
    assert ident == far and np.array(ident, dtype) == far


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_have_no_identity(op: str) -> None:
    rdef = REDUCES[op]
    assert rdef.is_arg and rdef.identity("float32") is None
    with pytest.raises(ValueError):
        rdef.numpy(np.zeros(0, np.float32))
    assert rdef.result_dtype(np.dtype(np.float32)) == np.int64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(REDUCES))
def test_accumulation_and_result_dtypes(op: str, dtype: str) -> None:
    rdef = REDUCES[op]
    wide = op == "sum" and dtype == "float32"
    assert rdef.work_dtype(dtype) == ("float64" if wide else dtype)
    assert rdef.work_dtype(dtype, fp64=False) == dtype
    if op in ("sum", "prod"):  # NumPy's result dtype of a reduction of ``dtype``
        expected = rdef.numpy(np.ones(2, dtype)).dtype
        assert rdef.result_dtype(np.dtype(dtype)) == expected


def _nan_equal(a: object, b: object) -> bool:
    if isinstance(a, complex) and isinstance(b, complex):  # part by part
        return _nan_equal(a.real, b.real) and _nan_equal(a.imag, b.imag)
    return bool(a == b) or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


# complex numbers have no order: the tensor layer refuses max/min on them (test_complex)
ORDERED_PAIRS = [(op, d) for op in sorted(FUSABLE_REDUCTIONS) for d in DTYPES
                 if not (op in ("max", "min") and d.startswith("complex"))]


@pytest.mark.parametrize(("op", "dtype"), ORDERED_PAIRS)
def test_numba_combine_folds_like_numpy(op: str, dtype: str) -> None:
    """Numba's forms are Python: fold edge values with them, compare with NumPy
    (NaN-propagating max/min, wrapping integer arithmetic, bool or/and)."""
    numba_reduce = pytest.importorskip("hermes_nb.codegen.numba_reduce")
    rdef = REDUCES[op]
    values = _values(dtype)
    if dtype.startswith("float"):
        values = np.array([*values, np.nan, 2], dtype)
    expr = numba_reduce.numba_combine(op, dtype, "a", "x")
    ctor = np.bool_ if dtype == "bool" else np.dtype(dtype).type
    with np.errstate(all="ignore"):
        for order in (values, values[::-1]):
            a = ctor(rdef.identity(dtype))
            for x in order:
                a = eval(expr, {}, {"a": a, "x": x})
            expected = rdef.numpy(order, dtype=dtype) if op in ("sum", "prod") \
                else rdef.numpy(order)
            assert _nan_equal(a.item() if hasattr(a, "item") else a, expected.item())


def test_c_combine_tests_nan_exactly_where_nan_wins() -> None:
    for op in FUSABLE_REDUCTIONS:
        assert ("isnan" in c_combine(op, "float32")) == REDUCES[op].nan_wins
        assert "isnan" not in c_combine(op, "int32") + c_combine(op, "bool")
