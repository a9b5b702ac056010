"""Data that ships with Hermes: a synthetic 1024×1024 grayscale test image.

``sample.png`` is made by ``make_sample.py`` next to it (shapes, gradients, thin lines, a
radial star, text and a little noise), so it carries no third-party licence.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SAMPLE_PATH = Path(__file__).with_name("sample.png")


def sample_image() -> np.ndarray:
    """The sample image as float32 ``(1024, 1024)`` in ``[0, 1]`` (needs Pillow)."""
    from PIL import Image

    with Image.open(SAMPLE_PATH) as img:
        pixels = np.asarray(img.convert("L"), dtype=np.float32)
    return pixels / np.float32(255.0)
