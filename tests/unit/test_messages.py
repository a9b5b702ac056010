"""Every bad argument is refused when the graph is built, with a message naming the op the
user called, the argument, the value and what is allowed; NumPy's numbers are accepted."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.api.image import MAX_KERNEL_SIZE

IMAGE = np.ones((8, 8), np.float32)


@pytest.fixture(autouse=True)
def _no_device_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may run on a device: every error is a build-time one."""
    def forbidden(*args, **kwargs):
        raise AssertionError("a device ran work while only building a graph")

    for dev in hm.devices():
        monkeypatch.setattr(dev, "execute", forbidden)


CASES = [
    # (what, call, error type, pattern)
    ("ragged list", lambda: hm.asarray([[1, 2], [3]]), ValueError,
     r"^asarray: cannot make a tensor from the ragged sequence \[\[1, 2\], \[3\]\]: every "
     r"nested list must have the same length"),
    ("list of None", lambda: hm.asarray([None]), TypeError,
     r"^asarray: input must hold bools, ints, floats or complex numbers, got dtype object "
     r"\(\[None\]\); supported dtypes: bool, int8, .*, float64, complex64, complex128"),
    ("zeros(None)", lambda: hm.zeros(None), TypeError,
     r"^zeros: shape must be an int or a sequence of ints, got None"),
    ("ones('3')", lambda: hm.ones("3"), TypeError,
     r"^ones: shape must be an int or a sequence of ints, got '3'"),
    ("arange(nan)", lambda: hm.arange(float("nan")), ValueError,
     r"^arange: stop must be a finite number, got nan"),
    ("arange(0, inf)", lambda: hm.arange(0, float("inf")), ValueError,
     r"^arange: stop must be a finite number, got inf"),
    ("arange(step=-inf)", lambda: hm.arange(0, 3, -float("inf")), ValueError,
     r"^arange: step must be a finite number, got -inf"),
    ("conv2d string kernel", lambda: hm.conv2d(IMAGE, [["a"]]), TypeError,
     r"^conv2d: kernel must hold bools, ints, floats or complex numbers, got dtype <U1 "
     r"\(\[\['a'\]\]\)"),
    ("conv2d ragged kernel", lambda: hm.conv2d(IMAGE, [[1, 2], [3]]), ValueError,
     r"^conv2d: kernel must be a 2-D array of real numbers with rows of one length, got the "
     r"ragged \[\[1, 2\], \[3\]\]"),
    ("clip(min='a')", lambda: hm.clip(hm.asarray(IMAGE), min="a"), TypeError,
     r"^clip: min must be None, a real number, an array or a Tensor, got 'a' \(str\)"),
    ("clip(max=1j)", lambda: hm.clip(hm.asarray(IMAGE), max=1j), TypeError,
     r"^clip: max must be None, a real number, an array or a Tensor, got 1j \(complex\)"),
    ("kernel_size=10**6+1", lambda: hm.gaussian_blur(IMAGE, kernel_size=10**6 + 1), ValueError,
     rf"^gaussian_blur: kernel_size must be an odd int from 1 to {MAX_KERNEL_SIZE}, "
     r"got 1000001"),
    ("kernel_size=4001", lambda: hm.gaussian_blur(kernel_size=4001), ValueError,
     rf"^gaussian_blur: kernel_size must be an odd int from 1 to {MAX_KERNEL_SIZE}, got 4001"),
    ("kernel_size=4", lambda: hm.gaussian_blur(kernel_size=4), ValueError,
     rf"^gaussian_blur: kernel_size must be an odd int from 1 to {MAX_KERNEL_SIZE}, got 4"),
    ("random.uniform(low > high)", lambda: hm.random.uniform((3,), low=2, high=1), ValueError,
     r"^random.uniform: low must be <= high, got low=2, high=1"),
    ("random.uniform(high=inf)", lambda: hm.random.uniform((3,), high=float("inf")), ValueError,
     r"^random.uniform: high must be a finite number, got inf"),
    ("random.normal(loc='0')", lambda: hm.random.normal((3,), loc="0"), TypeError,
     r"^random.normal: loc must be a real number, got '0'"),
    # inputs Hermes cannot represent are refused, not silently changed
    ("complex conv2d kernel", lambda: hm.conv2d(IMAGE, np.array([[1 + 1j]])), TypeError,
     r"^conv2d: kernel holds complex values \(complex128 .*\), which stencils do not take; "
     r"allowed: real numbers"),
    ("complex image", lambda: hm.gaussian_blur(hm.asarray(IMAGE) * 1j), TypeError,
     r"^gaussian_blur: stencil and image ops take real images only, got dtype complex64; "
     r"allowed: float32, float64"),
    ("complex less", lambda: hm.asarray(IMAGE) * 1j < 1, TypeError,
     r"^less: complex dtypes have no order; less is defined for bool, int8, .*float64, got "
     r"complex64"),
    ("masked array", lambda: hm.asarray(np.ma.masked_array([1.0, 2.0], mask=[0, 1])), TypeError,
     r"^asarray: input is a masked array, which is not supported \(the mask would be lost\)"),
    ("masked conv2d kernel", lambda: hm.conv2d(IMAGE, np.ma.masked_array([[1.0]], mask=[[1]])),
     TypeError, r"^conv2d: kernel is a masked array"),
    ("full overflow", lambda: hm.full((2,), 2**40, dtype="int32"), OverflowError,
     r"^full: fill_value 1099511627776 is out of bounds for int32 \(-2147483648 to 2147483647\)"),
    ("full negative overflow", lambda: hm.full((2,), -(2**63) - 1, dtype="int64"), OverflowError,
     r"^full: fill_value -9223372036854775809 is out of bounds for int64"),
    ("full nan into int", lambda: hm.full((2,), float("nan"), dtype="int32"), ValueError,
     r"^full: fill_value nan cannot be stored in int32"),
    ("reshape(2.9, 6)", lambda: hm.asarray(np.ones(12)).reshape(2.9, 6), TypeError,
     r"^reshape: shape must be an int or a sequence of ints \(one may be -1\), got \(2\.9, 6\)"),
    ("reshape('4', '3')", lambda: hm.asarray(np.ones(12)).reshape("4", "3"), TypeError,
     r"^reshape: shape must be an int or a sequence of ints \(one may be -1\), got \('4', '3'\)"),
    ("reshape(True)", lambda: hm.asarray(np.ones(1)).reshape(True), TypeError,
     r"^reshape: shape must be an int or a sequence of ints \(one may be -1\), got \(True,\)"),
    ("hm.reshape(x, 2.0)", lambda: hm.reshape(hm.asarray(np.ones(2)), 2.0), TypeError,
     r"^reshape: shape must be an int or a sequence of ints \(one may be -1\), got 2\.0"),
    ("var(correction='1')", lambda: hm.var(hm.asarray(IMAGE), correction="1"), TypeError,
     r"^var: correction must be a non-negative number, got '1'"),
]


@pytest.mark.parametrize(("call", "error", "pattern"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_argument_names_op_argument_and_value(call, error, pattern) -> None:
    start = time.perf_counter()
    with pytest.raises(error, match=pattern):
        call()
    assert time.perf_counter() - start < 0.5  # refused at once, before any big allocation


def test_numpy_agrees_on_what_it_refuses() -> None:
    """The cases above where NumPy itself raises, so Hermes is not stricter there."""
    with pytest.raises(OverflowError, match="out of bounds for int32"):
        np.full((2,), 2**40, dtype=np.int32)
    with pytest.raises(ValueError, match="inhomogeneous"):
        np.asarray([[1, 2], [3]])
    with pytest.raises(TypeError):
        np.ones(12).reshape(2.9, 6)


def test_numpy_scalars_are_numbers() -> None:
    blurred = hm.gaussian_blur(IMAGE, kernel_size=5, sigma=np.float32(1.5))
    same = hm.gaussian_blur(IMAGE, kernel_size=5, sigma=1.5)
    assert blurred.node.attrs["weights"] == same.node.attrs["weights"]
    assert hm.gaussian_blur(IMAGE, kernel_size=np.int64(3)).shape == (8, 8)
    assert hm.random.uniform((2,), low=np.float32(0), high=np.int64(2)).shape == (2,)
    assert hm.arange(np.int32(3)).shape == (3,)
    assert hm.asarray(IMAGE).reshape(np.int64(64)).shape == (64,)
    assert hm.full((2,), np.int64(7), dtype="int32").node.attrs["fill_value"] == 7


def test_largest_kernel_size_is_accepted_quickly() -> None:
    start = time.perf_counter()
    out = hm.gaussian_blur(IMAGE, kernel_size=MAX_KERNEL_SIZE)
    assert out.shape == (8, 8)
    assert time.perf_counter() - start < 5.0


def test_messages_never_name_internal_helpers() -> None:
    for _, call, error, _ in CASES:
        with pytest.raises(error) as info:
            call()
        assert not re.search(r"from_numpy|maximum|minimum|NoneType", str(info.value))
