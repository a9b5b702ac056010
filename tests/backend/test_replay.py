"""Replays of planned graphs (``runtime/replay.py``) on every device: the kernels a compute
runs, new inputs at each run, borrowed constants read again, results of their own."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.runtime.replay import replay_of


def test_a_replay_computes_what_a_compute_does(device: Any) -> None:
    x = np.random.default_rng(0).random((64, 48), dtype=np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        out = (hm.exp(t) * 2.0 + hm.sum(t, axis=0)) @ hm.asarray(np.eye(48, dtype=np.float32))
    expected = out.numpy()
    with hm.device(device):
        replay = replay_of([out.node], [t.node])
    assert replay is not None and replay.kernels >= 2
    (got,) = replay.run([x])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    y = x[::-1].copy()
    (other,) = replay.run([y])
    np.testing.assert_allclose(other, (np.exp(y) * 2 + y.sum(axis=0)), rtol=1e-5)


def test_a_replay_gives_ieee_results_without_warnings(device: Any) -> None:
    """Division by zero, the log of a negative and overflow give inf and NaN with no
    RuntimeWarning, as a compute does: a run on one device sets NumPy's error state once
    for all its steps, which then launch without their own."""
    x = np.array([1.0, -1.0, 0.0, 3e38], np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        out = hm.log(t) + t / hm.asarray(np.zeros(4, np.float32)) + t * 10.0
        expected = out.numpy()
        replay = replay_of([out.node], [t.node])
    with np.errstate(all="ignore"):
        reference = np.log(x) + x / np.float32(0) + x * np.float32(10)
    np.testing.assert_array_equal(expected, reference)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,) = replay.run([x])
    np.testing.assert_array_equal(got, reference)
    assert np.geterr()["divide"] == "warn"  # the caller's state as it was


def _placed(device: Any, pinned: bool) -> Any:
    """``hm.device(device)`` where ``pinned``; else no device: the scheduler places the
    kernels, and the compiler folds unpinned constant work (small inputs are constants)."""
    return hm.device(device) if pinned else contextlib.nullcontext()


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "placed"])
def test_small_inputs_are_never_folded_or_merged(device: Any, pinned: bool) -> None:
    """Inputs of a few elements (which a compute folds into constants), inputs equal or the
    same array when the replay is planned (which a compute merges) and a 0-d input (which a
    kernel could take as a literal) all take each run's values."""
    a = np.ones(16, np.float32)
    with _placed(device, pinned):
        t, u, k = hm.asarray(a), hm.asarray(a), hm.asarray(np.float32(2.0))
        out = (t - u) * k + hm.exp(t)
        replay = replay_of([out.node], [t.node, u.node, k.node])
    assert replay is not None and replay.kernels >= 1
    x, y = np.arange(16, dtype=np.float32), np.full(16, 3.0, np.float32)
    for scale in (np.float32(5.0), np.float32(-1.0)):
        (got,) = replay.run([x, y, np.asarray(scale)])
        np.testing.assert_allclose(got, (x - y) * scale + np.exp(x), rtol=1e-6)


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "placed"])
def test_small_borrowed_constants_are_read_at_every_run(device: Any, pinned: bool) -> None:
    """A borrowed constant of a few elements is read again at each run, never folded into
    the plan with the value it had then."""
    x, scale = np.ones(8, np.float32), np.full(8, 2.0, np.float32)
    with _placed(device, pinned):
        t = hm.asarray(x)
        replay = replay_of([(t * hm.asarray(scale) + 1.0).node], [t.node])
    assert replay.run([x])[0].tolist() == [3.0] * 8
    scale[:] = 3.0
    assert replay.run([2 * x])[0].tolist() == [7.0] * 8


def test_a_borrowed_constant_is_read_at_every_run(device: Any) -> None:
    """A constant made from the caller's array without a copy reads it again, as a compute
    would; an input shaped otherwise than the replay's is refused."""
    x, scale = np.ones(8, np.float32), np.full(8, 2.0, np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        out = t * hm.asarray(scale)
        replay = replay_of([out.node], [t.node])
    assert replay.run([x])[0].tolist() == [2.0] * 8
    scale[:] = 3.0
    assert replay.run([x])[0].tolist() == [3.0] * 8
    with pytest.raises(ValueError, match=r"replay input 0: expected float32\[8\], got float32\[4\]"):
        replay.run([x[:4]])


def test_an_output_that_is_a_view_of_the_input_is_its_own_copy(device: Any) -> None:
    x = np.arange(12, dtype=np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        replay = replay_of([hm.reshape(t, (3, 4)).node], [t.node])
    (got,) = replay.run([x])
    assert got.tolist() == x.reshape(3, 4).tolist() and not np.shares_memory(got, x)


def test_a_computed_tensor_in_the_graph_is_read_where_it_lives(device: Any) -> None:
    x = np.arange(6, dtype=np.float32)
    with hm.device(device):
        (kept,) = hm.compute(hm.asarray(x) * 3.0)
        t = hm.asarray(x)
        replay = replay_of([(t + kept).node], [t.node])
    assert replay is not None
    assert replay.run([x])[0].tolist() == (4 * x).tolist()
    assert replay.run([x + 1])[0].tolist() == (4 * x + 1).tolist()


def test_arrays_the_builder_owns_are_uploaded_once(device: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``owned``: the graph's other borrowed arrays (a model's weights) are uploaded when the
    replay is made; a run uploads its inputs alone."""
    x, weights = np.ones(8, np.float32), np.full(8, 2.0, np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        out = t * hm.asarray(weights)
        replays = {owned: replay_of([out.node], [t.node], owned=owned) for owned in (False, True)}
    from hermes_nb.backends import get_device

    dev = get_device(str(device.id))
    uploads: list[int] = []
    real = dev.from_host
    monkeypatch.setattr(dev, "from_host", lambda a: uploads.append(a.size) or real(a))
    for owned, replay in replays.items():
        uploads.clear()
        assert replay.run([x])[0].tolist() == [2.0] * 8
        assert len(uploads) == (1 if owned else 2), owned


def test_a_conv_block_replays_with_its_plan_made_once(device: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A conv + bias + ReLU + max pool block (one fused kernel where the device fuses it)
    replays what a compute gives for new inputs; on ``cpu:0`` its launchers were made with
    the replay, so a run plans no window and looks up no kernel."""
    from hermes_nb.api.nn import conv, pool
    from hermes_nb.backends.cpu import window

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 20, 20), dtype=np.float32)
    w = rng.standard_normal((8, 3, 3, 3), dtype=np.float32)
    bias = rng.standard_normal((1, 8, 1, 1), dtype=np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        out = pool(hm.maximum(conv(t, w, pads=(1, 1, 1, 1)) + bias, 0.0), "max", (2, 2),
                   (2, 2))
        expected = out.numpy()
        replay = replay_of([out.node], [t.node], owned=True)
    np.testing.assert_array_equal(replay.run([x])[0], expected)
    y = x[::-1].copy()
    with hm.device(device):
        again = pool(hm.maximum(conv(hm.asarray(y), w, pads=(1, 1, 1, 1)) + bias, 0.0),
                     "max", (2, 2), (2, 2)).numpy()

    def planned(*args: Any) -> None:
        raise AssertionError("a replay's run planned a window")

    monkeypatch.setattr(window, "_plan", planned)
    monkeypatch.setattr(window, "_conv_kernel", planned)
    np.testing.assert_array_equal(replay.run([y])[0], again)


@pytest.mark.parametrize("spatial", [(12, 12), (20,)], ids=["2-D", "1-D"])
def test_a_replayed_conv_reads_its_borrowed_weights_and_bias_anew(device: Any, spatial: Any,
                                                                  monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """The weights and a per-plane epilogue input changed in place between runs give the
    new values (each run uploads a borrowed array again; cpu:0's launcher reuses what it
    made of its inputs only for the very same array objects, and then only views)."""
    from hermes_nb.api.nn import conv
    from hermes_nb.backends import cpu

    monkeypatch.setattr(cpu.device, "WINDOW_MIN_WORK", 0)  # the generated kernel, any size
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, *spatial), dtype=np.float32)
    w = rng.standard_normal((4, 3, *(3,) * len(spatial)), dtype=np.float32)
    bias = rng.standard_normal((1, 4, *(1,) * len(spatial)), dtype=np.float32)
    with hm.device(device):
        t = hm.asarray(x)
        out = conv(t, w) + bias
        replay = replay_of([out.node], [t.node])
    np.testing.assert_allclose(replay.run([x])[0], out.numpy(), rtol=1e-5, atol=1e-5)
    w *= -0.5
    bias += 1.0
    with hm.device(device):
        changed = (conv(hm.asarray(x), w) + bias).numpy()
    np.testing.assert_allclose(replay.run([x])[0], changed, rtol=1e-5, atol=1e-5)
