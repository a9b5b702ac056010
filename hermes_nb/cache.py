"""Where Hermes keeps files between processes: generated kernels, failed sources, history.

Every folder Hermes writes code to or loads code from is private (:func:`private_dir`):
made with mode 0700, and refused with a warning when another user owns it or others may
write to it (a planted module there would run as this user), in which case a fresh
``tempfile.mkdtemp`` folder serves this process instead.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import warnings
from collections.abc import Collection
from pathlib import Path

#: name of the performance history database (and, with suffixes, its journal files)
HISTORY_PREFIX = "perf_history"


class PrivateDirWarning(UserWarning):
    """A cache folder was refused (not the user's own, or writable by others) or could not
    be made; Hermes uses a fresh private temporary folder instead."""


def cache_dir(*parts: str) -> Path:
    """``$HERMES_NB_CACHE_DIR`` or the user cache directory (platformdirs), joined with ``parts``."""
    root = os.environ.get("HERMES_NB_CACHE_DIR")
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("hermes_nb")
    return Path(root).joinpath(*parts)


def save_source(source: str, suffix: str, kind: str = "failed") -> Path:
    """Write generated source to a file named by its hash, so an error can point at it."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    directory = private_dir(kind)
    path = directory / f"{digest}{suffix}"
    path.write_text(source)
    return path


def private_dir(*parts: str) -> Path:
    """``cache_dir(*parts)``, made with mode 0700 if missing, as long as it (and every folder
    between it and the cache directory) belongs to this user and no one else may write to
    it; otherwise, with a :class:`PrivateDirWarning`, this process's own temporary folder
    for ``parts`` (see :func:`temporary_private_dir`)."""
    path = cache_dir(*parts)
    try:
        _make_private(path)
        problem = _not_private(path, cache_dir())
    except OSError as exc:
        problem = f"cannot be created ({exc})"
    if problem is None:
        return path
    fallback = temporary_private_dir(*parts)
    if (path, problem) not in _refused:  # one warning per folder and reason
        _refused.add((path, problem))
        warnings.warn(f"hermes: not using cache folder {path}: it {problem}; using {fallback} "
                      "for this process", PrivateDirWarning, stacklevel=2)
    return fallback


_refused: set[tuple[Path, str]] = set()


def _make_private(path: Path) -> None:
    """Create ``path`` and any missing parent with mode 0700 (``mkdir(parents=True)`` would
    give the parents the umask's mode, group-writable under a 002 umask)."""
    missing = []
    while not os.path.lexists(path):
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process: checked next
            continue


def _not_private(path: Path, root: Path) -> str | None:
    """Why ``path`` is not a private folder of this user (checking it and its parents up to
    ``root``), or ``None`` when it is."""
    uid = os.geteuid()
    chain = [path, *(p for p in path.parents if p == root or root in p.parents)]
    for folder in chain:
        info = os.lstat(folder)
        if stat.S_ISLNK(info.st_mode):
            info = os.stat(folder)
        if not stat.S_ISDIR(info.st_mode):
            return f"is not a folder ({folder})"
        if info.st_uid != uid:
            return f"is owned by uid {info.st_uid}, not this user ({uid}) ({folder})"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"is writable by other users (mode {stat.S_IMODE(info.st_mode):o}) ({folder})"
    return None


_temporary: dict[tuple[str, ...], Path] = {}
_temporary_lock = threading.Lock()


def temporary_private_dir(*parts: str) -> Path:
    """A folder for ``parts`` that only this process made (``tempfile.mkdtemp``, mode 0700),
    the same one for the rest of the process, removed when it exits."""
    with _temporary_lock:
        path = _temporary.get(parts)
        if path is None or not path.is_dir():
            label = "-".join(p for p in parts if p) or "cache"
            path = _temporary[parts] = Path(tempfile.mkdtemp(prefix=f"hermes_nb-{label}-"))
            atexit.register(_remove_if_ours, path, os.getpid())
        return path


def _remove_if_ours(path: Path, pid: int) -> None:
    if os.getpid() == pid:  # a forked child must not remove its parent's folder
        shutil.rmtree(path, ignore_errors=True)


def _cache_entries() -> list[Path]:
    """Every cache Hermes keeps in the cache directory: its folders and the history files."""
    root = cache_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir()
                  if (p.is_dir() and not p.is_symlink()) or p.name.startswith(HISTORY_PREFIX))


def disk_bytes(path: Path) -> int:
    """The bytes of a file, or of every file under a folder (links not followed)."""
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:  # removed meanwhile
                continue
    return total


def cache_sizes() -> dict[str, int]:
    """Bytes held by each cache in the cache directory: one entry per top-level folder,
    plus the performance history (its database and journal files together)."""
    sizes: dict[str, int] = {}
    for entry in _cache_entries():
        name = f"{HISTORY_PREFIX}.sqlite3" if entry.name.startswith(HISTORY_PREFIX) else entry.name
        try:
            sizes[name] = sizes.get(name, 0) + disk_bytes(entry)
        except OSError:
            continue
    return sizes


def clear_all(keep: Collection[str] = ()) -> list[Path]:
    """Remove every cache Hermes keeps in the cache directory (kernels, driver caches,
    self-test verdicts, logs, saved sources, history) but the folders named in ``keep``;
    returns what was removed."""
    removed: list[Path] = []
    for entry in _cache_entries():
        if entry.name in keep:
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except FileNotFoundError:
            continue
        removed.append(entry)
    return removed
