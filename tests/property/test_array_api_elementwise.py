"""Hypothesis: the array API's bitwise and sign functions of ``hm`` (``logical_xor``,
``positive``, ``signbit``, the bit shifts) and the operators ``& | ^ ~ << >>`` agree with
``array_api_strict`` on random shapes and values of every integer dtype Hermes has,
shifts by the dtype's width and more included, on every device."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hermes_nb as hm

strict = pytest.importorskip("array_api_strict")
strict.set_array_api_strict_flags(api_version="2024.12")

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
# every integer dtype this build of Hermes has (the standard's eight once all exist)
INTS = [np.dtype(n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                              "uint64") if hasattr(hm, n)]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def ints(dtype: np.dtype, shape: Any) -> st.SearchStrategy[np.ndarray]:
    info = np.iinfo(dtype)
    return hnp.arrays(dtype, shape, elements=st.integers(int(info.min), int(info.max)))


def check(device: Any, run_on: Callable[..., Any], fn: Callable[..., Any], *inputs: Any) -> None:
    """``fn(hm, *tensors)`` on ``device`` equals ``fn(array_api_strict, *arrays)`` exactly."""
    expected = np.asarray(fn(strict, *(strict.asarray(x) if isinstance(x, np.ndarray) else x
                                       for x in inputs)))
    got = run_on(device, lambda *ts: fn(hm, *ts), *inputs)
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
    np.testing.assert_array_equal(got, expected)


@SETTINGS
@given(dtype=st.sampled_from(INTS), data=st.data())
def test_bit_shifts(device, run_on, dtype, data):
    shape = data.draw(SHAPES)
    x = data.draw(ints(dtype, shape))
    bits = dtype.itemsize * 8
    by = data.draw(hnp.arrays(dtype, shape, elements=st.integers(0, bits + 2)))
    check(device, run_on, lambda xp, a, b: xp.bitwise_left_shift(a, b), x, by)
    check(device, run_on, lambda xp, a, b: xp.bitwise_right_shift(a, b), x, by)
    check(device, run_on, lambda xp, a: a << 3, x)
    check(device, run_on, lambda xp, a: a >> (bits - 1), x)


@SETTINGS
@given(dtype=st.sampled_from([*INTS, np.dtype(bool)]), data=st.data())
def test_bitwise_operators(device, run_on, dtype, data):
    shape = data.draw(SHAPES)
    draw = (lambda: data.draw(hnp.arrays(dtype, shape))) if dtype.kind == "b" else (
        lambda: data.draw(ints(dtype, shape)))
    x, y = draw(), draw()
    for op in (operator.and_, operator.or_, operator.xor):
        check(device, run_on, lambda xp, a, b, op=op: op(a, b), x, y)
    check(device, run_on, lambda xp, a: ~a, x)


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_side=4), scalar=st.booleans(),
       data=st.data())
def test_logical_xor(device, run_on, shapes, scalar, data):
    x, y = (data.draw(hnp.arrays(bool, s)) for s in shapes.input_shapes)
    check(device, run_on, lambda xp, a, b: xp.logical_xor(a, b), x, y)
    check(device, run_on, lambda xp, a: xp.logical_xor(a, scalar), x)


FLOATS = st.sampled_from([np.dtype("float32"), np.dtype("float64")])


@SETTINGS
@given(dtype=FLOATS, data=st.data())
def test_signbit_and_positive(device, run_on, dtype, data):
    shape = data.draw(SHAPES)
    specials = st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan])
    elements = st.floats(width=dtype.itemsize * 8) | specials
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    check(device, run_on, lambda xp, a: xp.signbit(a), x)
    check(device, run_on, lambda xp, a: xp.positive(a), x)
    check(device, run_on, lambda xp, a: +a, x)


@pytest.mark.parametrize("fn", [hm.bitwise_left_shift, hm.bitwise_right_shift,
                                operator.lshift, operator.and_, operator.xor])
def test_bitwise_refuses_floats(fn):
    x = hm.asarray([1.5, 2.0])
    with pytest.raises(TypeError, match="integer"):
        fn(x, hm.asarray([1.0, 1.0]))


@pytest.mark.parametrize("fn", [hm.positive, hm.signbit])
def test_sign_functions_refuse_bool(fn):
    with pytest.raises(TypeError, match=f"{fn.__name__}: expected a .* tensor, got dtype bool"):
        fn(hm.asarray([True, False]))


@SETTINGS
@given(dtype=FLOATS, data=st.data())
def test_nextafter(device, run_on, dtype, data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_side=4))
    specials = st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0])
    elements = st.floats(width=dtype.itemsize * 8) | specials
    x, y = (data.draw(hnp.arrays(dtype, s, elements=elements)) for s in shapes.input_shapes)
    check(device, run_on, lambda xp, a, b: xp.nextafter(a, b), x, y)
    check(device, run_on, lambda xp, a: xp.nextafter(a, 0.0), x)
