"""The folder PoCL's kernel cache lives in is named by the drivers the ICD loader opens: the
same drivers in a new virtual environment (another path, pip's install time as mtime) keep
their built kernels; a different driver file does not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_nb.backends.opencl import drivers


def _environment(root: Path, size: int, mtime: float) -> Path:
    vendors = root / "vendors"
    vendors.mkdir(parents=True)
    library = vendors / "libpocl-0badc0de.so"
    library.write_bytes(b"\0" * size)
    os.utime(library, (mtime, mtime))
    (vendors / "pocl.icd").write_text("libpocl-0badc0de.so\n")
    return vendors


def _drivers(monkeypatch: pytest.MonkeyPatch, vendors: Path) -> list[str]:
    monkeypatch.setenv("OCL_ICD_VENDORS", str(vendors))
    return [lib for lib in drivers._icd_libraries() if lib.startswith("libpocl-0badc0de")]


def test_a_new_environment_keeps_the_driver_cache(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    first = _drivers(monkeypatch, _environment(tmp_path / "a", 4096, 1.7e9))
    again = _drivers(monkeypatch, _environment(tmp_path / "b", 4096, 1.8e9))
    assert first == again == ["libpocl-0badc0de.so:4096"]


def test_another_driver_file_gets_its_own_cache(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    first = _drivers(monkeypatch, _environment(tmp_path / "a", 4096, 1.7e9))
    rebuilt = _drivers(monkeypatch, _environment(tmp_path / "b", 4100, 1.7e9))
    assert first != rebuilt


def test_a_system_driver_named_by_soname_is_found_in_the_library_folders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Debian's ICD file names a bare soname: its size comes from the library folders."""
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "pocl.icd").write_text("libc.so.6\n")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(vendors))
    libc = next((Path(d) / "libc.so.6" for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                                                  "/usr/lib") if (Path(d) / "libc.so.6").exists()),
                None)
    if libc is None:
        pytest.skip("no libc.so.6 in the usual library folders of this system")
    assert f"libc.so.6:{libc.stat().st_size}" in drivers._icd_libraries()
