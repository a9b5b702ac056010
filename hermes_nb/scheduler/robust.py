"""Estimators that a few wild timings cannot move: low median, trimmed mean, Theil–Sen line.

Timings are skewed one way: a busy machine makes a run slower, never faster. So with
one or two samples the minimum is used, and from three on the (low) median.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def robust_time(samples: Sequence[float]) -> float:
    """A duration estimate from repeated runs: min of ≤2 samples, else the low median.

    >>> robust_time([1.0, 10.0])
    1.0
    >>> robust_time([1.0, 1.1, 0.9, 12.0])
    1.0
    """
    if not samples:
        raise ValueError("robust_time: no samples")
    ordered = sorted(samples)
    if len(ordered) <= 2:
        return ordered[0]
    return ordered[(len(ordered) - 1) // 2]


def trimmed_mean(samples: Sequence[float], trim: float = 0.2) -> float:
    """Mean after dropping the lowest and highest ``trim`` fraction of the samples.

    >>> trimmed_mean([1.0, 1.0, 1.0, 1.0, 100.0])
    1.0
    """
    if not samples:
        raise ValueError("trimmed_mean: no samples")
    ordered = sorted(samples)
    cut = int(len(ordered) * trim)
    kept = ordered[cut : len(ordered) - cut] or ordered
    return sum(kept) / len(kept)


@dataclass(frozen=True)
class LinearFit:
    """``seconds ≈ intercept + slope × x`` where ``x`` is the named predictor (bytes or flops)."""

    intercept: float
    slope: float
    predictor: str = "nbytes"
    points: int = 0
    error: float = 0.0  #: median relative error on the points it was fitted to

    def __call__(self, x: float) -> float:
        return self.intercept + self.slope * x


def theil_sen(xs: Sequence[float], ys: Sequence[float], predictor: str = "nbytes") -> LinearFit | None:
    """Robust line through ``(x, y)`` points: median pairwise slope, median intercept.

    Both are clamped at zero (no negative latency or cost per byte). Needs two
    distinct ``x`` values; returns ``None`` otherwise.

    >>> fit = theil_sen([1, 2, 3, 4, 5], [2.0, 3.0, 4.0, 50.0, 6.0])
    >>> round(fit.intercept, 6), round(fit.slope, 6)
    (1.0, 1.0)
    """
    n = len(xs)
    slopes = [
        (ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(n) for j in range(i + 1, n) if xs[j] != xs[i]
    ]
    if not slopes:
        return None
    slopes.sort()
    slope = max(0.0, _median(slopes))
    intercept = _median([y - slope * x for x, y in zip(xs, ys)])
    if intercept < 0.0:  # a negative latency means the cost is proportional: refit through 0
        intercept = 0.0
        slope = _median([y / x for x, y in zip(xs, ys) if x > 0] or [0.0])
    errors = [abs(intercept + slope * x - y) / y for x, y in zip(xs, ys) if y > 0]
    return LinearFit(intercept, slope, predictor, n, _median(errors) if errors else 0.0)


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
