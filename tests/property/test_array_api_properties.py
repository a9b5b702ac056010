"""Hypothesis: the array API's creation, manipulation and utility functions of ``hm`` agree
with ``array_api_strict`` (the standard's reference implementation) on random shapes (0-d,
zero-size), axes and values, on every device; dtype and shape are checked with the values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hermes_nb as hm
from hermes_nb.ir import dtypes

strict = pytest.importorskip("array_api_strict")
strict.set_array_api_strict_flags(api_version="2024.12")

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
DTYPES = st.sampled_from([np.dtype(d) for d in dtypes.NAMES])


@st.composite
def arrays(draw: Any, min_dims: int = 0, max_dims: int = 3, dtypes: Any = DTYPES) -> np.ndarray:
    dtype = draw(dtypes)
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=4))
    elements = st.integers(-50, 50) if dtype.kind == "i" else st.integers(0, 100) if (
        dtype.kind == "u") else (
        st.booleans() if dtype.kind == "b" else st.complex_numbers(
            max_magnitude=100, allow_nan=False, allow_infinity=False,
            width=dtype.itemsize * 8) if dtype.kind == "c" else st.floats(
            -100, 100, width=dtype.itemsize * 8))
    return draw(hnp.arrays(dtype, shape, elements=elements))


def axis_of(ndim: int) -> st.SearchStrategy[int]:
    return st.integers(-ndim, ndim - 1)


def check(device: Any, run_on: Callable[..., Any], fn: Callable[..., Any], *inputs: np.ndarray
          ) -> None:
    """``fn(hm, *tensors)`` on ``device`` equals ``fn(array_api_strict, *arrays)``."""
    expected = fn(strict, *(strict.asarray(x) for x in inputs))
    got = run_on(device, lambda *ts: fn(hm, *ts), *inputs)
    many = isinstance(expected, (list, tuple))
    for g, e in zip(got if many else (got,), expected if many else (expected,)):
        e = np.asarray(e)
        assert (g.dtype, g.shape) == (e.dtype, e.shape)
        # single precision (complex64's parts too) may sum in another order or in double
        single = e.dtype in (np.float32, np.complex64)
        np.testing.assert_allclose(g, e, rtol=1e-5 if single else 1e-12,
                                   atol=1e-4 if e.dtype.kind in "fc" else 0)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_flip_roll_expand(device, run_on, x, data):
    axis = data.draw(st.none() | axis_of(x.ndim)) if x.ndim else None
    check(device, run_on, lambda xp, t: xp.flip(t, axis=axis), x)
    shift = data.draw(st.integers(-6, 6))
    check(device, run_on, lambda xp, t: xp.roll(t, shift, axis=axis), x)
    new = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(device, run_on, lambda xp, t: xp.expand_dims(t, axis=new), x)


@SETTINGS
@given(x=arrays(min_dims=1), data=st.data())
def test_moveaxis_unstack_repeat_tile(device, run_on, x, data):
    src = data.draw(axis_of(x.ndim))
    dst = data.draw(axis_of(x.ndim))
    check(device, run_on, lambda xp, t: xp.moveaxis(t, src, dst), x)
    check(device, run_on, lambda xp, t: xp.unstack(t, axis=src), x)
    count = data.draw(st.integers(0, 3))
    check(device, run_on, lambda xp, t: xp.repeat(t, count, axis=src), x)
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    check(device, run_on, lambda xp, t: xp.tile(t, reps), x)


@SETTINGS
@given(x=arrays(min_dims=2), k=st.integers(-4, 4))
def test_tril_triu_matrix_transpose(device, run_on, x, k):
    check(device, run_on, lambda xp, t: (xp.tril(t, k=k), xp.triu(t, k=k), xp.matrix_transpose(t)),
          x)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_all_any_count_nonzero(device, run_on, x, data):
    axis = data.draw(st.none() | axis_of(x.ndim)) if x.ndim else None
    keep = data.draw(st.booleans())
    check(device, run_on, lambda xp, t: (xp.all(t, axis=axis, keepdims=keep),
                                         xp.any(t, axis=axis, keepdims=keep),
                                         xp.count_nonzero(t, axis=axis, keepdims=keep)), x)


NUMERIC = st.sampled_from([np.dtype(d) for d in dtypes.NAMES if d != "bool"])
# searchsorted needs an order: no complex dtypes
ORDERED = st.sampled_from([np.dtype(d) for d in dtypes.NAMES if np.dtype(d).kind in "iuf"])


@SETTINGS
@given(x=arrays(min_dims=1, dtypes=NUMERIC), data=st.data())
def test_cumulative_sum_and_diff(device, run_on, x, data):
    axis = data.draw(axis_of(x.ndim))
    initial = data.draw(st.booleans())
    check(device, run_on, lambda xp, t: xp.cumulative_sum(t, axis=axis, include_initial=initial),
          x)
    n = data.draw(st.integers(0, 3))
    check(device, run_on, lambda xp, t: xp.diff(t, axis=axis, n=n), x)
    small = np.clip(x, -3, 3)  # products of up to 4 factors stay exact
    check(device, run_on, lambda xp, t: xp.cumulative_prod(t, axis=axis, include_initial=initial),
          small)


@SETTINGS
@given(x=arrays(min_dims=1, max_dims=1, dtypes=ORDERED), v=arrays(dtypes=ORDERED),
       side=st.sampled_from(["left", "right"]))
def test_searchsorted(device, run_on, x, v, side):
    x = np.sort(x)
    v = v.astype(x.dtype)
    check(device, run_on, lambda xp, a, b: xp.searchsorted(a, b, side=side), x, v)


@SETTINGS
@given(rows=st.integers(0, 5), cols=st.none() | st.integers(0, 5), k=st.integers(-5, 5),
       num=st.integers(0, 9), endpoint=st.booleans())
def test_eye_linspace(device, run_on, rows, cols, k, num, endpoint):
    check(device, run_on, lambda xp: xp.eye(rows, cols, k=k, dtype=xp.float32))
    check(device, run_on, lambda xp: xp.linspace(-3.0, 5.0, num, endpoint=endpoint))


@SETTINGS
@given(x=arrays(), data=st.data())
def test_setitem_basic_and_mask(device, run_on, x, data):
    # one int or slice per axis: the standard's full keys (array_api_strict refuses others)
    key = tuple(data.draw(st.slices(n) | (st.integers(-n, n - 1) if n else st.nothing()))
                for n in x.shape)
    mask = data.draw(hnp.arrays(bool, x.shape))
    value = data.draw(arrays(max_dims=0, dtypes=st.just(x.dtype)))

    def update(xp: Any, t: Any, v: Any, m: Any) -> Any:
        out = xp.asarray(t, copy=True)
        out[key] = v
        out[m] = v
        return out, t  # the copy changed, the original did not

    check(device, run_on, update, x, value, mask)


@SETTINGS
@given(x=arrays(), data=st.data())
def test_zero_d_masks_and_unique_inverse(device, run_on, x, data):
    flag = data.draw(st.booleans())
    check(device, run_on, lambda xp, t, m: t[m], x, np.asarray(flag))
    check(device, run_on, lambda xp, t: xp.unique_inverse(t).inverse_indices, x)
