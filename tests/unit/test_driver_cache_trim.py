"""The OpenCL driver caches are kept in bounds: unused folders removed, the least recently
used programs evicted with the build markers that vouch for them, never a recent program,
never a folder another process holds, never a folder Hermes does not own."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hermes_nb import cli
from hermes_nb.backends.opencl import cache_trim
from hermes_nb.backends.opencl.cache_lock import MARKERS_DIR, OWNED_FILE, CacheLock

DAY = 86400.0
NOW = time.time()


def _program(folder: Path, relative: str, age_days: float, size: int = 1000) -> Path:
    """A PoCL program entry: bitcode, a kernel's machine code, ``last_accessed``."""
    entry = folder / relative
    (entry / "k" / "16-1-1-goffs0-smallgrid").mkdir(parents=True)
    (entry / "program.bc").write_bytes(b"b" * (size // 2))
    (entry / "k" / "16-1-1-goffs0-smallgrid" / "k.so").write_bytes(b"s" * (size - size // 2))
    (entry / "last_accessed").touch()
    when = NOW - age_days * DAY
    os.utime(entry / "last_accessed", (when, when))
    return entry


def _marker(folder: Path, key: str, *relatives: str) -> Path:
    marker = folder / MARKERS_DIR / "fingerprint" / f"{key}.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({f"{r}/program.bc": "digest" for r in relatives}))
    return marker


def _owned(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / OWNED_FILE).touch()
    return folder


def test_the_least_recently_used_programs_go_until_the_folder_fits(tmp_path):
    folder = _owned(tmp_path, "drivers")
    ages = {"AA/OLDEST": 9, "AB/OLDER": 5, "AC/OLD": 3, "AD/YESTERDAY": 2, "AE/TODAY": 0.1}
    for relative, age in ages.items():
        _program(folder, relative, age)
    vouching_for_evicted = _marker(folder, "build-a", "AA/OLDEST", "AE/TODAY")
    vouching_for_kept = _marker(folder, "build-b", "AD/YESTERDAY")

    report = cache_trim.trim_driver_caches(tmp_path, budget=2500, now=NOW)

    left = sorted(f"{p.parent.name}/{p.name}" for p in folder.glob("*/*") if p.is_dir()
                  and p.parent.name != MARKERS_DIR)
    assert left == ["AD/YESTERDAY", "AE/TODAY"]
    assert (report.evicted_programs, report.freed_bytes) == (3, 3000)
    assert not vouching_for_evicted.exists()
    assert vouching_for_kept.exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".hermes-trash-")]


def test_a_program_used_in_the_last_day_stays_over_budget(tmp_path):
    folder = _owned(tmp_path, "drivers")
    _program(folder, "AA/OLD", 3)
    _program(folder, "AB/RECENT", 0.5)
    report = cache_trim.trim_driver_caches(tmp_path, budget=0, now=NOW)
    assert report.evicted_programs == 1
    assert (folder / "AB/RECENT/program.bc").exists()


def test_an_unused_folder_goes_whole_but_not_this_processs_or_one_not_ours(tmp_path):
    idle = _owned(tmp_path, "uninstalled")
    _program(idle, "AA/X", cache_trim.IDLE_FOLDER_DAYS + 1)
    current = _owned(tmp_path, "current")
    _program(current, "AA/X", cache_trim.IDLE_FOLDER_DAYS + 1)
    foreign = tmp_path / "users-own"
    _program(foreign, "AA/X", cache_trim.IDLE_FOLDER_DAYS + 1)

    report = cache_trim.trim_driver_caches(tmp_path, current, budget=1 << 30, now=NOW)

    assert report.removed_folders == [idle] and not idle.exists()
    assert (current / "AA/X/program.bc").exists()
    assert (foreign / "AA/X/program.bc").exists()


def test_a_folder_another_build_holds_is_left_for_later(tmp_path):
    folder = _owned(tmp_path, "drivers")
    _program(folder, "AA/OLD", 9)
    with CacheLock(folder).shared():  # another open file: as another process's build
        report = cache_trim.trim_driver_caches(tmp_path, budget=0, now=NOW)
    assert report.busy_folders == [folder] and report.evicted_programs == 0
    assert (folder / "AA/OLD/program.bc").exists()
    assert cache_trim.trim_driver_caches(tmp_path, budget=0, now=NOW).evicted_programs == 1


def test_old_temporary_files_and_eviction_leftovers_go(tmp_path):
    folder = _owned(tmp_path, "drivers")
    old, fresh = folder / "tempfile_old", folder / "tempfile_new"
    old.touch()
    fresh.touch()
    os.utime(old, (NOW - 2 * DAY, NOW - 2 * DAY))
    os.utime(fresh, (NOW - 60, NOW - 60))
    leftover = folder / ".hermes-trash-1-2-AA"
    (leftover / "k").mkdir(parents=True)
    whole = _owned(tmp_path, ".hermes-trash-1-2-drivers")  # a driver folder half removed
    _program(whole, "AA/X", 0)
    report = cache_trim.trim_driver_caches(tmp_path, budget=1 << 30, now=NOW)
    assert not old.exists() and fresh.exists() and not leftover.exists()
    assert not whole.exists() and report.busy_folders == []


def test_a_trim_runs_once_a_day(tmp_path):
    current = _owned(tmp_path, "current")
    _program(current, "AA/X", 0)
    first = cache_trim.trim_in_background(current)
    assert first is not None
    first.join(10)
    assert cache_trim.trim_in_background(current) is None  # stamped today
    stamp = tmp_path / cache_trim.STAMP
    os.utime(stamp, (time.time() - 2 * DAY,) * 2)
    again = cache_trim.trim_in_background(current)
    assert again is not None
    again.join(10)


def test_cache_clear_leaves_a_driver_folder_in_use(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    busy = _owned(tmp_path / "pocl", "busy")
    _program(busy, "AA/X", 1)
    idle = _owned(tmp_path / "pocl", "idle")
    _program(idle, "AA/X", 1)
    (tmp_path / "numba").mkdir()
    with CacheLock(busy).shared():
        assert cli.main(["cache", "clear"]) == 1
    out = capsys.readouterr().out
    assert f"in use by another process, left as it is: {busy}" in out
    assert (busy / "AA/X/program.bc").exists()
    assert not idle.exists() and not (tmp_path / "numba").exists()


def test_cache_trim_command_reports_what_it_removed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    idle = _owned(tmp_path / "pocl", "idle")
    _program(idle, "AA/X", cache_trim.IDLE_FOLDER_DAYS + 5, size=2 << 20)
    assert cli.main(["cache", "trim"]) == 0
    assert "removed 1 unused folder(s) and 0 program(s), 2.0 MiB" in capsys.readouterr().out
    assert not idle.exists()


@pytest.mark.parametrize("value", ["-1", "lots"])
def test_a_bad_budget_is_refused(value):
    import subprocess
    import sys

    env = {**os.environ, "HERMES_DRIVER_CACHE_MB": value}
    run = subprocess.run([sys.executable, "-c", "import hermes_nb.backends.opencl.cache_trim"],
                         env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "HERMES_DRIVER_CACHE_MB" in run.stderr
