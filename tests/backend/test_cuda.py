"""A representative subset of the backend tests on ``cuda:0`` only.

The full backend suite already runs on every device (cuda included) through the
``device`` fixture; this module makes sure a CUDA run exercises the GPU-specific
paths (big reductions, tiled matmul, stencils, transfers between devices) and
reports clearly why it is skipped on machines without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

import hermes_nb as hm

pytestmark = pytest.mark.gpu

cupy = pytest.importorskip("cupy", reason="needs a CUDA GPU: no cuda device found (cupy missing or no GPU)")


@pytest.fixture
def gpu(cuda_device):
    return cuda_device


def test_cuda_device_info(gpu):
    assert gpu.kind == "cuda"
    assert gpu.id.startswith("cuda:")
    assert str(gpu) == gpu.id
    index = int(gpu.id.split(":")[1])
    _free, total = cupy.cuda.Device(index).mem_info
    assert 0 < gpu.memory_bytes <= total * 1.01
    assert gpu.compute_units >= 1
    assert gpu.fp64 is True  # every CUDA GPU has (possibly slow) fp64


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_cuda_elementwise(gpu, run_on, assert_close, sample, dtype):
    x = sample((33, 65), dtype, low=1, high=9, seed=1)
    y = sample((65,), dtype, low=1, high=9, seed=2)

    def build(a, b):
        return (a * b - a // b + a % b) * 2, hm.maximum(a, b) > 4, hm.sqrt(a)

    got = run_on(gpu, build, x, y)
    assert_close(got[0], (x * y - x // y + x % y) * 2)
    assert_close(got[1], np.maximum(x, y) > 4)
    assert_close(got[2], np.sqrt(x), loose=True)


def test_cuda_nan_inf(gpu, run_on, assert_close):
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5], dtype=np.float32)
    x, y = v[:, None], v[None, :]
    with np.errstate(all="ignore"):
        assert_close(run_on(gpu, hm.divide, x, y), x / y)
        assert_close(run_on(gpu, hm.maximum, x, y), np.maximum(x, y))
        assert_close(run_on(gpu, hm.exp, v), np.exp(v), loose=True)
    assert_close(run_on(gpu, lambda t: t.argmax(), v), np.argmax(v))


def test_cuda_reductions_1000x1000(gpu, run_on, assert_close):
    x = np.random.default_rng(3).random((1000, 1000), dtype=np.float32)
    x64 = x.astype(np.float64)
    got = run_on(gpu, lambda t: (t.sum(), t.sum(axis=0), t.mean(axis=1), t.max(), t.argmax()), x)
    np.testing.assert_allclose(float(got[0]), x64.sum(), rtol=1e-5)
    np.testing.assert_allclose(got[1], x64.sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(got[2], x64.mean(axis=1), rtol=1e-5)
    assert_close(got[3], x.max())
    assert_close(got[4], np.argmax(x))
    ones = np.full((1000, 1000), 0.1, dtype=np.float32)
    np.testing.assert_allclose(float(run_on(gpu, lambda t: t.sum(), ones)), 1e5, rtol=1e-4)
    ints = np.full((1000, 100), 2**31 - 1, dtype=np.int32)
    assert_close(run_on(gpu, lambda t: t.sum(), ints), ints.sum(), dtype="int64")


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_cuda_matmul(gpu, run_on, assert_close, sample, dtype):
    a = sample((3, 130, 70), dtype, low=-3, high=3, seed=4)
    b = sample((70, 45), dtype, low=-3, high=3, seed=5)
    got = run_on(gpu, hm.matmul, a, b)
    if dtype == "float32":
        assert_close(got, a @ b, rtol=1e-4, atol=1e-3)
    else:
        assert_close(got, a @ b)
    v = sample((70,), dtype, low=-3, high=3, seed=6)
    assert_close(run_on(gpu, hm.matmul, b.T.copy(), v), b.T @ v, loose=True)


@pytest.mark.parametrize("border", ["reflect101", "reflect", "replicate", "constant"])
def test_cuda_image(gpu, run_on, assert_close, border):
    mode = {"reflect101": "mirror", "reflect": "reflect", "replicate": "nearest"}.get(border, "constant")
    x = np.random.default_rng(7).random((2, 3, 40, 37), dtype=np.float32)
    k = np.random.default_rng(8).standard_normal((5, 3))
    got = run_on(gpu, lambda t: hm.conv2d(t, k, border=border), x)
    ref = ndimage.correlate(x.astype(np.float64), k[None, None], mode=mode, cval=0.0)
    assert_close(got, ref.astype(np.float32), loose=True)

    sx = np.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
    pipe = hm.compose(hm.gaussian_blur(kernel_size=9, border=border), hm.sobel_edge_detection(border=border))
    got = run_on(gpu, pipe, x)
    s = 0.3 * ((9 - 1) * 0.5 - 1) + 0.8
    g = np.exp(-((np.arange(9) - 4.0) ** 2) / (2 * s * s))
    g /= g.sum()
    blurred = ndimage.correlate(x.astype(np.float64), np.outer(g, g)[None, None], mode=mode, cval=0.0)
    gx = ndimage.correlate(blurred, sx[None, None], mode=mode, cval=0.0)
    gy = ndimage.correlate(blurred, sx.T[None, None], mode=mode, cval=0.0)
    assert_close(got, np.hypot(gx, gy).astype(np.float32), rtol=1e-4, atol=1e-4)


def test_cuda_random_matches_cpu(gpu):
    cpu = next(d for d in hm.devices() if d.kind == "cpu")

    def draw(dev):
        with hm.device(dev):
            return hm.Tensor.random((128, 64), seed=11).numpy()

    np.testing.assert_array_equal(draw(gpu), draw(cpu))


def test_cuda_transfers_between_devices(gpu, assert_close):
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    on_gpu = hm.asarray(x).to(gpu)
    assert on_gpu.device == gpu.id
    with hm.device(gpu):
        y = on_gpu * 2 + 1
    for other in hm.devices():
        moved = y.to(other)
        assert moved.device == other.id
        with hm.device(other):
            z = moved.sum(axis=0)
        assert_close(z.numpy(), (x * 2 + 1).sum(axis=0))
    back = hm.asarray(np.ones(4)).to("cpu:0").to(gpu)
    with hm.device(gpu):
        w = back + y
    assert_close(w.numpy(), x * 2 + 2)
