"""Live load figures: queue length, busy fraction, memory in use, and the sampler."""

from __future__ import annotations

import threading
import time

import numpy as np

import hermes_nb as hm


def test_load_reports_every_device():
    snaps = hm.load()
    assert [s.device for s in snaps] == [d.id for d in hm.devices()]
    for s in snaps:
        assert s.queued >= 0 and 0.0 <= s.busy_fraction <= 1.0 and s.memory_in_use >= 0


def test_queue_and_busy_fraction_follow_running_work(device):
    release = threading.Event()
    started = threading.Event()

    def blocker():
        started.set()
        release.wait(10)

    before = device.load().completed
    first = device.submit(blocker, estimate_s=2.0)
    second = device.submit(lambda: None, estimate_s=0.5)
    assert started.wait(10)
    time.sleep(0.3)
    busy = device.load()
    assert busy.queued == 2
    assert busy.busy_fraction > 0.2
    assert 0.5 < busy.expected_free_s <= 2.5  # running estimate left + the queued one
    release.set()
    first.result(10)
    second.result(10)
    idle = device.load()
    assert idle.queued == 0 and idle.expected_free_s == 0.0
    assert idle.completed == before + 2


def test_memory_in_use_counts_resident_results(device):
    with hm.device(device):
        # a computed result lives in memory the device allocated (a wrapped input may not)
        kept = (hm.asarray(np.ones((256, 256), np.float32)) + 1.0).compute()
    if device.kind == "cpu":
        assert device.load().memory_in_use == 0  # NumPy memory is not pooled
    else:
        assert device.load().memory_in_use >= kept.node.nbytes


def test_sampler_keeps_a_short_history_and_stops():
    with hm.LoadSampler(interval_s=0.05, history_s=0.5) as sampler:
        time.sleep(0.4)
        assert sampler.running
    assert not sampler.running
    for device in hm.devices():
        history = sampler.history[device.id]
        assert 3 <= len(history) <= 10
        stamps = [s.timestamp for s in history]
        assert stamps == sorted(stamps)
