"""A reduction of every spatial axis of a conv's result (a global pool) joins the conv
(``compiler/fuse_conv_reduce.py``): on cpu:0 one kernel that never writes the full-size
result, generated or through NumPy; on every device the values of NumPy's reductions over
torch's convolution."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.api.nn import conv, pool
from hermes_nb.backends.cpu import device as cpu_device

torch = pytest.importorskip("torch")
F = torch.nn.functional

RNG = np.random.default_rng(12)
X = RNG.normal(size=(3, 4, 11, 9)).astype(np.float32)
W = RNG.normal(size=(6, 2, 3, 3)).astype(np.float32)
BIAS = RNG.normal(size=(1, 6, 1, 1)).astype(np.float32)
PADS = (1, 1, 1, 1)


@pytest.fixture(params=[True, False], ids=["generated", "numpy"])
def generate(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """cpu:0 runs its generated window kernels from any size, or NumPy at every size."""
    monkeypatch.setattr(cpu_device, "WINDOW_MIN_WORK", 0 if request.param else 1 << 40)
    return request.param


def _activated(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    product = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1, groups=2).numpy()
    return np.maximum(product + bias, 0)


# name: (the reduction over a module xp (hm or np), its ops after the conv's in explain())
REDUCTIONS: dict[str, tuple[Callable[[Any, Any], Any], tuple[str, ...]]] = {
    "mean": (lambda t, xp: xp.mean(t, axis=(2, 3)), ("sum", "divide")),
    "mean, kept dims": (lambda t, xp: xp.mean(t, axis=(2, 3), keepdims=True), ("sum", "divide")),
    "sum": (lambda t, xp: xp.sum(t, axis=(2, 3)), ("sum",)),
    "max": (lambda t, xp: xp.max(t, axis=(2, 3)), ("max",)),
    "min, then a square root": (lambda t, xp: xp.sqrt(xp.min(t, axis=(2, 3))), ("min", "sqrt")),
}


@pytest.mark.parametrize("case", REDUCTIONS)
def test_a_global_pool_joins_its_conv(device: Any, generate: bool, case: str) -> None:
    reduce, ops = REDUCTIONS[case]
    with hm.device(device):
        y = reduce(hm.relu(conv(X, W, pads=PADS, groups=2) + BIAS), hm)
        plan, got = y.explain(), y.numpy()
    expected = reduce(_activated(X, W, BIAS), np)
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    if device.id == "cpu:0":
        (fused,) = plan.kernels
        assert fused.ops == ("conv", "add", "relu", *ops)
        if generate:
            assert "over each plane" in fused.source and "part[ow]" in fused.source


def test_nan_and_infinities_reach_a_joined_reduction(device: Any, generate: bool) -> None:
    """A NaN in one plane spreads through its max and mean, as through NumPy's; an
    infinity stays one; the other planes are untouched."""
    x = X.copy()
    x[0, 1, 3, 4] = np.nan
    x[2, 3, 0, 0] = np.inf
    with hm.device(device):
        activated = hm.relu(conv(x, W, pads=PADS, groups=2) + BIAS)
        peak, average = hm.compute(hm.max(activated, axis=(2, 3)),
                                   hm.mean(activated, axis=(2, 3)))
    expected = _activated(x, W, BIAS)
    for got, want in ((peak, expected.max(axis=(2, 3))), (average, expected.mean(axis=(2, 3)))):
        assert np.isnan(want).any() and np.isinf(want).any()
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_a_global_pool_joins_a_1d_conv(device: Any, generate: bool) -> None:
    x = RNG.normal(size=(2, 3, 17)).astype(np.float32)
    w = RNG.normal(size=(5, 3, 4)).astype(np.float32)
    with hm.device(device):
        y = hm.mean(hm.tanh(conv(x, w, strides=(2,), pads=(1, 2))), axis=2)
        plan, got = y.explain(), y.numpy()
    product = F.conv1d(F.pad(torch.from_numpy(x), [1, 2]), torch.from_numpy(w), stride=2)
    np.testing.assert_allclose(got, np.tanh(product.numpy()).mean(axis=2), rtol=1e-5,
                               atol=1e-6)
    if device.id == "cpu:0":
        assert len(plan.kernels) == 1


# name: (the graph, kernels on cpu:0): reductions that do not join the conv
APART: dict[str, tuple[Callable[[Any], Any], int]] = {
    "over the channels": (lambda t: hm.sum(t, axis=1), 2),
    "over one spatial axis": (lambda t: hm.max(t, axis=3), 2),
    "after a joined pool": (lambda t: hm.mean(pool(t, "max", (2, 2), (2, 2)), axis=(2, 3)), 2),
    "with an epilogue reading a tensor": (lambda t: hm.sum(t, axis=(2, 3)) * BIAS[0, :, 0, 0], 2),
}


@pytest.mark.parametrize("case", APART)
def test_other_reductions_stay_apart(device: Any, generate: bool, case: str) -> None:
    build, kernels = APART[case]
    with hm.device(device):
        y = build(hm.relu(conv(X, W, pads=PADS, groups=2) + BIAS))
        plan, got = y.explain(), y.numpy()
    with hm.device("cpu:0"), hm.options(fuse=False):
        expected = build(hm.relu(conv(X, W, pads=PADS, groups=2) + BIAS)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    if device.id == "cpu:0":
        assert len(plan.kernels) == kernels
        assert all("reduce" not in k.ops[-1] for k in plan.kernels)


def test_a_conv_read_elsewhere_keeps_its_reduction_apart(device: Any, generate: bool) -> None:
    with hm.device(device):
        activated = hm.relu(conv(X, W, pads=PADS, groups=2) + BIAS)
        full, average = hm.compute(activated, hm.mean(activated, axis=(2, 3)))
    expected = _activated(X, W, BIAS)
    np.testing.assert_allclose(full.numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(average.numpy(), expected.mean(axis=(2, 3)), rtol=1e-5,
                               atol=1e-5)


def test_a_joined_reduction_in_float64(device: Any, generate: bool) -> None:
    if not device.fp64:
        pytest.skip(f"{device.id} has no fp64")
    x, w = X.astype(np.float64), W.astype(np.float64)
    with hm.device(device):
        got = hm.mean(hm.relu(conv(x, w, pads=PADS, groups=2) + BIAS.astype(np.float64)),
                      axis=(2, 3)).numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _activated(x, w, BIAS.astype(np.float64)).mean(axis=(2, 3)),
                               rtol=1e-12, atol=1e-12)
