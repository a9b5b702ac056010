"""Softmax fusion (``compiler/fuse_softmax.py``) on every device: the stable softmax is
one ``fused_softmax`` kernel where the device lists it, its values equal to SciPy's and,
on ``cpu:0``, bit for bit to the unfused kernels' where NumPy runs it (a small one over
the last axes is a Numba kernel); a pattern any part of which is read elsewhere is left to
the other passes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.special import softmax as scipy_softmax

import hermes_nb as hm
from hermes_nb.compiler import optimize
from hermes_nb.ir.node import toposort

SOFTMAX_OPS = ("max", "subtract", "exp", "sum", "divide")


def _softmax(t: hm.Tensor, axis: Any) -> hm.Tensor:
    shifted = hm.exp(t - hm.max(t, axis=axis, keepdims=True))
    return shifted / hm.sum(shifted, axis=axis, keepdims=True)


def _softmax_kernels(plan: Any) -> int:
    return sum(k.name.startswith("hermes-fused_softmax-") for k in plan.kernels)


def _run(device: Any, x: np.ndarray, axis: Any, fuse: bool = True) -> tuple[np.ndarray, Any]:
    with hm.device(device), hm.options(fuse=fuse):
        out = _softmax(hm.asarray(x), axis)
        return out.numpy(), out.explain()


@pytest.mark.parametrize(("shape", "axis"), [((8, 10), 1), ((8, 10), 0), ((8, 10), -1),
                                             ((4, 6, 5), (1, 2)), ((3, 200), 1)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_is_one_kernel_where_the_device_fuses_it(device: Any, shape: tuple[int, ...],
                                                        axis: Any, dtype: str) -> None:
    if dtype == "float64" and not device.fp64:
        pytest.skip(f"{device.id} has no fp64")
    x = np.random.default_rng(len(shape)).normal(0, 4, shape).astype(dtype)
    got, plan = _run(device, x, axis)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, scipy_softmax(x.astype(np.float64), axis=axis), rtol=rtol,
                               atol=rtol * 1e-2)
    assert got.dtype == x.dtype
    unfused, _ = _run(device, x, axis, fuse=False)
    if "fused_softmax" in device.fused_ops:
        assert [k.ops for k in plan.kernels] == [SOFTMAX_OPS], plan
        (kernel,) = plan.kernels
        if device.kind == "cpu" and kernel.source is None:
            np.testing.assert_array_equal(got, unfused)  # the unfused kernels' NumPy steps
        elif device.kind == "cpu":  # a small softmax over the last axes: one Numba kernel
            assert "softmax over rows" in kernel.source
    else:
        assert len(plan.kernels) > 1 and not _softmax_kernels(plan), plan
    np.testing.assert_allclose(got, unfused, rtol=rtol, atol=rtol * 1e-2)


@pytest.mark.parametrize("shape", [(2, 1024), (2, 1025), (1, 1), (3, 5, 7)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_softmax_kernel_up_to_its_size(shape: tuple[int, ...], dtype: str) -> None:
    """cpu:0's Numba kernel runs softmaxes over the last axes up to ``SOFTMAX_JIT_MAX``
    elements, NumPy beyond; both give SciPy's values, over one axis or the last two."""
    from hermes_nb.backends.cpu.softmax import SOFTMAX_JIT_MAX

    x = np.random.default_rng(sum(shape)).normal(0, 5, shape).astype(dtype)
    axis = (1, 2) if len(shape) == 3 else -1
    got, plan = _run("cpu:0", x, axis)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, scipy_softmax(x.astype(np.float64), axis=axis), rtol=rtol,
                               atol=rtol * 1e-2)
    (kernel,) = plan.kernels
    assert (kernel.source is not None) == (x.size <= SOFTMAX_JIT_MAX)


def test_softmax_of_extreme_values(device: Any) -> None:
    """Large logits do not overflow, -inf takes no share, a row of -inf or with a NaN is NaN
    (as NumPy's steps give it)."""
    x = np.array([[1e4, 1e4 - 1, -1e4, 0.0], [-np.inf, 0.0, 1.0, -np.inf],
                  [-np.inf] * 4, [1.0, np.nan, 2.0, 3.0]], np.float32)
    got, _ = _run(device, x, 1)
    with np.errstate(all="ignore"):
        shifted = np.exp(x - x.max(axis=1, keepdims=True))
        expected = shifted / shifted.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-30)
    assert np.isnan(got[2:]).all() and got[1, 0] == 0.0


def test_a_softmax_whose_parts_are_read_elsewhere_is_left_to_the_other_passes(
        device: Any) -> None:
    x = np.random.default_rng(5).normal(size=(6, 7)).astype(np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        shifted = hm.exp(t - hm.max(t, axis=1, keepdims=True))
        total = hm.sum(shifted, axis=1, keepdims=True)
        probs, kept = hm.compute(shifted / total, shifted)
        plan = (shifted / total + shifted).explain()
    np.testing.assert_allclose(probs.numpy(), scipy_softmax(x, axis=1), rtol=1e-5)
    np.testing.assert_allclose(kept.numpy(), np.exp(x - x.max(axis=1, keepdims=True)),
                               rtol=1e-6)
    assert not _softmax_kernels(plan), plan


@pytest.mark.parametrize("case", ["other axes", "no keepdims", "another max"])
def test_near_softmaxes_are_not_fused(case: str) -> None:
    """The compiler takes only the whole pattern: the max and the sum over the same axes,
    both keeping dims, the max of the same tensor."""
    t = hm.asarray(np.ones((4, 5), np.float32))
    other = hm.asarray(np.zeros((4, 5), np.float32))
    if case == "other axes":
        shifted = hm.exp(t - hm.max(t, axis=0, keepdims=True))
        out = shifted / hm.sum(shifted, axis=1, keepdims=True)
    elif case == "no keepdims":
        shifted = hm.exp(t - hm.max(t, axis=1, keepdims=True))
        out = shifted / hm.reshape(hm.sum(shifted, axis=1), (4, 1))
    else:
        shifted = hm.exp(t - hm.max(other, axis=1, keepdims=True))
        out = shifted / hm.sum(shifted, axis=1, keepdims=True)
    assert "fused_softmax" not in {n.op for n in toposort(optimize([out.node]))}
    np.testing.assert_allclose(out.numpy()[0], np.full(5, 0.2), rtol=1e-6)


@pytest.mark.parametrize("axis", [-1, 0, (0, 2), None], ids=str)
def test_nn_softmax_is_the_fused_kernel(device: Any, axis: Any) -> None:
    from hermes_nb.api.nn import softmax

    x = np.random.default_rng(7).normal(0, 3, (3, 4, 5)).astype(np.float32)
    with hm.device(device):
        out = softmax(hm.asarray(x), axis=axis)
        plan = out.explain()
        got = out.numpy()
    np.testing.assert_allclose(got, scipy_softmax(x.astype(np.float64), axis=axis),
                               rtol=1e-5, atol=1e-7)
    if "fused_softmax" in device.fused_ops:
        assert _softmax_kernels(plan) == len(plan.kernels) == 1, plan


@pytest.mark.parametrize(("x", "axis", "error", "message"), [
    (np.arange(4), -1, TypeError, "softmax: x must be a real floating-point tensor, got int64"),
    (np.ones((2, 3), np.float32), 2, ValueError,
     r"softmax: axis 2 is out of range for a 2-d tensor \(allowed: -2 to 1\)"),
    (np.ones((2, 0), np.float32), 1, ValueError,
     r"softmax: axis=1 of a tensor of shape \(2, 0\) is empty"),
    (np.ones(3, np.float32), "last", TypeError, "softmax: axis must be None, an int or a tuple"),
], ids=["integers", "axis out of range", "empty axis", "axis not an int"])
def test_nn_softmax_refuses_bad_input_when_built(x: np.ndarray, axis: Any, error: type,
                                                 message: str) -> None:
    from hermes_nb.api.nn import softmax

    with pytest.raises(error, match=message):
        softmax(hm.asarray(x), axis=axis)
