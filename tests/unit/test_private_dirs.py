"""Folders Hermes writes or loads code from are private, and caches can be listed and cleared.

The planted-folder tests put, in the folder Hermes would use, the genuine source of the kernel
it is about to build together with a compiled ``__pycache__`` file of a payload that Python
would load in its place (the timestamp and size match), as another local user could.
"""

from __future__ import annotations

import hashlib
import importlib._bootstrap_external as bootstrap
import importlib.util
import os
import stat
import tempfile
from pathlib import Path

import pytest
from numba.core import types

from hermes_nb import cache
from hermes_nb.cache import PrivateDirWarning, private_dir
from hermes_nb.codegen import numba_support

SOURCE = "from numba import njit\n\n\n@njit(cache=True)\ndef kernel(a):\n    return a + 1\n"
PREFIX = "t"


def _payload(marker: Path) -> str:
    return (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
            "from numba import njit\n\n\n@njit\ndef kernel(a):\n    return a - 1000\n")


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(root))
    monkeypatch.setattr(cache, "_refused", set())
    monkeypatch.setattr(cache, "_temporary", {})
    return root


def _plant(folder: Path, marker: Path) -> Path:
    """The genuine kernel module in ``folder`` and, next to it, a payload Python would load."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:32]
    module = folder / f"k_{PREFIX}{digest}.py"
    module.write_text(SOURCE)
    info = module.stat()
    code = compile(_payload(marker), str(module), "exec")
    pyc = Path(importlib.util.cache_from_source(str(module)))
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(bootstrap._code_to_timestamp_pyc(code, info.st_mtime, info.st_size))
    return module


def _open_to_all(folder: Path) -> None:
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o666)


def _build_and_check(marker: Path, planted: Path) -> None:
    with pytest.warns(PrivateDirWarning, match="not using cache folder"):
        kernel = numba_support.build_kernel(SOURCE, PREFIX, (types.int64,))
    assert kernel(41) == 42  # the genuine kernel, not the payload's
    assert not marker.exists(), "code from the planted folder ran"
    assert planted.parent not in Path(kernel.py_func.__code__.co_filename).parents


def test_plant_in_a_shared_folder_would_run(cache_root: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The plant is real: building from the planted folder itself runs the payload."""
    marker = tmp_path / "ran"
    planted = _plant(tmp_path / "shared", marker)
    monkeypatch.setattr(numba_support, "cache_dir", lambda: planted.parent)
    kernel = numba_support.build_kernel(SOURCE, PREFIX, (types.int64,))
    assert marker.exists()
    assert kernel(41) == 41 - 1000


def test_folder_writable_by_others_is_refused(cache_root: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    planted = _plant(cache_root / "numba", marker)
    _open_to_all(cache_root / "numba")
    _build_and_check(marker, planted)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another uid")
def test_folder_of_another_user_is_refused(cache_root: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    planted = _plant(cache_root / "numba", marker)
    for path in (cache_root / "numba", *(cache_root / "numba").rglob("*")):
        os.chown(path, 65534, 65534)
    (cache_root / "numba").chmod(0o755)
    _build_and_check(marker, planted)


def test_unwritable_cache_never_uses_a_shared_temporary_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache directory is a file (unusable): the old fixed fallback folder in $TMPDIR,
    pre-made by someone else, is never used."""
    monkeypatch.setattr(cache, "_refused", set())
    monkeypatch.setattr(cache, "_temporary", {})
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(blocker))
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    marker = tmp_path / "ran"
    planted = _plant(shared_tmp / f"hermes_nb-numba-{os.getuid()}", marker)
    _open_to_all(planted.parent)
    with pytest.warns(PrivateDirWarning, match="cannot be created"):
        kernel = numba_support.build_kernel(SOURCE, PREFIX, (types.int64,))
    assert kernel(1) == 2
    assert not marker.exists()
    used = Path(kernel.py_func.__code__.co_filename).parent
    assert used.parent == shared_tmp and used != planted.parent
    assert stat.S_IMODE(used.stat().st_mode) == 0o700


def test_private_dir_is_made_0700_with_its_parents(cache_root: Path) -> None:
    old = os.umask(0o002)  # a user-private-group umask: mkdir's default would be 0775
    try:
        folder = private_dir("a", "b")
    finally:
        os.umask(old)
    assert folder == cache_root / "a" / "b"
    for path in (cache_root, cache_root / "a", folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


def test_refused_folder_warns_once_and_keeps_its_fallback(cache_root: Path) -> None:
    (cache_root / "numba").mkdir(parents=True)
    (cache_root / "numba").chmod(0o777)
    with pytest.warns(PrivateDirWarning, match="writable by other users") as caught:
        first = private_dir("numba")
        second = private_dir("numba")
    assert len(caught) == 1
    assert first == second and first != cache_root / "numba"
    assert stat.S_IMODE(first.stat().st_mode) == 0o700


def test_cache_sizes_and_clear_all(cache_root: Path) -> None:
    (private_dir("numba") / "k.py").write_bytes(b"x" * 100)
    (private_dir("pocl", "v3") / "a.so").write_bytes(b"y" * 50)
    (cache_root / "perf_history.sqlite3").write_bytes(b"z" * 30)
    (cache_root / "perf_history.sqlite3-wal").write_bytes(b"w" * 7)
    (cache_root / "notes.txt").write_text("not a Hermes cache")
    assert cache.cache_sizes() == {"numba": 100, "perf_history.sqlite3": 37, "pocl": 50}
    removed = cache.clear_all()
    assert sorted(p.name for p in removed) == [
        "numba", "perf_history.sqlite3", "perf_history.sqlite3-wal", "pocl"]
    assert [p.name for p in cache_root.iterdir()] == ["notes.txt"]
    assert cache.cache_sizes() == {}
    assert cache.clear_all() == []
