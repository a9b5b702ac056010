"""The cluster benchmark runs end to end in quick mode, prints its three figures and every
result matches its reference (speed is reported by the benchmark, never asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("cv2")
pytest.importorskip("psutil")

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_cluster_benchmark_quick_mode(tmp_path):
    out = tmp_path / "cluster.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.cluster", "--quick", "--repeats", "1",
         "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    for name in ("blur_sobel", "large_input", "per_kernel"):
        assert figures[name]["max_error"] <= 1e-3, figures[name]
        assert all(t > 0 for t in figures[name]["times_s"].values())
    assert figures["blur_sobel"]["cluster_over_local"] > 0
    assert set(figures["large_input"]["scheduler_growth_bytes"]) == {"hermes", "scatter+submit"}
    for line in ("hermes cluster / hermes local", "hermes / scatter+submit",
                 "hermes kernel / dask task"):
        assert line in proc.stdout
