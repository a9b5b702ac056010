"""The array API namespace: ``__array_namespace__``, ``__array_api_version__``,
``__array_namespace_info__``, the constants, the dtype functions (against the standard's
promotion table and ``array_api_strict`` where it is installed), the signatures of the new
functions against ``array_api_strict``'s, and the doctests of the modules that hold them."""

from __future__ import annotations

import doctest
import inspect
import itertools
import math

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.api import (
    construct,
    contractions,
    dtype_functions,
    manipulation,
    namespace_info,
    searching,
    utility,
)

DTYPES = [hm.bool, hm.int8, hm.int16, hm.int32, hm.int64, hm.uint8, hm.uint16, hm.uint32,
          hm.uint64, hm.float32, hm.float64]
NEW_FUNCTIONS = [
    "empty", "empty_like", "eye", "full_like", "linspace", "meshgrid", "ones_like", "zeros_like",
    "tril", "triu", "can_cast", "finfo", "iinfo", "isdtype", "result_type", "expand_dims",
    "squeeze", "flip", "roll", "moveaxis", "broadcast_arrays", "tile", "repeat", "unstack",
    "matrix_transpose", "vecdot", "tensordot", "all", "any", "count_nonzero", "cumulative_sum",
    "diff", "cumulative_prod", "searchsorted",
    "take", "take_along_axis", "nonzero", "sort", "argsort", "unique_values", "unique_counts",
    "unique_inverse", "unique_all", "astype",
]


# ---- the namespace ----------------------------------------------------------------------
def test_tensor_names_its_namespace():
    t = hm.ones(2)
    assert t.__array_namespace__() is hm
    assert t.__array_namespace__(api_version="2024.12") is hm
    assert t.__array_namespace__(api_version="2022.12") is hm
    assert hm.__array_api_version__ == "2024.12"


@pytest.mark.parametrize(("version", "error", "message"), [
    ("2019.01", ValueError, "__array_namespace__: api_version '2019.01' is not supported; "
     "supported: 2021.12, 2022.12, 2023.12, 2024.12"),
    (2024.12, TypeError, "__array_namespace__: api_version must be a string"),
])
def test_unsupported_api_version_is_refused(version, error, message):
    with pytest.raises(error) as info:
        hm.ones(2).__array_namespace__(api_version=version)
    assert message in str(info.value)


def test_constants():
    assert (hm.e, hm.pi) == (math.e, math.pi)
    assert hm.inf == math.inf and math.isnan(hm.nan)
    assert hm.newaxis is None
    assert hm.zeros((2, 3))[:, hm.newaxis].shape == (2, 1, 3)


def test_namespace_info_lists_the_real_devices():
    info = hm.__array_namespace_info__()
    assert info.devices() == [d.id for d in hm.devices()]
    assert info.default_device() is None
    with hm.device("cpu:0"):
        assert info.default_device() == "cpu:0"
    caps = info.capabilities()
    assert caps["boolean indexing"] is False and caps["data-dependent shapes"] is False
    assert "max dimensions" in caps
    assert info.default_dtypes() == {"real floating": hm.float64,
                                     "complex floating": hm.complex128,
                                     "integral": hm.int64, "indexing": hm.int64}


def test_namespace_info_dtypes_per_device_and_kind():
    info = hm.__array_namespace_info__()
    assert list(info.dtypes()) == ["bool", "int8", "int16", "int32", "int64", "uint8",
                                   "uint16", "uint32", "uint64", "float32", "float64",
                                   "complex64", "complex128"]
    assert info.dtypes(kind="complex floating") == {"complex64": hm.complex64,
                                                    "complex128": hm.complex128}
    assert info.dtypes(kind="real floating") == {"float32": hm.float32, "float64": hm.float64}
    assert info.dtypes(kind=("bool", "signed integer")) == {
        "bool": hm.bool, "int8": hm.int8, "int16": hm.int16, "int32": hm.int32,
        "int64": hm.int64}
    assert info.dtypes(kind="unsigned integer") == {
        "uint8": hm.uint8, "uint16": hm.uint16, "uint32": hm.uint32, "uint64": hm.uint64}
    assert list(info.dtypes(kind="integral")) == [
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    assert "uint8" in info.dtypes(kind="numeric") and "bool" not in info.dtypes(kind="numeric")
    for dev in hm.devices():
        assert ("float64" in info.dtypes(device=dev.id)) == dev.fp64
        assert ("complex128" in info.dtypes(device=dev.id)) == dev.fp64
    with pytest.raises(ValueError, match="dtypes: kind 'floats' is not a dtype kind; allowed"):
        info.dtypes(kind="floats")
    with pytest.raises(ValueError, match="dtypes: device 'gpu:9' is not a Hermes device"):
        info.dtypes(device="gpu:9")


def test_device_and_to_device():
    t = hm.ones(3)
    assert t.device is None  # not placed yet: the scheduler picks at compute time
    moved = t.to_device("cpu:0")
    assert moved.device == "cpu:0"
    assert moved.to_device(hm.get_device("cpu:0")).device == "cpu:0"
    np.testing.assert_array_equal(moved.numpy(), np.ones(3))
    with pytest.raises(ValueError, match="to_device: stream=1 is not supported; pass None"):
        t.to_device("cpu:0", stream=1)
    with pytest.raises(ValueError, match="to_device: device 'cpu:7' is not a Hermes device"):
        t.to_device("cpu:7")


def test_array_api_compat_finds_hm():
    compat = pytest.importorskip("array_api_compat")
    t = hm.ones((2, 3))
    assert compat.array_namespace(t) is hm
    assert compat.is_array_api_obj(t) and compat.size(t) == 6


# ---- dtype functions -----------------------------------------------------------------------
def test_isdtype():
    assert hm.isdtype(hm.bool, "bool") and not hm.isdtype(hm.bool, "numeric")
    assert hm.isdtype(hm.int32, "signed integer") and hm.isdtype(hm.int64, "integral")
    assert not hm.isdtype(hm.int32, "unsigned integer")
    assert hm.isdtype(hm.uint8, "unsigned integer") and hm.isdtype(hm.uint64, "integral")
    assert hm.isdtype(hm.int8, "signed integer") and hm.isdtype(hm.uint16, "numeric")
    assert not hm.isdtype(hm.uint32, "signed integer") and hm.isdtype("int16", hm.int16)
    assert hm.isdtype(hm.float32, ("integral", "real floating"))
    assert not hm.isdtype(hm.float32, "complex floating")
    assert hm.isdtype(hm.complex64, "complex floating") and hm.isdtype(hm.complex128, "numeric")
    assert not hm.isdtype(hm.complex64, "real floating")
    assert hm.isdtype(hm.int64, hm.int64) and not hm.isdtype(hm.int64, hm.int32)
    with pytest.raises(ValueError, match="isdtype: kind 'float' is not a dtype kind"):
        hm.isdtype(hm.float32, "float")
    with pytest.raises(TypeError, match="isdtype: dtype must be a dtype, got 3"):
        hm.isdtype(3, "bool")


def _standard_promotion(a: np.dtype, b: np.dtype) -> np.dtype | None:
    """The standard's table: within bool, the integers or the floats; None between kinds.
    Signed with unsigned: the signed type wider than the unsigned one (none past 64 bits)."""
    if a == b:
        return a
    if {a.kind, b.kind} == {"i", "u"}:
        signed, unsigned = (a, b) if a.kind == "i" else (b, a)
        size = max(signed.itemsize, 2 * unsigned.itemsize)
        return np.dtype(f"int{8 * size}") if size <= 8 else None
    if a.kind != b.kind or a.kind == "b":
        return None
    return max(a, b, key=lambda d: d.itemsize)


@pytest.mark.parametrize(("a", "b"), list(itertools.product(DTYPES, DTYPES)), ids=str)
def test_result_type_and_can_cast_follow_the_standard(a, b):
    standard = _standard_promotion(a, b)
    got = hm.result_type(a, b)
    if standard is not None:
        assert got == standard
    else:  # outside the standard: NumPy's promotion, the dtype Hermes' operators compute in
        assert got == np.result_type(a, b)
    assert got == (hm.ones(1, dtype=a) + hm.ones(1, dtype=b)).dtype
    assert hm.can_cast(a, b) == (standard is not None and standard == b)


def test_result_type_with_tensors_and_python_scalars():
    assert hm.result_type(hm.ones(2, dtype="float32"), 1.0) == hm.float32
    assert hm.result_type(hm.int32, 5) == hm.int32
    assert hm.result_type(hm.int32, 2.5) == hm.float64
    assert hm.result_type(hm.bool, True) == hm.bool
    assert hm.result_type("int32", hm.int64, hm.ones(1, dtype="int32")) == hm.int64
    with pytest.raises(ValueError, match="result_type: at least one Tensor or dtype is needed"):
        hm.result_type(1, 2.0)
    with pytest.raises(TypeError, match="result_type: argument 0='float16' is not a Hermes "
                                        "dtype; supported: bool, int8"):
        hm.result_type("float16", hm.float32)


def test_can_cast_takes_a_tensor():
    assert hm.can_cast(hm.ones(2, dtype="int32"), hm.int64)
    assert not hm.can_cast(hm.ones(2, dtype="int32"), hm.float64)
    with pytest.raises(TypeError, match="can_cast: to must be a dtype"):
        hm.can_cast(hm.int32, hm.ones(2))


@pytest.mark.parametrize("dtype", [hm.float32, hm.float64])
def test_finfo(dtype):
    info, ref = hm.finfo(dtype), np.finfo(dtype)
    assert (info.bits, info.eps, info.max, info.min, info.smallest_normal) == (
        ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.smallest_normal))
    assert info.dtype == dtype and isinstance(info.eps, float)
    assert hm.finfo(hm.ones(1, dtype=dtype)).dtype == dtype


@pytest.mark.parametrize("dtype", [hm.int8, hm.int16, hm.int32, hm.int64, hm.uint8, hm.uint16,
                                   hm.uint32, hm.uint64])
def test_iinfo(dtype):
    info, ref = hm.iinfo(dtype), np.iinfo(dtype)
    assert (info.bits, info.max, info.min, info.dtype) == (ref.bits, ref.max, ref.min, dtype)
    assert isinstance(info.max, int)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: hm.finfo(hm.int32), ValueError,
     "finfo: type int32 is not a floating-point dtype; allowed: float32, float64"),
    (lambda: hm.iinfo(hm.float32), ValueError,
     "iinfo: type float32 is not an integer dtype; allowed: int8, int16, int32, int64, uint8, "
     "uint16, uint32, uint64"),
    (lambda: hm.iinfo("float16"), TypeError, "iinfo: type='float16' is not a Hermes dtype"),
    (lambda: hm.finfo(1.0), TypeError, "finfo: type must be a dtype or a Tensor, got 1.0"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_dtype_function_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


# ---- against array_api_strict ---------------------------------------------------------------
def _strict():
    strict = pytest.importorskip("array_api_strict")
    strict.set_array_api_strict_flags(api_version="2024.12")
    return strict


@pytest.mark.parametrize("name", NEW_FUNCTIONS)
def test_signature_matches_the_standard(name):
    strict = _strict()
    ours, theirs = inspect.signature(getattr(hm, name)), inspect.signature(getattr(strict, name))
    def shape(sig):
        return [(p.name, p.kind) for p in sig.parameters.values()]
    # the same names, in the same order, of the same kinds; Hermes may accept more
    # positionally (dtype of zeros) and has defaults the standard leaves out (squeeze's axis)
    assert [n for n, _ in shape(ours)][:len(theirs.parameters)] == list(theirs.parameters), (
        ours, theirs)
    for (n, kind), (_, want) in zip(shape(ours), shape(theirs)):
        if want is inspect.Parameter.KEYWORD_ONLY:
            assert kind is inspect.Parameter.KEYWORD_ONLY, (name, n)


@pytest.mark.parametrize(("a", "b"), list(itertools.product(DTYPES, DTYPES)), ids=str)
def test_dtype_functions_agree_with_array_api_strict(a, b):
    strict = _strict()
    sa, sb = getattr(strict, a.name if a != hm.bool else "bool"), \
        getattr(strict, b.name if b != hm.bool else "bool")
    assert hm.can_cast(a, b) == strict.can_cast(sa, sb)
    try:
        expected = strict.result_type(sa, sb)
    except TypeError:  # undefined by the standard: Hermes follows NumPy
        return
    assert hm.result_type(a, b).name == str(expected).removeprefix("array_api_strict.")


@pytest.mark.parametrize("case", [
    lambda xp: xp.eye(4, 3, k=-1), lambda xp: xp.linspace(-1.0, 2.0, 7),
    lambda xp: xp.tril(xp.reshape(xp.arange(12.0), (3, 4)), k=1),
    lambda xp: xp.roll(xp.reshape(xp.arange(12), (3, 4)), (1, -1), axis=(0, 1)),
    lambda xp: xp.tile(xp.arange(3), (2, 2)),
    lambda xp: xp.repeat(xp.arange(3), 2, axis=0),
    lambda xp: xp.moveaxis(xp.ones((2, 3, 4)), (0, 1), (2, 0)),
    lambda xp: xp.tensordot(xp.reshape(xp.arange(24.0), (2, 3, 4)),
                            xp.reshape(xp.arange(12.0), (4, 3)), axes=([1, 2], [1, 0])),
    lambda xp: xp.vecdot(xp.reshape(xp.arange(6.0), (2, 3)), xp.ones(3)),
    lambda xp: xp.cumulative_sum(xp.arange(5), include_initial=True),
    lambda xp: xp.diff(xp.asarray([1, 4, 9, 16]), n=2),
    lambda xp: xp.count_nonzero(xp.asarray([[0, 1], [2, 0]]), axis=0),
    lambda xp: xp.all(xp.asarray([[True, False], [True, True]]), axis=1, keepdims=True),
], ids=lambda c: "")
def test_results_agree_with_array_api_strict(case):
    strict = _strict()
    ours, theirs = case(hm), case(strict)
    expected = np.asarray(theirs)
    got = ours.numpy()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# ---- doctests --------------------------------------------------------------------------------
@pytest.mark.parametrize("module", [namespace_info, dtype_functions, construct, contractions,
                                    manipulation, utility, searching], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
