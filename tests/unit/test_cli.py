"""``hermes devices`` lists every device with its name and memory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hermes_nb as hm
from hermes_nb import cli

REPO = Path(__file__).resolve().parents[2]

# a memory size as a person reads it ("23.5 GiB", "512 MiB", "8 GB") or a raw byte count
MEMORY = re.compile(r"\d+(\.\d+)?\s*(B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB|bytes)\b")


def _check_listing(out: str) -> None:
    lines = out.splitlines()
    devices = hm.devices()
    assert devices, "hm.devices() is empty: cpu:0 must always exist"
    assert devices[0].id == "cpu:0"
    for dev in devices:
        matching = [ln for ln in lines if re.search(rf"(^|\s){re.escape(dev.id)}\b", ln)]
        assert len(matching) == 1, f"expected one line for {dev.id} in:\n{out}"
        line = matching[0]
        assert dev.name in line, f"{dev.id}'s name {dev.name!r} missing from {line!r}"
        assert MEMORY.search(line) or str(dev.memory_bytes) in line, (
            f"{dev.id}'s memory missing from {line!r}"
        )
    assert "cpu:0" in out
    if any(d.kind == "opencl" for d in devices):
        assert "opencl:0" in out
    # nothing listed that hm.devices() does not report
    listed = set(re.findall(r"\b(?:cpu|opencl|cuda):\d+\b", out))
    assert listed == {d.id for d in devices}


def test_devices_via_main(capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["devices"])
    assert rc in (0, None)
    captured = capsys.readouterr()
    _check_listing(captured.out)


def test_devices_memory_matches_device_info(capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_nb.backends.memory import memory_bytes

    cli.main(["devices"])
    out = capsys.readouterr().out
    for dev in hm.devices():
        line = next(ln for ln in out.splitlines() if dev.id in ln)
        numbers = [float(m.group(0).split()[0]) for m in re.finditer(r"\d+(?:\.\d+)?\s*GiB", line)]
        # shown in GiB: the one memory figure (the host's for a device in host memory, whose
        # driver's figure follows the memory free when the process started)
        assert numbers, line
        assert any(abs(n - memory_bytes(dev) / 2**30) <= 0.06 for n in numbers), line


def test_devices_via_python_m() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_nb.cli", "devices"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    _check_listing(proc.stdout)


def test_unknown_command_fails() -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["no-such-command"])
    assert info.value.code not in (0, None)


def test_no_command_fails() -> None:
    with pytest.raises(SystemExit) as info:
        cli.main([])
    assert info.value.code not in (0, None)


def test_devices_all_lists_the_left_out_drivers_with_their_reason(capsys):
    from hermes_nb.backends.opencl.device import hidden_devices

    assert cli.main(["devices", "--all"]) == 0
    out = capsys.readouterr().out
    for hidden in hidden_devices():
        assert f"{hidden.name}  driver={hidden.driver}  not used: {hidden.reason}" in out


def test_cache_clear_empties_every_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    for folder in ("numba", "pocl/abc", "selftest"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "entry").write_bytes(b"x" * 1000)
    assert cli.main(["cache", "info"]) == 0
    assert str(tmp_path / "selftest") in capsys.readouterr().out
    assert cli.main(["cache", "clear"]) == 0
    assert "removed 3 cache(s)" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
