"""Co-execution: a kernel split by rows across devices gives the single-device result."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi

import hermes_nb as hm
from hermes_nb.runtime import last_profile

pytestmark = pytest.mark.skipif(len(hm.devices()) < 2, reason="co-execution needs two devices")

MODES = {"reflect101": "mirror", "reflect": "reflect", "replicate": "nearest",
         "constant": "constant"}


def _tile_devices() -> set[str]:
    return {k.device for k in last_profile().kernels if "[" in k.key}


def test_elementwise_split_matches_numpy():
    x = np.random.default_rng(0).standard_normal((301, 64)).astype(np.float32)
    row = np.linspace(-1, 1, 64, dtype=np.float32)
    with hm.options(coexec="always"):
        out = (hm.exp(hm.asarray(x) * 0.5) + hm.asarray(row)).numpy()
    np.testing.assert_allclose(out, np.exp(x * np.float32(0.5)) + row, rtol=1e-6, atol=1e-6)
    assert _tile_devices() == {d.id for d in hm.devices()}


@pytest.mark.parametrize("border", list(MODES))
def test_stencil_split_with_halo_matches_scipy(border):
    img = np.random.default_rng(1).random((97, 80)).astype(np.float32)
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5, border=border),
                          hm.sobel_edge_detection(border=border))
    with hm.options(coexec="always"):
        out = pipeline(img).numpy()
    assert len(_tile_devices()) >= 2
    g = hm.image.gaussian_kernel(5)
    mode = MODES[border]
    blurred = ndi.correlate(img.astype(np.float64), np.outer(g, g), mode=mode)
    kx = np.outer([1, 2, 1], [-1, 0, 1])
    ref = np.hypot(ndi.correlate(blurred, kx, mode=mode), ndi.correlate(blurred, kx.T, mode=mode))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5 * ref.max())
    np.testing.assert_allclose(out, pipeline(img).numpy(), rtol=1e-5, atol=1e-6 * ref.max())


def test_batched_stencil_splits_by_image():
    imgs = np.random.default_rng(2).random((40, 12, 9)).astype(np.float32)
    with hm.options(coexec="always"):
        out = hm.gaussian_blur(imgs, kernel_size=3).numpy()
    assert len(_tile_devices()) >= 2
    g = hm.image.gaussian_kernel(3)
    ref = ndi.correlate(imgs, np.outer(g, g)[None], mode="mirror")
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_matmul_split_by_rows():
    rng = np.random.default_rng(3)
    a = rng.random((96, 40)).astype(np.float32)
    b = rng.random((40, 30)).astype(np.float32)
    with hm.options(coexec="always"):
        out = (hm.asarray(a) @ hm.asarray(b)).numpy()
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    assert len(_tile_devices()) >= 2


def test_small_kernels_are_not_split_by_default():
    x = np.ones((64, 64), np.float32)
    (hm.asarray(x) * 2 + 1).numpy()
    assert _tile_devices() == set()


def test_pinned_kernels_are_never_split():
    x = np.ones((64, 64), np.float32)
    with hm.options(coexec="always"), hm.device("cpu:0"):
        (hm.asarray(x) * 2 + 1).numpy()
    assert _tile_devices() == set()


def test_bad_coexec_option():
    with pytest.raises(ValueError, match="coexec"), hm.options(coexec="sometimes"):
        pass
