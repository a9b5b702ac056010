"""The DLPack exchange benchmark runs end to end and every exchange keeps the data pointer
(its time is reported by the benchmark, never asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_dlpack_exchange_benchmark_shares_memory(tmp_path: Path) -> None:
    out = tmp_path / "dlpack.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.dlpack_exchange", "--mib", "1", "--repeat", "5",
         "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())["figures"]
    assert {"np.from_dlpack(t)", "hm.from_dlpack(ndarray)"} <= set(figures)
    for name, row in figures.items():
        assert row["same_pointer"], name
        assert row["median_us"] > 0
