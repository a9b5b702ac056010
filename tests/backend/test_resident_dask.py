"""A computed result is a value Dask understands on every device: ``dask.sizeof`` gives its
real size (so memory limits, spilling and locality see device data) and ``tokenize`` works
(a device buffer has no content hash) and tells two results apart."""

from __future__ import annotations

import pickle

import numpy as np
from dask.base import tokenize
from dask.sizeof import sizeof

import hermes_nb as hm


def _resident(device, shape=(512, 256)):
    with hm.device(device):
        t = (hm.asarray(np.ones(shape, np.float32)) * 2.0).compute()
    return t, t.node.attrs["handle"]


def test_sizeof_counts_the_buffer(device):
    t, resident = _resident(device)
    assert sizeof(resident) == 512 * 256 * 4 == t.node.nbytes


def test_tokenize_is_stable_and_tells_results_apart(device):
    _, first = _resident(device)
    _, second = _resident(device)
    assert tokenize(first) == tokenize(first)
    assert tokenize(first) != tokenize(second)


def test_pickled_result_keeps_its_size_and_value(device):
    t, resident = _resident(device, (64, 32))
    back = pickle.loads(pickle.dumps(resident))
    assert sizeof(back) == 64 * 32 * 4
    np.testing.assert_array_equal(back.host(), t.numpy())
