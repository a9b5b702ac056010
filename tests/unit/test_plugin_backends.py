"""Plug-in backends: devices registered under the ``hermes_nb.backends`` entry-point group.

Each test writes ``*.dist-info`` folders into a temporary directory on ``sys.path``, so
``importlib.metadata`` finds their entry points as it would an installed package's, and
discovers afresh; the built-in devices already found are reused (no second OpenCL
discovery), and the process's own device list is back in place after each test.
"""

from __future__ import annotations

import importlib
import logging
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb import backends

PLUGIN_PACKAGE = Path(__file__).parents[1] / "plugins" / "hermes_reference"
PROBE_MODULES = ("hermes_reference", "hermes_probe_")

Register = Callable[..., None]


def _forget_probe_modules() -> None:
    for name in [m for m in sys.modules if m.startswith(PROBE_MODULES)]:
        del sys.modules[name]


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Register]:
    """``register(dist, entry, target, module_source=None)`` declares an entry point in a
    temporary ``dist``-0.1.dist-info (and writes ``module_source`` as the target's module);
    ``hm.devices()`` then lists what discovery finds with them."""
    shutil.copytree(PLUGIN_PACKAGE, tmp_path / "hermes_reference",
                    ignore=shutil.ignore_patterns("__pycache__"))
    discover_afresh = backends._discover.__wrapped__  # the cached list stays as it was
    builtin = [d for d in backends._discover() if d.kind in backends._BUILTIN_KINDS]
    monkeypatch.setattr(backends, "_builtin_devices", lambda: list(builtin))
    monkeypatch.syspath_prepend(str(tmp_path))  # also invalidates importlib's caches
    _forget_probe_modules()

    def register(dist: str, entry: str, target: str, module_source: str | None = None) -> None:
        info = tmp_path / f"{dist}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[hermes_nb.backends]\n{entry} = {target}\n")
        if module_source is not None:
            (tmp_path / f"{target.split(':')[0]}.py").write_text(module_source)
        importlib.invalidate_caches()
        fresh = discover_afresh()
        monkeypatch.setattr(backends, "_discover", lambda: fresh)

    yield register
    _forget_probe_modules()


def test_a_registered_plugin_device_is_listed_and_runs(plugin_site: Register) -> None:
    plugin_site("hermes_probe_reference", "reference", "hermes_reference:discover")
    ids = [d.id for d in hm.devices()]
    assert "reference:0" in ids
    assert ids[0] == "cpu:0"  # the built-in devices come first
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    with hm.device("reference:0"):
        t = (hm.asarray(x) * 2.0 + 1.0).sum(axis=1)
    assert t.device == "reference:0"
    assert all(k.device == "reference:0" for k in t.explain().kernels)
    np.testing.assert_array_equal(t.numpy(), (x * 2.0 + 1.0).sum(axis=1))


def test_the_shipped_test_plugin_metadata_registers_reference(monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from importlib.metadata import entry_points

    monkeypatch.syspath_prepend(str(PLUGIN_PACKAGE.parent))
    points = entry_points(group=backends.ENTRY_POINT_GROUP)
    assert [(p.name, p.value) for p in points if p.name == "reference"] == [
        ("reference", "hermes_reference:discover")
    ]


def test_a_broken_plugin_is_logged_and_skipped(plugin_site: Register,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hermes_nb.backends")
    plugin_site("hermes_probe_broken", "broken", "hermes_probe_broken:discover",
                "def discover():\n    raise RuntimeError('no such hardware')\n")
    assert "cpu:0" in [d.id for d in hm.devices()]
    assert hm.get_device("cpu:0").kind == "cpu"
    message = caplog.text
    assert "'broken'" in message and "RuntimeError: no such hardware" in message


def test_a_plugin_that_cannot_be_imported_is_skipped(plugin_site: Register,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hermes_nb.backends")
    plugin_site("hermes_probe_missing", "missing", "hermes_probe_absent_module:discover")
    assert "cpu:0" in [d.id for d in hm.devices()]
    assert "'missing'" in caplog.text and "ModuleNotFoundError" in caplog.text


def test_a_duplicate_device_id_is_refused(plugin_site: Register,
                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hermes_nb.backends")
    plugin_site("hermes_probe_reference", "reference", "hermes_reference:discover")
    plugin_site("hermes_probe_twin", "twin", "hermes_reference:discover")
    ids = [d.id for d in hm.devices()]
    assert ids.count("reference:0") == 1
    assert "duplicate device id 'reference:0'" in caplog.text


def test_a_plugin_cannot_claim_a_builtin_kind(plugin_site: Register,
                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hermes_nb.backends")
    source = (
        "from hermes_reference.device import ReferenceDevice\n"
        "class Impostor(ReferenceDevice):\n"
        "    kind = 'cuda'\n"
        "def discover():\n"
        "    return [Impostor(), 'not a device']\n"
    )
    plugin_site("hermes_probe_impostor", "impostor", "hermes_probe_impostor:discover", source)
    assert all(type(d).__name__ != "Impostor" for d in hm.devices())
    assert "kind 'cuda' is built into Hermes" in caplog.text
    assert "'not a device' is not a hermes_nb.backends.base.Device" in caplog.text
