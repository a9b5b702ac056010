"""A reshape that drops a reduction's kept axes (``compiler/kept_dims.py``) is no kernel of
its own on any device: the reduction writes the reshaped result; any other reshape stays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm

X = np.random.default_rng(3).normal(size=(4, 6, 5, 5)).astype(np.float32)
W = np.random.default_rng(4).normal(size=(4, 6, 1, 1)).astype(np.float32)


def _kept(t: Any, xp: Any, op: str) -> Any:
    return getattr(xp, op)(t, axis=(2, 3), keepdims=True)


CASES: dict[str, tuple[Callable[..., Any], int]] = {
    # name: (the expression over a module xp (hm or np), kernels where the reshape is dropped)
    "global average pool, flattened": (lambda t, w, xp: xp.reshape(_kept(t, xp, "mean"), (4, 6)), 1),
    "max, flattened": (lambda t, w, xp: xp.reshape(_kept(t, xp, "max"), (4, 6)), 1),
    "another shape": (lambda t, w, xp: xp.reshape(_kept(t, xp, "sum"), (6, 4)), 2),
    "an epilogue reading a tensor": (
        lambda t, w, xp: xp.reshape(_kept(t, xp, "sum") * w, (4, 6)), 2),
}


@pytest.mark.parametrize("case", CASES)
def test_reshapes_dropping_kept_axes(device: Any, case: str) -> None:
    build, kernels = CASES[case]
    with hm.device(device):
        out = build(hm.asarray(X), hm.asarray(W), hm)
        plan = out.explain()
        got = out.numpy()
    np.testing.assert_allclose(got, build(X, W, np), rtol=2e-6, atol=1e-5)
    assert got.shape == build(X, W, np).shape
    if "fused_reduce" in device.fused_ops:
        assert len(plan.kernels) == kernels, plan


def test_a_reduction_read_elsewhere_keeps_its_shape(device: Any) -> None:
    with hm.device(device):
        t = hm.asarray(X)
        kept = hm.max(t, axis=(2, 3), keepdims=True)
        flat, both = hm.compute(hm.reshape(kept, (4, 6)), t - kept)
    np.testing.assert_array_equal(flat.numpy(), X.max(axis=(2, 3)))
    np.testing.assert_allclose(both.numpy(), X - X.max(axis=(2, 3), keepdims=True), rtol=1e-6)
