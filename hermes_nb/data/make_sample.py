"""Regenerate ``sample.png``: a synthetic 1024×1024 grayscale test image.

It has what image filters are judged on: smooth gradients, hard-edged shapes at several
angles, thin lines, a ring of fine radial detail, text and a little noise. Deterministic:
``python -m hermes_nb.data.make_sample`` writes the same pixels every time (for one Pillow).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

SIZE = 1024
OUT = Path(__file__).with_name("sample.png")


def _background(n: int) -> np.ndarray:
    y, x = np.mgrid[0:n, 0:n] / (n - 1)
    sky = 0.25 + 0.45 * y  # vertical gradient, like light falling off
    hills = 0.08 * np.sin(9 * x + 2 * np.sin(5 * y)) * np.exp(-3 * (1 - y))
    return sky + hills


def _radial_star(n: int, cx: float, cy: float, radius: float, spokes: int) -> np.ndarray:
    y, x = np.mgrid[0:n, 0:n]
    r = np.hypot(x - cx, y - cy)
    theta = np.arctan2(y - cy, x - cx)
    inside = r < radius
    return np.where(inside, 0.5 + 0.5 * np.sign(np.sin(spokes * theta)), np.nan)


def render(n: int = SIZE, seed: int = 2024) -> np.ndarray:
    """The image as uint8 ``(n, n)``."""
    img = _background(n)
    star = _radial_star(n, 0.78 * n, 0.24 * n, 0.17 * n, 36)
    img = np.where(np.isnan(star), img, 0.15 + 0.7 * star)
    canvas = Image.fromarray(np.clip(img * 255, 0, 255).astype(np.uint8), "L")
    draw = ImageDraw.Draw(canvas)
    s = n / 1024
    draw.rectangle([80 * s, 560 * s, 380 * s, 900 * s], fill=215)
    draw.ellipse([430 * s, 600 * s, 700 * s, 870 * s], fill=40)
    draw.polygon([(760 * s, 900 * s), (980 * s, 900 * s), (870 * s, 560 * s)], fill=180)
    draw.regular_polygon((230 * s, 730 * s, 110 * s), 6, rotation=15, fill=90)
    for i in range(12):  # thin lines at several angles: edge orientation tests
        a = np.deg2rad(i * 15)
        x0, y0 = 300 * s, 300 * s
        draw.line([x0, y0, x0 + 220 * s * np.cos(a), y0 - 220 * s * np.sin(a)],
                  fill=250 if i % 2 else 10, width=max(1, int((1 + i % 3) * s)))
    for k in range(1, 9):  # a bar chart of widening stripes
        x = (560 + 18 * k) * s
        draw.rectangle([x, 420 * s, x + k * s, 520 * s], fill=0)
    try:
        font = ImageFont.load_default(size=int(56 * s))
    except TypeError:  # Pillow < 10.1: the small bitmap font
        font = ImageFont.load_default()
    draw.text((60 * s, 40 * s), "Hermes 1024", fill=20, font=font)
    draw.text((60 * s, 950 * s), "blur  sobel  edges", fill=240, font=font)
    out = np.asarray(canvas, dtype=np.float64)
    noise = np.random.default_rng(seed).normal(0.0, 2.0, out.shape)  # sensor-like grain
    return np.clip(np.round(out + noise), 0, 255).astype(np.uint8)


if __name__ == "__main__":
    Image.fromarray(render(), "L").save(OUT, optimize=True)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB)")
