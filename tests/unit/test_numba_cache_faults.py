"""Damaged Numba cache files are dropped and rebuilt in a new process, never a lasting error."""

from __future__ import annotations

import os
import subprocess
import sys

CHILD = """
import numpy as np, hermes_nb as hm
x = np.linspace(-1, 1, (1 << 17) + 3)
with hm.device("cpu:0"):
    y = (hm.exp(hm.asarray(x) * 0.75) + 1.5).numpy()
assert np.allclose(y, np.exp(x * 0.75) + 1.5, rtol=1e-12)
print("ok")
"""


def _child(cache: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_NB_CACHE_DIR": cache}
    return subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                          timeout=240)


def test_truncated_numba_cache_files_are_rebuilt(tmp_path):
    first = _child(str(tmp_path))
    assert first.returncode == 0, first.stderr[-2000:]
    cached = [p for p in tmp_path.rglob("__pycache__/*") if p.suffix in {".nbi", ".nbc"}]
    assert cached, "Numba cached nothing"
    for path in cached:
        path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])
    second = _child(str(tmp_path))
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.strip().endswith("ok")
    assert "failed to load; dropped" in second.stderr
    third = _child(str(tmp_path))  # and the rebuilt entries load cleanly
    assert third.returncode == 0 and "dropped" not in third.stderr, third.stderr[-2000:]
