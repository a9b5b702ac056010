"""The hotspot report of a real run on every device: its times add up to the profile's, each
kernel's bytes are its inputs' and output's, the fusion figures are the unfused plan's,
and the device's peaks are measured quickly and kept."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.api.plan import fusion_plans
from hermes_nb.runtime import last_profile
from hermes_nb.runtime import peaks as peaks_mod

N = 1 << 18


def _run(device) -> tuple[hm.Tensor, hm.Tensor, hm.Tensor, hm.Plan]:
    x_host = np.random.default_rng(0).random(N, dtype=np.float32)
    m_host = np.ones((64, 64), np.float32)
    with hm.device(device.id):
        x = hm.asarray(x_host)
        y = hm.exp(x) * 2.0 + 1.0
        s = hm.sum(y * y)
        m = hm.asarray(m_host) @ hm.asarray(m_host) + 1.0
    unfused, _ = fusion_plans(y, s, m)
    hm.compute(y, s, m)  # first run: compiles
    hm.compute(y, s, m)
    return y, s, m, unfused


def test_report_matches_the_profile(device) -> None:
    *_, unfused = _run(device)
    profile = last_profile()
    assert profile is not None and profile.plan is not None
    r = hm.report(profile, measure=False)
    kernels, transfers = profile.snapshot()
    assert r.wall_s == pytest.approx(profile.seconds)
    assert r.run_s == pytest.approx(sum(k.seconds for k in kernels))
    assert sum(k.run_s for k in r.kernels) == pytest.approx(r.run_s)
    assert r.compile_s == pytest.approx(sum(c.seconds for c in profile.compile_events()))
    assert r.copy_s == pytest.approx(sum(t.seconds for t in transfers))
    for d in r.devices:
        assert d.idle_s == pytest.approx(max(r.wall_s - d.busy_s, 0.0))
        assert d.run_s == pytest.approx(sum(k.seconds for k in kernels if k.device == d.device))
    totals = [k.total_s for k in r.kernels]
    assert totals == sorted(totals, reverse=True)
    assert sum(o.seconds for o in r.ops) == pytest.approx(sum(totals))
    sizes = _output_bytes(profile.plan)
    for k in r.kernels:
        planned = next(p for p in profile.plan.kernels if p.name == k.key)
        inputs = sum(sizes.get(i, 0) for i in planned.inputs)
        if all(i in sizes for i in planned.inputs):  # inputs that are kernels of this run
            assert k.nbytes == sizes[k.key] + inputs
        assert k.nbytes == planned.bytes_moved
        assert k.gb_per_s == pytest.approx(k.nbytes / k.run_s / 1e9)
    matmul = next(k for k in r.kernels if k.op in ("matmul", "fused_matmul"))
    assert matmul.flops is not None and matmul.flops >= 2 * 64 ** 3
    f = r.fusion
    assert f is not None and f.unknown == 0
    assert (f.unfused_kernels, f.unfused_bytes) == (
        len(unfused), sum(k.bytes_moved for k in unfused.kernels))
    # a device that fuses nothing (the reference plug-in) runs the unfused plan itself
    assert f.kernels == len(profile.plan)
    assert f.kernels_saved >= 2 if device.fused_ops else f.kernels_saved == 0
    assert "peak unknown" in str(r)


def _output_bytes(plan: hm.Plan) -> dict[str, int]:
    return {k.name: math.prod(k.shape) * np.dtype(k.dtype).itemsize for k in plan.kernels}


def test_peaks_are_measured_quickly_and_kept(device, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    peaks_mod.forget()
    try:
        peak = peaks_mod.device_peaks([device.id])[device.id]
        assert peak is not None and peak.gb_per_s and peak.gflop_per_s
        assert peak.measured_s < 3.0  # under a second on an idle machine; a build included
        assert (tmp_path / peaks_mod.FILE).exists()
        _run(device)
        r = hm.report()
        assert r.peaks[device.id] == peaks_mod.Peak(device.id, peak.gb_per_s, peak.gflop_per_s,
                                                    peak.identity)  # read, not measured again
        assert any(k.roofline is not None for k in r.kernels)
    finally:
        peaks_mod.forget()
