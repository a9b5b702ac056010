"""The driver cache's lock across processes: a repair in one process waits for another's
build (its driver would abort if its files vanished mid-link)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hermes_nb.backends.opencl.cache_lock import LOCK_FILE, CacheLock
from hermes_nb.backends.opencl.guard import Guard

pytest.importorskip("fcntl", reason="flock is POSIX only")

# a second process holds the lock shared (as its build does) until told to let go
HOLDER = """
import sys
from pathlib import Path
from hermes_nb.backends.opencl.cache_lock import CacheLock
with CacheLock(Path(sys.argv[1])).shared():
    print("held", flush=True)
    sys.stdin.readline()
    (Path(sys.argv[1]) / "entry" / "parallel.so").write_bytes(b"linked")
"""


def _holder(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def _guard(folder: Path) -> Guard:
    return Guard((0, 0, "test"), "fp", folder, "opencl:9")


def test_emptying_the_cache_waits_for_another_process_building_into_it(tmp_path: Path) -> None:
    (tmp_path / ".hermes-owned").touch()
    (tmp_path / "entry").mkdir()
    holder = _holder(tmp_path)
    guard = _guard(tmp_path)
    emptied = threading.Event()
    clearer = threading.Thread(target=lambda: (guard.clear_driver_cache(), emptied.set()))
    clearer.start()
    time.sleep(0.5)
    assert not emptied.is_set(), "the cache was emptied while another process built into it"
    assert (tmp_path / "entry").is_dir()
    holder.communicate("go\n", timeout=30)  # its link finishes, then it lets go
    assert holder.returncode == 0
    clearer.join(timeout=30)
    assert emptied.is_set()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hermes-lock", ".hermes-owned"]


def test_a_build_waits_while_another_process_empties_the_cache(tmp_path: Path) -> None:
    lock = CacheLock(tmp_path)
    order: list[str] = []
    with lock.exclusive():
        builder = threading.Thread(target=lambda: _shared_then(lock, order))
        builder.start()
        time.sleep(0.3)
        order.append("emptied")
    builder.join(timeout=30)
    assert order == ["emptied", "built"]


def _shared_then(lock: CacheLock, order: list[str]) -> None:
    with lock.shared():
        order.append("built")


def test_a_thread_holding_it_shared_can_empty_the_cache_and_keeps_its_hold(tmp_path: Path) -> None:
    (tmp_path / ".hermes-owned").touch()
    (tmp_path / "stale").mkdir()
    guard = _guard(tmp_path)
    with guard.cache_lock.shared(), guard.cache_lock.shared():  # re-entrant
        guard.clear_driver_cache()  # converts its own lock: no deadlock on itself
        assert not (tmp_path / "stale").exists()
        # still shared: another process cannot take it exclusive now
        probe = subprocess.run(
            [sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR);"
             "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)", str(tmp_path / LOCK_FILE)],
            capture_output=True, text=True, timeout=30)
        assert probe.returncode != 0 and "BlockingIOError" in probe.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR);"
         "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)", str(tmp_path / LOCK_FILE)],
        capture_output=True, text=True, timeout=30)
    assert probe.returncode == 0, probe.stderr


def test_a_marker_another_process_dropped_is_not_trusted_from_memory(tmp_path: Path) -> None:
    guard = _guard(tmp_path)
    guard._mark("key", since=time.time())
    assert guard.verified("key")
    _guard(tmp_path).clear_driver_cache()  # another process's repair (no .hermes-owned here)
    assert not guard.verified("key"), "a build verified before the cache was emptied"
