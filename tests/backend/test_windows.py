"""The window ops (``hermes_nb.api.nn``: ``conv`` and ``pool``) on every device, against
PyTorch's convolutions and a loop-by-loop NumPy pool; ``cpu:0`` through its generated
kernels (the JIT size lowered to 0), with and without an epilogue fused in; and the errors
bad geometry gets when the graph is built."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.api.nn import conv, pool
from hermes_nb.backends.cpu import device as cpu_device

torch = pytest.importorskip("torch")
F = torch.nn.functional

# (x shape, weight shape, strides, pads (begins, then ends), dilations, groups)
CONV_CASES = {
    "3x3 same": ((3, 3, 32, 32), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    # cpu:0's jobs cover blocks of images: 8 in blocks of 2 on two threads, 3 on one
    "batch of 8": ((8, 3, 32, 32), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "grouped strided dilated": ((2, 8, 16, 16), (16, 4, 3, 3), (2, 2), (2, 2, 2, 2), (2, 2), 2),
    "asymmetric": ((2, 4, 9, 11), (6, 2, 3, 2), (2, 1), (1, 0, 2, 1), (1, 2), 2),
    # widths a multiple of the column stride (each phase gathered for the whole plane),
    # with a padding that starts the phases on an odd column
    "stride 2 odd padding": ((1, 2, 10, 14), (3, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    "stride 3 uneven padding": ((2, 3, 12, 12), (4, 3, 3, 3), (3, 3), (1, 2, 0, 1), (1, 1), 1),
    # rows dilated by half the stride: the taps read row phases 0 and 2 of 4, every column
    # phase (the kernel copies only the phases some tap reads)
    "half the row phases read": ((2, 3, 19, 13), (4, 3, 3, 3), (4, 2), (1, 2, 0, 1), (2, 1), 1),
    "7x7 rows looped": ((1, 2, 40, 23), (3, 2, 7, 7), (3, 1), (3, 3, 3, 3), (1, 1), 1),
    "1x1 depthwise": ((2, 6, 10, 10), (6, 1, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 6),
    "1-D": ((2, 3, 17), (4, 3, 5), (2,), (2, 1), (1,), 1),
    "3-D": ((1, 2, 5, 6, 7), (3, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1, 0, 1, 1), (2, 1, 1), 1),
}


@pytest.fixture
def generated(monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu:0 runs its generated window kernels from any size (NumPy below the JIT size)."""
    monkeypatch.setattr(cpu_device, "WINDOW_MIN_WORK", 0)


def _torch_pads(pads: tuple[int, ...]) -> list[int]:
    r = len(pads) // 2  # F.pad takes (begin, end) from the last axis backwards
    return [p for i in reversed(range(r)) for p in (pads[i], pads[i + r])]


def _torch_conv(x: np.ndarray, w: np.ndarray, strides: Any, pads: Any, dilations: Any,
                groups: int) -> np.ndarray:
    fn = (F.conv1d, F.conv2d, F.conv3d)[x.ndim - 3]
    padded = F.pad(torch.from_numpy(x), _torch_pads(pads))
    return fn(padded, torch.from_numpy(w), stride=strides, dilation=dilations,
              groups=groups).numpy()


def _loop_pool(x: np.ndarray, mode: str, kernel: Any, strides: Any, pads: Any,
               dilations: Any) -> np.ndarray:
    """Each window's max or sum over the positions inside ``x``, one output at a time."""
    r = len(kernel)
    out_spatial = [(x.shape[2 + i] + pads[i] + pads[i + r] - (kernel[i] - 1) * dilations[i]
                    - 1) // strides[i] + 1 for i in range(r)]
    out = np.empty((*x.shape[:2], *out_spatial), x.dtype)
    for index in itertools.product(*(range(s) for s in out.shape)):
        n, c, spot = index[0], index[1], index[2:]
        values = []
        for offset in itertools.product(*(range(k) for k in kernel)):
            at = [spot[i] * strides[i] + offset[i] * dilations[i] - pads[i] for i in range(r)]
            if all(0 <= a < x.shape[2 + i] for i, a in enumerate(at)):
                values.append(x[(n, c, *at)])
        out[index] = (np.max(values) if mode == "max" else np.sum(values, dtype=x.dtype)) \
            if values else (-np.inf if mode == "max" else 0)
    return out


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_matches_torch(device: Any, generated: None, case: str) -> None:
    xs, ws, strides, pads, dilations, groups = CONV_CASES[case]
    rng = np.random.default_rng(len(case))
    x, w = (rng.normal(size=s).astype(np.float32) for s in (xs, ws))
    with hm.device(device):
        got = conv(x, w, strides, pads, dilations, groups).numpy()
    expected = _torch_conv(x, w, strides, pads, dilations, groups)
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_image_blocks_share_the_work_out_evenly() -> None:
    """A cpu:0 conv job covers a block of images: of the blocks that keep its run in cache,
    the largest that shares the jobs out most evenly between Numba's threads."""
    from hermes_nb.backends.cpu.window import _block, _busiest_thread

    # 34 x 34 phases (a padded 32 x 32 plane): 3 images a run at most; 2 jobs a block
    assert _block(34, 34, 8, 2, 1) == 3  # one thread: the longest runs
    assert _busiest_thread(8, 3, 2, 2) == 9  # jobs of 3, 3, 3 | 3, 2, 2 images
    assert _busiest_thread(8, 2, 2, 2) == 8
    assert _block(34, 34, 8, 2, 2) == 2
    assert _block(34, 34, 6, 2, 2) == 3  # 3, 3 | 3, 3
    assert _block(34, 34, 7, 1, 2) == 2  # 2, 2 | 2, 1: 4 against 3, as with blocks of 1
    assert _block(34, 34, 1, 4, 2) == 1
    assert _block(400, 400, 8, 2, 2) == 1  # a plane beyond a run's size: one image a job


def test_a_layer_run_again_reads_only_its_new_input(device: Any, generated: None) -> None:
    """cpu:0 keeps each layer's padded scratch copy for its next run: a second run with
    other values (and another layer in between) still sees zeros where the padding is."""
    x_shape, w_shape, strides, pads, dilations, groups = CONV_CASES["grouped strided dilated"]
    rng = np.random.default_rng(4)
    w = rng.normal(size=w_shape).astype(np.float32)
    for _ in range(2):
        for scale in (1.0, -3.0):
            x = (scale * rng.normal(size=x_shape) + 10).astype(np.float32)  # no zero near
            with hm.device(device):
                got = conv(x, w, strides, pads, dilations, groups).numpy()
            np.testing.assert_allclose(got, _torch_conv(x, w, strides, pads, dilations, groups),
                                       rtol=1e-5, atol=1e-4)
        other = rng.normal(size=(2, 8, 12, 12)).astype(np.float32)  # another layout between
        with hm.device(device):
            conv(other, w, strides, pads, dilations, groups).numpy()


def test_conv_float64(device: Any, generated: None) -> None:
    if not device.fp64:
        pytest.skip(f"{device.id} has no fp64")
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(2, 4, 12, 12)), rng.normal(size=(6, 2, 3, 3))
    with hm.device(device):
        got = conv(x, w, (1, 2), (1, 1, 0, 2), (2, 1), 2).numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _torch_conv(x, w, (1, 2), (1, 1, 0, 2), (2, 1), 2),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["max", "sum"])
@pytest.mark.parametrize("geometry", [((2, 2), (2, 2), (0, 0, 0, 0), (1, 1)),
                                      ((3, 2), (2, 1), (1, 0, 2, 1), (1, 2)),
                                      ((3,), (2,), (1, 1), (2,))])
def test_pool_matches_loops(device: Any, generated: None, mode: str, geometry: Any) -> None:
    kernel, strides, pads, dilations = geometry
    shape = (2, 3, 9, 11)[:2 + len(kernel)]
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    x.flat[7] = np.nan  # a max propagates NaN like NumPy's maximum; a sum too
    with hm.device(device):
        got = pool(x, mode, kernel, strides, pads, dilations).numpy()
    expected = _loop_pool(x, mode, kernel, strides, pads, dilations)
    assert np.isnan(got).any()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16"])
def test_max_pool_of_integers_never_takes_the_padding(device: Any, generated: None,
                                                       dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.random.default_rng(2).integers(info.min, info.max, (1, 2, 6, 7), dtype=dtype,
                                          endpoint=True)
    with hm.device(device):
        got = pool(x, "max", (3, 3), (2, 2), (1, 1, 2, 2)).numpy()
    np.testing.assert_array_equal(got, _loop_pool(x, "max", (3, 3), (2, 2), (1, 1, 2, 2),
                                                  (1, 1)))


def test_conv_epilogue_fuses_on_cpu(device: Any, generated: None) -> None:
    """Bias, a gain, an activation and a full-size operand after the conv: one kernel on
    cpu:0 (the epilogue at the copy-out), the same values everywhere."""
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(2, 3, 14, 14)).astype(np.float32), \
        rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    bias = rng.normal(size=(1, 4, 1, 1)).astype(np.float32)
    other = rng.normal(size=(2, 4, 14, 14)).astype(np.float32)
    expected = _torch_conv(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    for gain in (1.5, -0.5):  # a parameter, not a new kernel
        with hm.device(device):
            y = hm.maximum(conv(x, w, pads=(1, 1, 1, 1)) * gain + bias, 0.25) - other
            plan = y.explain()
            got = y.numpy()
        np.testing.assert_allclose(got, np.maximum(expected * gain + bias, 0.25) - other,
                                   rtol=1e-5, atol=1e-5)
    if device.id == "cpu:0":
        assert len(plan.kernels) == 1 and plan.kernels[0].name.startswith("hermes-fused_conv")


def test_conv_epilogue_may_change_the_dtype(device: Any, generated: None) -> None:
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(1, 2, 8, 8)).astype(np.float32), \
        rng.normal(size=(3, 2, 3, 3)).astype(np.float32)
    with hm.device(device):
        got = (conv(x, w, pads=(1, 1, 1, 1)) > 0.5).numpy()
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, _torch_conv(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) > 0.5)


def test_bad_geometry_is_refused_when_the_graph_is_built() -> None:
    x, w = hm.ones((1, 4, 8, 8)), hm.ones((6, 2, 3, 3))
    with pytest.raises(ValueError, match=r"conv: input channels 4, weights \(6, 2, 3, 3\) and "
                                         r"groups=1 do not agree"):
        conv(x, w)
    with pytest.raises(ValueError, match=r"conv: strides=\(0, 1\) must be 2 integers >= 1"):
        conv(x, w, strides=(0, 1), groups=2)
    with pytest.raises(ValueError, match=r"conv: pads=\(1, 1\) must be 4 integers >= 0"):
        conv(x, w, pads=(1, 1), groups=2)
    with pytest.raises(ValueError, match="larger than the padded input"):
        conv(x, hm.ones((6, 2, 9, 9)), groups=2)
    with pytest.raises(TypeError, match="conv: x and the weights must share one float dtype, "
                                        "got int32 and int32"):
        conv(hm.ones((1, 4, 8, 8), dtype=hm.int32), hm.ones((6, 2, 3, 3), dtype=hm.int32),
             groups=2)
    with pytest.raises(ValueError, match=r"pool: mode='mean' is not one of \('max', 'sum'\)"):
        pool(x, "mean", (2, 2))
    with pytest.raises(ValueError, match=r"pool: kernel=\(2,\) must be 2 integers >= 1"):
        pool(x, "max", (2,))
    with pytest.raises(ValueError, match=r"pool: strides=\(1.5, 'a'\) must be 2 integers"):
        pool(x, "max", (2, 2), (1.5, "a"))


def test_explain_shows_the_window_kernels_cpu_builds(generated: None) -> None:
    """cpu:0's explain() gives the generated module of a conv with its epilogue and pool,
    and of a pool alone: the source that runs."""
    x, w = np.ones((2, 3, 12, 12), np.float32), np.ones((4, 3, 3, 3), np.float32)
    with hm.device("cpu:0"):
        y = pool(hm.relu(conv(x, w, pads=(1, 1, 1, 1)) + 1.0), "max", (2, 2), (2, 2))
        z = pool(x, "sum", (3, 3), (1, 1))
        y_plan, z_plan = y.explain(), z.explain()
    (fused,), (alone,) = y_plan.kernels, z_plan.kernels
    assert fused.ops == ("conv", "add", "relu", "pool")
    assert "def kernel(x, w, out, xq, groups" in fused.source and "fma_(" in fused.source
    assert "max pool" in fused.source and "POH, POW = out.shape[2], out.shape[3]" in fused.source
    assert "def kernel(x, out, ph, pw)" in alone.source
    np.testing.assert_array_equal(y.numpy(), np.full((2, 4, 6, 6), 28.0, np.float32))
    np.testing.assert_array_equal(z.numpy(), np.full((2, 3, 10, 10), 9.0, np.float32))


@pytest.mark.parametrize("generate", [True, False], ids=["generated", "numpy"])
@pytest.mark.parametrize("mode", ["max", "sum"])
def test_a_pool_after_conv_and_activation_joins_the_conv(
        device: Any, monkeypatch: pytest.MonkeyPatch, generate: bool, mode: str) -> None:
    """conv + bias + ReLU + pool is one kernel on cpu:0 (the full-size result never written
    out), with the values of the unfused ops, generated or through NumPy."""
    monkeypatch.setattr(cpu_device, "WINDOW_MIN_WORK", 0 if generate else 1 << 40)
    rng = np.random.default_rng(6)
    x, w = rng.normal(size=(3, 4, 15, 13)).astype(np.float32), \
        rng.normal(size=(6, 2, 3, 3)).astype(np.float32)
    bias = rng.normal(size=(1, 6, 1, 1)).astype(np.float32)
    with hm.device(device):
        y = pool(hm.relu(conv(x, w, pads=(1, 1, 1, 1), groups=2) + bias), mode, (3, 2),
                 (2, 2), (1, 0, 2, 1))
        plan = y.explain()
        got = y.numpy()
    activated = np.maximum(_torch_conv(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 2) + bias, 0)
    np.testing.assert_allclose(got, _loop_pool(activated, mode, (3, 2), (2, 2), (1, 0, 2, 1),
                                               (1, 1)), rtol=1e-5, atol=1e-5)
    if device.id == "cpu:0":
        assert len(plan.kernels) == 1 and plan.kernels[0].ops[-1] == "pool"


@pytest.mark.parametrize("mode", ["max", "sum"])
@pytest.mark.parametrize("width, taps", [(12, 3), (13, 3), (12, 2)],
                         ids=["whole-windows", "odd-padded-width", "odd-last-column"])
def test_a_tiling_pool_joined_to_a_conv(device: Any, generated: None, mode: str, width: int,
                                        taps: int) -> None:
    """A 2 x 2 pool of stride 2 after conv + ReLU: on cpu:0 one loop over each image where
    the padded rows hold whole windows, row by row where not (an odd padded width), an odd
    last column or row dropped; a NaN spreads through the max as through NumPy's."""
    rng = np.random.default_rng(width + taps)
    x = rng.normal(size=(2, 3, 9, width)).astype(np.float32)
    x[1, 2, 4, 5] = np.nan
    w = rng.normal(size=(4, 3, taps, taps)).astype(np.float32)
    pads = (1, 1, 1, 1) if taps == 3 else (0, 0, 0, 0)
    with hm.device(device):
        y = pool(hm.relu(conv(x, w, pads=pads)), mode, (2, 2), (2, 2))
        plan, got = y.explain(), y.numpy()
    activated = np.maximum(_torch_conv(x, w, (1, 1), pads, (1, 1), 1), 0)
    expected = _loop_pool(activated, mode, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1))
    assert np.isnan(expected).any()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    if device.id == "cpu:0":
        (fused,) = plan.kernels
        assert "for q in range(OH * HW):" in fused.source


def test_a_conv_read_twice_keeps_its_pool_apart(device: Any, generated: None) -> None:
    rng = np.random.default_rng(7)
    x, w = rng.normal(size=(2, 3, 10, 10)).astype(np.float32), \
        rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    with hm.device(device):
        activated = hm.relu(conv(x, w, pads=(1, 1, 1, 1)))
        pooled = pool(activated, "max", (2, 2), (2, 2))
        both = hm.compute(activated, pooled)
    expected = np.maximum(_torch_conv(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1), 0)
    np.testing.assert_allclose(both[0].numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(both[1].numpy(), _loop_pool(expected, "max", (2, 2), (2, 2),
                                                           (0, 0, 0, 0), (1, 1)),
                               rtol=1e-5, atol=1e-5)


def test_a_pool_joins_a_1d_conv(device: Any, generated: None) -> None:
    rng = np.random.default_rng(8)
    x, w = rng.normal(size=(2, 3, 21)).astype(np.float32), \
        rng.normal(size=(4, 3, 5)).astype(np.float32)
    with hm.device(device):
        got = pool(hm.relu(conv(x, w, (2,), (2, 2))), "max", (3,), (2,), (1, 1)).numpy()
    activated = np.maximum(_torch_conv(x, w, (2,), (2, 2), (1,), 1), 0)
    np.testing.assert_allclose(got, _loop_pool(activated, "max", (3,), (2,), (1, 1), (1,)),
                               rtol=1e-5, atol=1e-5)
