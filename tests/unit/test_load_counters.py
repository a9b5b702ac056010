"""The busy fraction of a device's load counters: the share of the last second its kernels
ran, however many ran, checked against the sum over every run with a controlled clock."""

from __future__ import annotations

import numpy as np
import pytest

from hermes_nb.backends import load
from hermes_nb.backends.load import WINDOW_S, LoadCounters


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _expected_busy(runs: list[tuple[float, float]], now: float) -> float:
    since = now - WINDOW_S
    busy = sum(min(end, now) - max(start, since) for start, end in runs if end > since)
    return min(1.0, busy / WINDOW_S)


@pytest.mark.parametrize("kernels", [1, 50, 10_000])
def test_busy_fraction_is_the_share_of_the_window_spent_running(monkeypatch, kernels) -> None:
    clock = _Clock()
    monkeypatch.setattr(load.time, "perf_counter", clock)
    counters, runs = LoadCounters(), []
    rng = np.random.default_rng(kernels)
    # runs of random lengths with random gaps, over about three windows
    for length, gap in zip(rng.uniform(0, 3 * WINDOW_S / kernels, kernels),
                           rng.uniform(0, 3 * WINDOW_S / kernels, kernels)):
        clock.now += gap
        counters.submitted(0.0)
        counters.started(0.0)
        start = clock.now
        clock.now += length
        counters.finished()
        runs.append((start, clock.now))
        if len(runs) % max(1, kernels // 7) == 0:  # snapshots in between see the same
            got = counters.snapshot("cpu:0", 0).busy_fraction
            assert got == pytest.approx(_expected_busy(runs, clock.now), abs=1e-9)
    for later in (0.0, 0.3 * WINDOW_S, 2 * WINDOW_S):  # the window slides past the runs
        clock.now = runs[-1][1] + later
        got = counters.snapshot("cpu:0", 0).busy_fraction
        assert got == pytest.approx(_expected_busy(runs, clock.now), abs=1e-9)
    assert counters.snapshot("cpu:0", 0).completed == kernels


def test_a_running_kernel_counts_until_now(monkeypatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(load.time, "perf_counter", clock)
    counters = LoadCounters()
    counters.submitted(0.5)
    counters.started(0.5)
    clock.now += 0.25 * WINDOW_S
    snap = counters.snapshot("cpu:0", 0)
    assert snap.busy_fraction == pytest.approx(0.25)
    assert snap.queued == 1 and snap.expected_free_s == pytest.approx(0.5 - 0.25 * WINDOW_S)
