"""Optimised graphs reused across computes: a rebuilt expression of the same shape skips
the optimisation, gives the same values as a fresh one on every device, and never reuses
what depended on contents (folded constants, changed borrowed arrays)."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb import compiler
from hermes_nb.compiler.rewrite import origin
from hermes_nb.context import current_options
from hermes_nb.ir.node import toposort
from hermes_nb.runtime import compile_target, graph_cache


@pytest.fixture
def counted(monkeypatch):
    """Counts the optimisations ``graph_cache`` runs (its templates start empty)."""
    graph_cache.clear()
    calls = [0]
    real = compiler.optimize

    def counting(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_cache, "optimize", counting)
    yield calls
    graph_cache.clear()


def _w4(a: np.ndarray, b: np.ndarray, scale: float = 1.0) -> hm.Tensor:
    return ((hm.asarray(a) * hm.asarray(b) * scale) ** 2).sum(axis=1)


def test_same_shape_new_arrays_reuse_the_optimisation(device, counted):
    rng = np.random.default_rng(0)
    with hm.device(device):
        for _ in range(3):
            a, b = (rng.random((64, 96), dtype=np.float32) for _ in range(2))
            np.testing.assert_allclose(_w4(a, b).numpy(), ((a * b) ** 2).sum(axis=1),
                                       rtol=1e-5)
    assert counted[0] == 1


def test_a_changed_borrowed_array_is_read_again(device, counted):
    a = np.ones((64, 96), np.float32)
    with hm.device(device):
        first = _w4(a, a).numpy().copy()
        a[3] = 2.0
        second = _w4(a, a).numpy()
    np.testing.assert_allclose(first, np.full(64, 96.0, np.float32))
    assert second[3] == pytest.approx(96 * 16.0) and second[2] == pytest.approx(96.0)
    assert counted[0] == 1


def test_a_changed_scalar_or_shape_or_dtype_is_optimised_again(device, counted):
    a = np.ones((64, 96), np.float32)
    with hm.device(device):
        for scale in (1.0, 0.5):
            np.testing.assert_allclose(_w4(a, a, scale).numpy(), np.full(64, 96 * scale ** 2))
        _w4(a[:32], a[:32]).numpy()
        if device.supports(np.dtype("float64")):
            _w4(a.astype(np.float64), a.astype(np.float64)).numpy()
    assert counted[0] == (4 if device.supports(np.dtype("float64")) else 3)


def test_a_slice_of_a_large_input_folded_at_build_is_never_reused(counted):
    """Folding reads a large constant's slice into a small constant: such a graph is
    optimised at each compute, so new contents are seen."""
    for fill in (1.0, 5.0):
        big = np.full(4096, fill, np.float32)
        out = (hm.asarray(big, copy=True)[:8] * 2).numpy()
        np.testing.assert_array_equal(out, np.full(8, 2 * fill, np.float32))
    assert counted[0] == 2


def test_equal_copied_inputs_keep_their_merging(device, counted):
    """CSE merges copied constants of equal content; a template made where they were equal
    is not used where they differ."""
    a = np.arange(64 * 96, dtype=np.float32).reshape(64, 96)
    with hm.device(device):
        same = hm.asarray(a, copy=True) - hm.asarray(a, copy=True)
        np.testing.assert_array_equal(same.numpy(), np.zeros_like(a))
        other = hm.asarray(a, copy=True) - hm.asarray(a + 1, copy=True)
        np.testing.assert_array_equal(other.numpy(), np.full_like(a, -1.0))
    assert counted[0] == 2


def test_a_rebuilt_graph_names_its_kernels_after_the_new_expression(counted):
    a = np.ones((64, 96), np.float32)
    target, options = compile_target(), current_options()
    fresh = _w4(a, a)
    graph_cache.optimized([fresh._node], target, options)
    again = _w4(a, a)
    (fused,) = graph_cache.optimized([again._node], target, options)
    expression_keys = {n.key for n in toposort([again._node])}
    assert fused.op == "fused_reduce" and counted[0] == 1
    assert set(origin(fused)) <= expression_keys and again._node.key in origin(fused)


def test_an_image_pipeline_reuses_its_optimisation(device, counted):
    rng = np.random.default_rng(1)
    with hm.device(device):
        for _ in range(2):
            img = rng.random((1, 48, 64), dtype=np.float32)
            fused = hm.sobel_edge_detection(hm.gaussian_blur(hm.asarray(img), 5, 1.0)).numpy()
            with hm.options(fuse=False):  # a large copied input is left open like a borrowed one
                ref = hm.sobel_edge_detection(hm.gaussian_blur(hm.asarray(img, copy=True), 5, 1.0))
                np.testing.assert_allclose(fused, ref.numpy(), rtol=1e-4, atol=1e-5)
    assert counted[0] == 2  # once fused, once not
