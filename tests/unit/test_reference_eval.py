"""``runtime.reference.evaluate``: a tensor's value computed on the host op by op."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.runtime.reference import evaluate

cv2 = pytest.importorskip("cv2", reason="OpenCV is the reference for the image ops")


def test_elementwise_reduction_and_matmul_match_numpy() -> None:
    rng = np.random.default_rng(0)
    a = rng.random((64, 48), dtype=np.float32)
    b = rng.random((48, 32), dtype=np.float32)
    t = hm.relu(hm.asarray(a) @ hm.asarray(b) - 10.0).sum(axis=1) + hm.arange(64)
    np.testing.assert_allclose(evaluate(t.node), np.maximum(a @ b - 10.0, 0).sum(axis=1) + np.arange(64),
                               rtol=1e-5)


def test_image_pipeline_matches_opencv_and_the_devices() -> None:
    image = np.random.default_rng(1).random((96, 80), dtype=np.float32)
    t = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(hm.asarray(image))
    blur = cv2.GaussianBlur(image, (5, 5), 0)
    want = np.hypot(cv2.Sobel(blur, cv2.CV_32F, 1, 0, ksize=3), cv2.Sobel(blur, cv2.CV_32F, 0, 1, ksize=3))
    np.testing.assert_allclose(evaluate(t.node), want, rtol=1e-4, atol=1e-5)
    for device in hm.devices():
        with hm.device(device):
            on_device = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(image)
        np.testing.assert_allclose(evaluate(on_device.node), on_device.numpy(), rtol=1e-4, atol=1e-5)


def test_sources_on_other_devices_and_random_numbers() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for device in hm.devices():
        resident = hm.asarray(x).to(device).compute()  # a buffer living on that device
        np.testing.assert_array_equal(evaluate((resident * 2).node), x * 2)
    r = hm.Tensor.random((4, 5), seed=7)
    np.testing.assert_array_equal(evaluate(r.node), r.numpy())


def test_non_tensors_are_refused() -> None:
    with pytest.raises(TypeError, match=r"evaluate: expected a graph Node .*, got ndarray"):
        evaluate(np.ones(3))
