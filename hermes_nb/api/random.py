"""Seeded random tensors, identical on every device for a given seed.

Values are drawn on the host with NumPy's Philox generator when the graph
runs, then moved to the device that needs them.
"""

from __future__ import annotations

import numpy as np

from hermes_nb.api.creation import ShapeLike, normalize_shape
from hermes_nb.api.graph import make_node
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes


def _fresh_seed() -> int:
    # drawn once at build time, so recomputing a graph gives the same values
    return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0])


def _random(op: str, distribution: str, shape: ShapeLike, dtype: object, seed: int | None,
            params: tuple[float, float]) -> Tensor:
    dims = normalize_shape(shape, op)
    dt = dtypes.as_dtype(dtype, op=op)
    if not dtypes.is_float(dt):
        raise TypeError(f"{op}: dtype must be float32 or float64, got {dt.name}")
    if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"{op}: seed must be a non-negative int, got {seed!r}")
    chosen = _fresh_seed() if seed is None else int(seed)
    return Tensor(make_node("random", (), dims, dt, distribution=distribution, seed=chosen,
                            params=params))


def uniform(shape: ShapeLike, low: float = 0.0, high: float = 1.0, dtype: object = "float32",
            seed: int | None = None) -> Tensor:
    """Uniform values in ``[low, high)``; ``low > high`` is refused when the graph is built."""
    lo, hi = _real("random.uniform", "low", low), _real("random.uniform", "high", high)
    if lo > hi:
        raise ValueError(f"random.uniform: low must be <= high, got low={low!r}, high={high!r}")
    return _random("random.uniform", "uniform", shape, dtype, seed, (lo, hi))


def _real(op: str, name: str, value: object) -> float:
    """``value`` as a finite float, or ``TypeError``/``ValueError`` naming ``op`` and ``name``."""
    if not isinstance(value, (int, float, np.integer, np.floating)) \
            or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a real number, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{op}: {name} must be a finite number, got {value!r}")
    return float(value)


def normal(shape: ShapeLike, loc: float = 0.0, scale: float = 1.0, dtype: object = "float32",
           seed: int | None = None) -> Tensor:
    """Normally distributed values with mean ``loc`` and standard deviation ``scale``."""
    mean, spread = _real("random.normal", "loc", loc), _real("random.normal", "scale", scale)
    if spread < 0:
        raise ValueError(f"random.normal: scale must be >= 0, got {scale}")
    return _random("random.normal", "normal", shape, dtype, seed, (mean, spread))
