"""Keeping the OpenCL driver caches in bounds.

PoCL never removes a program from its cache, and Hermes gives each set of installed drivers
a folder of its own (``drivers.configure_driver_cache``), so without a trim the folders of
drivers long uninstalled stay and the folder in use grows with every kernel ever built.
Once a day (the first process to configure the cache that day, in a background thread):

- a driver folder no process has used for ``IDLE_FOLDER_DAYS`` is removed;
- the least recently used programs of each other folder go until it holds at most
  ``DRIVER_CACHE_BYTES`` (PoCL touches a program's ``last_accessed`` at every load), never
  one used in the last day, and with them the build markers (``guard``) that name their
  files, so a later build of one goes through the isolated worker again;
- the empty temporary files PoCL leaves in a folder, and eviction leftovers, go.

Only folders Hermes owns (``.hermes-owned``) are touched, each under its cache lock taken
exclusive without waiting: a folder some process is building or first launching in is left
for a later trim. A program is first renamed aside (atomic), so no driver ever sees half of
one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from hermes_nb.backends.opencl.cache_lock import LOCK_FILE, MARKERS_DIR, OWNED_FILE, CacheLock
from hermes_nb.cache import disk_bytes
from hermes_nb.settings import env_int

log = logging.getLogger("hermes_nb.backends")

#: bytes one driver folder may hold before its least recently used programs go
DRIVER_CACHE_BYTES = env_int("HERMES_DRIVER_CACHE_MB", 1024, minimum=0) << 20
#: a driver folder unused this long is removed whole
IDLE_FOLDER_DAYS = 30
#: a program used this recently is never evicted (another process may be about to load it)
RECENT_S = 86400.0
#: how often a trim runs (the stamp file's age)
TRIM_EVERY_S = 86400.0

STAMP = ".hermes-trimmed"
_TRASH = ".hermes-trash-"
_TEMPFILE = "tempfile_"


@dataclass
class TrimReport:
    """What one trim did."""

    removed_folders: list[Path] = field(default_factory=list)
    evicted_programs: int = 0
    freed_bytes: int = 0
    busy_folders: list[Path] = field(default_factory=list)  # in use: left for a later trim


@dataclass(frozen=True)
class _Program:
    relative: str  # "XX/HASH", as the build markers name its files' folders
    used: float  # last_accessed's mtime
    size: int


def owned_folders(root: Path) -> list[Path]:
    """The driver cache folders under ``root`` that Hermes made."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir()
                  if p.is_dir() and not p.is_symlink() and not p.name.startswith(_TRASH)
                  and (p / OWNED_FILE).exists())


def trim_driver_caches(root: Path, current: Path | None = None,
                       budget: int = DRIVER_CACHE_BYTES, now: float | None = None) -> TrimReport:
    """Trim every driver folder Hermes owns under ``root`` (see the module's docstring);
    ``current``, the folder this process uses, is never removed whole."""
    now = time.time() if now is None else now
    report = TrimReport()
    if root.is_dir():
        _remove_leftovers(root, now)  # a folder a killed trim left renamed aside
    for folder in owned_folders(root):
        programs = _programs(folder)  # walked unlocked; each choice is checked again under it
        last_use = max((p.used for p in programs), default=_mtime(folder))
        idle = folder != current and now - last_use > IDLE_FOLDER_DAYS * 86400
        evicted = [] if idle else _least_recently_used(programs, budget, now)
        with CacheLock(folder).try_exclusive() as held:
            if not held:
                report.busy_folders.append(folder)
            elif idle and not _used_since(folder, last_use):
                report.freed_bytes += sum(p.size for p in programs)
                _remove_aside(folder, folder.parent)
                report.removed_folders.append(folder)
            elif not idle:
                _evict(folder, evicted, now, report)
    return report


def _evict(folder: Path, candidates: list[_Program], now: float, report: TrimReport) -> None:
    """Evict the ``candidates`` still unused for a day (the folder's lock held)."""
    _remove_leftovers(folder, now)
    evicted = [p for p in candidates
               if now - _mtime(folder / p.relative / "last_accessed") >= RECENT_S]
    _drop_markers(folder, {p.relative for p in evicted})
    for program in evicted:
        _remove_aside(folder / program.relative, folder)
    report.evicted_programs += len(evicted)
    report.freed_bytes += sum(p.size for p in evicted)


def _used_since(folder: Path, when: float) -> bool:
    return any(_mtime(f) > when for f in folder.glob("*/*/last_accessed"))


def remove_driver_folders(root: Path) -> tuple[list[Path], list[Path]]:
    """Remove every driver folder Hermes owns under ``root`` that no process is using now:
    (removed, busy)."""
    removed, busy = [], []
    for folder in owned_folders(root):
        with CacheLock(folder).try_exclusive() as held:
            if held:
                _remove_aside(folder, folder.parent)
                removed.append(folder)
            else:
                busy.append(folder)
    return removed, busy


def trim_in_background(current: Path) -> threading.Thread | None:
    """Start a trim of the driver folders beside ``current`` (this process's) unless one
    ran in the last day."""
    root = current.parent
    stamp = root / STAMP
    now = time.time()
    try:
        if now - stamp.stat().st_mtime < TRIM_EVERY_S:
            return None
    except OSError:
        pass  # never trimmed
    try:
        stamp.touch()
    except OSError:  # an unwritable cache: nothing to trim either
        return None
    thread = threading.Thread(target=_trim_and_log, args=(root, current), daemon=True,
                              name="hermes-driver-cache-trim")
    thread.start()
    return thread


def _trim_and_log(root: Path, current: Path) -> None:
    try:
        report = trim_driver_caches(root, current)
    except Exception as exc:  # a trim that fails leaves the cache as it was: no harm
        log.debug("hermes: driver cache trim of %s failed: %s", root, exc)
        return
    if report.removed_folders or report.evicted_programs:
        log.info("hermes: driver caches trimmed: %d unused folder(s) and %d program(s) "
                 "removed, %.1f MiB freed", len(report.removed_folders),
                 report.evicted_programs, report.freed_bytes / 2**20)


def _programs(folder: Path) -> list[_Program]:
    """Every program in a PoCL cache folder (``XX/HASH/`` holding ``program.bc``)."""
    programs = []
    for bucket in _subfolders(folder):
        if bucket.name == MARKERS_DIR or bucket.name.startswith(_TRASH):
            continue
        for entry in _subfolders(bucket):
            used = _mtime(entry / "last_accessed") or _mtime(entry)
            programs.append(_Program(f"{bucket.name}/{entry.name}", used, disk_bytes(entry)))
    return programs


def _least_recently_used(programs: list[_Program], budget: int, now: float) -> list[_Program]:
    """The programs to evict so that the rest fit ``budget``, oldest first, none recent."""
    total = sum(p.size for p in programs)
    evicted = []
    for program in sorted(programs, key=lambda p: p.used):
        if total <= budget or now - program.used < RECENT_S:
            break
        evicted.append(program)
        total -= program.size
    return evicted


def _drop_markers(folder: Path, evicted: set[str]) -> None:
    """Remove the build markers naming a file of an evicted program: a marker vouches that
    its files are in the cache, so the user's process may build from them."""
    if not evicted:
        return
    for marker in (folder / MARKERS_DIR).glob("*/*.json"):
        try:
            files = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        if any("/".join(Path(f).parts[:2]) in evicted for f in files):
            marker.unlink(missing_ok=True)


def _remove_leftovers(folder: Path, now: float) -> None:
    """PoCL's empty temporary files older than a day, and evictions a killed process left."""
    for entry in folder.iterdir():
        if entry.name.startswith(_TRASH):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith(_TEMPFILE) and now - _mtime(entry) > RECENT_S:
            with contextlib.suppress(OSError):
                entry.unlink()


def _remove_aside(path: Path, within: Path) -> None:
    """Rename ``path`` into ``within`` under a trash name (atomic: a driver sees all of it
    or none), then delete it."""
    trash = within / f"{_TRASH}{os.getpid()}-{threading.get_ident()}-{path.name}"
    try:
        path.rename(trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()
                and p.name != LOCK_FILE]
    except OSError:
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0

