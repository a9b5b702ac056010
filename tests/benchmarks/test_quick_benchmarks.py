"""The benchmark command runs end to end in quick mode and every candidate's result
matches the reference (speed is reported by the benchmark, never asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_benchmarks_quick_mode(tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--repeats", "1", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    results = figures["results"]
    workloads = {r["workload"] for r in results}
    assert workloads == {"W1", "W2", "W3", "W4"}
    hermes = [r for r in results if r["candidate"].startswith("hermes ")]
    assert {r["candidate"] for r in hermes} >= {"hermes cpu:0", "hermes auto"}
    for r in results:
        assert r["max_error"] <= 1e-3, r
        assert r["in_out_median_s"] > 0 and r["in_out_ratio"] > 0
    for r in hermes:  # both columns: NumPy in→out, and resident on the device
        assert r["resident_median_s"] > 0 and r["resident_ratio"] > 0
    memory_bound = [r for r in results if r["workload"] in ("W2", "W4")]
    assert all(r["memory_limit_in_out"] > 0 for r in memory_bound)
    assert figures["machine"]["triad"]["gb_per_s"] > 0
    assert figures["machine"]["cores"] >= 1 and figures["machine"]["numpy"]
    assert "WRONG RESULT" not in proc.stdout


@pytest.mark.timeout(600)
def test_compile_time_benchmark_runs(tmp_path):
    out = tmp_path / "compile.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.compile_time", "--size", "64", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())
    assert {r["device"] for r in rows} >= {"cpu:0"}
    for r in rows:
        assert r["run_s"] > 0 and r["import_s"] > 0
        assert r["compile_s"] == r["compile_s"]  # measured, not NaN


@pytest.mark.timeout(600)
def test_notebook_benchmark_runs(tmp_path):
    out = tmp_path / "notebook.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.notebook", "--size", "64", "--repeats", "2",
         "--monitor-seconds", "1.5", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    assert figures["magic"]["plain_ms"] > 0 and figures["magic"]["magic_ms"] > 0
    assert figures["monitor"]["updates_per_s"] > 0 and figures["monitor"]["core_percent"] >= 0
    assert "overhead" in proc.stdout and "% of one core" in proc.stdout
    assert figures["magic"]["report_ms"] > 0 and "%%hermes --report" in proc.stdout
    # what the report adds, per clock, and the machine it was measured on
    assert {"report_added_wall_us", "report_added_cpu_percent",
            "report_added_thread_us", "report_made_us", "report_shown_with_us",
            "report_shown_without_us"} <= set(figures["magic"])
    assert "AVX-512" in proc.stdout and figures["machine"]["cores"] >= 1


@pytest.mark.timeout(600)
def test_log_overhead_benchmark_runs(tmp_path):
    out = tmp_path / "log.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.log_overhead", "--size", "64", "--rounds", "6",
         "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())["log"]
    assert figures["kernels"] == 5 and figures["rounds"] == 6
    for clock in ("wall", "cpu", "thread"):
        assert figures[clock]["off_ms"] > 0 and figures[clock]["ratio"] > 0
        low, high = figures[clock]["interval_us"]
        assert low <= figures[clock]["added_us"] <= high
    assert figures["per_run_buffer_us"] > 0 and "ratio" in proc.stdout and "AVX-512" in proc.stdout


@pytest.mark.timeout(600)
def test_onnx_cnn_benchmark_runs() -> None:
    """The CNN benchmark's runs agree with onnxruntime and its blocks take the runs a
    block's length needs (here 0.01 s of batch-2 runs: more than ``--repeat`` asks)."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.onnx_cnn", "--batch", "2", "--repeat", "6",
         "--block-seconds", "0.01"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    err = float(proc.stdout.split("max |hermes - onnxruntime| = ")[1].split(")")[0])
    runs = int(proc.stdout.split("medians of ")[1].split(" runs")[0])
    assert err < 1e-4 and runs > 6, proc.stdout
    assert "ratio session/ort" in proc.stdout and "AVX-512" in proc.stdout
