"""The values of the IR's ``random`` source op: seeded draws with NumPy's Philox generator,
the same on every device for a given seed (devices upload the host draw)."""

from __future__ import annotations

import numpy as np


def draw(distribution: str, shape: tuple[int, ...], dtype: np.dtype, seed: int,
         params: tuple[float, float]) -> np.ndarray:
    """The host values of a ``random`` node."""
    rng = np.random.Generator(np.random.Philox(seed))
    a, b = params
    if distribution == "uniform":
        values = rng.random(shape, dtype=dtype) if (a, b) == (0.0, 1.0) else \
            rng.uniform(a, b, shape).astype(dtype)
    else:
        values = rng.normal(a, b, shape).astype(dtype)
    return np.array(values, dtype=dtype, order="C").reshape(shape)
