"""Behaviour the array API standard (2024.12) specifies and its public test suite checks,
beyond values: which exception, which object, which capability."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.api import composed, creation, elementwise, methods


@pytest.mark.parametrize("axis", [-3, 2, 5])
def test_expand_dims_out_of_range_is_an_index_error(axis):
    with pytest.raises(IndexError, match=f"expand_dims: axis {axis} is out of range"):
        hm.expand_dims(hm.zeros((4,)), axis=axis)
    with pytest.raises(ValueError):  # and still the ValueError Hermes raised before
        hm.expand_dims(hm.zeros((4,)), axis=axis)


def test_copy_true_gives_a_new_tensor_object_that_setitem_leaves_apart():
    x = hm.asarray([1.0, 2.0, 3.0])
    same = hm.asarray(x)
    for copied in (hm.asarray(x, copy=True), hm.astype(x, hm.float64, copy=True)):
        assert copied is not x
        copied[0] = -1.0
        assert copied.numpy().tolist() == [-1.0, 2.0, 3.0]
    assert same is x and hm.astype(x, hm.float64, copy=False) is x
    assert x.numpy().tolist() == [1.0, 2.0, 3.0]


def test_setitem_rebinds_only_that_tensor():
    x = hm.zeros((2, 2), dtype=hm.int32)
    before = x * 2
    x[0, :] = 7
    x[x > 5] = 3
    assert x.numpy().tolist() == [[3, 3], [0, 0]]
    assert before.numpy().tolist() == [[0, 0], [0, 0]]
    with pytest.raises(IndexError, match="does not index a tensor of shape"):
        x[5] = 1


def test_searchsorted_sorter_gives_the_sorted_answer():
    x = np.array([5.0, 1.0, 3.0, 3.0])
    v = np.array([0.0, 3.0, 4.0, 9.0])
    order = np.argsort(x)
    for side in ("left", "right"):
        got = hm.searchsorted(hm.asarray(x), hm.asarray(v), side=side, sorter=hm.asarray(order))
        assert got.numpy().tolist() == np.searchsorted(x, v, side=side, sorter=order).tolist()
    with pytest.raises(TypeError, match="sorter must be an integer array of x1's shape"):
        hm.searchsorted(hm.asarray(x), hm.asarray(v), sorter=hm.asarray([0.0, 1.0, 2.0, 3.0]))


def test_capabilities_give_a_finite_dimension_limit():
    caps = hm.__array_namespace_info__().capabilities()
    assert caps["max dimensions"] == 64
    x = hm.zeros((1,) * 64)
    assert x.ndim == 64


@pytest.mark.parametrize("module", [composed, methods, creation, elementwise],
                         ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
