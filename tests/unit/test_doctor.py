"""``hermes doctor`` on a machine where the self-test disabled a device, and its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hermes_nb import doctor


def _candidates():
    cl = pytest.importorskip("pyopencl", reason="needs pyopencl to fake an OpenCL verdict")
    from hermes_nb.backends.opencl.drivers import Candidate

    try:
        platforms = cl.get_platforms()
    except cl.Error:
        pytest.skip("needs an OpenCL platform to fake its verdict")
    return [Candidate(i, j, p, d) for i, p in enumerate(platforms) for j, d in enumerate(p.get_devices())]


def test_doctor_reports_a_device_its_self_test_disabled(tmp_path):
    from hermes_nb.backends.opencl.drivers import fingerprint

    verdicts = tmp_path / "selftest"
    verdicts.mkdir()
    for c in _candidates():
        fp = fingerprint(c)
        (verdicts / f"{fp}.json").write_text(json.dumps(
            {"fingerprint": fp, "healthy": False, "reasons": ["float32x16: crashed (SIGSEGV)"]}))
    env = {**os.environ, "HERMES_NB_CACHE_DIR": str(tmp_path), "HERMES_OPENCL_ALL_DRIVERS": "0"}
    env.pop("POCL_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "doctor"], env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "opencl:0" not in out  # disabled: not used, not checked
    assert "(not used)" in out and "self-test failed: float32x16: crashed (SIGSEGV)" in out
    assert "cpu:0      ok" in out and "1 of 1 device(s) healthy" in out
    assert "selftest" in out  # the caches and their sizes


def test_doctor_fails_when_no_device_runs_the_pipeline(monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(doctor, "check_pipeline", lambda device: "wrong result (max relative error 1)")
    assert doctor.main(out=lines.append) == 1
    assert lines[-1].strip() == "no device can run the default pipeline"
    assert any("FAIL: wrong result" in line for line in lines)
