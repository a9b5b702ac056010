"""Each stored run keeps the kernel's name as the notebook's views show it ("edges:
multiply+exp+add"), so the lab panel names kernels as the views do; a schema 2 history
file is migrated in place, its old runs nameless."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.runtime import last_profile, profile
from hermes_nb.scheduler import HistoryStore, Scheduler, policies
from hermes_nb.scheduler.history import SCHEMA_VERSION, Run

_V2 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, signature TEXT NOT NULL, device TEXT NOT NULL,
    size_key TEXT NOT NULL, nbytes INTEGER NOT NULL, flops REAL NOT NULL,
    bytes_moved INTEGER NOT NULL, seconds REAL NOT NULL, recorded_at REAL NOT NULL,
    pid INTEGER NOT NULL, host TEXT NOT NULL DEFAULT '');
CREATE INDEX runs_by_key ON runs (signature, host, device, id);
CREATE TABLE links (host TEXT NOT NULL DEFAULT '', device TEXT NOT NULL,
    h2d_latency_s REAL NOT NULL, h2d_bytes_per_s REAL NOT NULL, d2h_latency_s REAL NOT NULL,
    d2h_bytes_per_s REAL NOT NULL, measured_at REAL NOT NULL, PRIMARY KEY (host, device));
INSERT INTO meta VALUES ('schema', '2');
INSERT INTO runs (signature, device, size_key, nbytes, flops, bytes_moved, seconds,
    recorded_at, pid, host) VALUES ('sig', 'cpu:0', '10', 80, 10.0, 0, 0.002, 1.0, 1, 'here');
"""


def test_a_schema_2_file_is_migrated_and_keeps_its_runs(tmp_path) -> None:
    db = tmp_path / "v2.sqlite3"
    conn = sqlite3.connect(db)
    conn.executescript(_V2)
    conn.close()
    with HistoryStore(db) as store:
        (old,) = store.runs("sig")
        assert (old.device, old.seconds, old.host, old.name) == ("cpu:0", 0.002, "here", "")
        store.record(Run("sig", "cpu:0", "10", 80, 10.0, 0.003, name="edges: blur5+sobel"))
    with HistoryStore(db) as again:
        assert [r.name for r in again.runs("sig")] == ["", "edges: blur5+sobel"]
    version = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    assert version == (str(SCHEMA_VERSION),) == ("3",)


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """A scheduler whose runs go to a fresh history file (written on every run)."""
    store = HistoryStore(tmp_path / "perf_history.sqlite3", batch_size=1)
    monkeypatch.setattr(policies, "_default", Scheduler(store, explore_new_kernels=False))
    yield store
    store.close()


def test_a_run_stores_the_views_name_of_each_kernel(stored, device) -> None:
    data = np.linspace(-1.0, 1.0, 256, dtype=np.float32)
    with hm.device(device.id):
        x = hm.asarray(data)
        edges = hm.exp(x * 0.5) + 1.0
    with profile.naming({edges.node.key: "edges"}):
        (out,) = hm.compute(edges)
    np.testing.assert_allclose(out.numpy(), np.exp(data * 0.5) + 1.0, rtol=1e-5)
    views = last_profile().kernel_names()
    assert list(views.values()) == ["edges: multiply+exp+add"]
    stored.flush()
    assert [(r.device, r.name) for r in stored.runs()] == [(device.id, "edges: multiply+exp+add")]


def test_without_variable_names_a_run_stores_the_kernels_title(stored) -> None:
    with hm.device("cpu:0"):
        root = hm.sqrt(hm.asarray(np.ones(64, dtype=np.float32)) + 3.0)
    (out,) = hm.compute(root)
    np.testing.assert_allclose(out.numpy(), 2.0)
    stored.flush()
    assert [r.name for r in stored.runs()] == ["add+sqrt"]


def test_a_hermes_cell_names_its_kernels_after_its_variables(stored, shell, monkeypatch) -> None:
    from hermes_nb.notebook import magic

    monkeypatch.setattr(magic, "display", lambda *objs, **kw: None)
    assert shell.run_cell("%%hermes --device cpu:0\nimport numpy as np\n"
                          "edges = hm.exp(hm.asarray(np.ones(16, dtype=np.float32)) * 2.0) + 1.0"
                          ).success
    np.testing.assert_allclose(shell.user_ns["edges"].numpy(), np.exp(2.0) + 1.0, rtol=1e-6)
    stored.flush()
    assert [r.name for r in stored.runs()] == ["edges: multiply+exp+add"]


def test_the_history_endpoint_names_each_kernel(tmp_path, monkeypatch) -> None:
    pytest.importorskip("jupyter_server", reason="the server extension needs jupyter_server")
    from hermes_nb.server.manager import history_summary

    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    with HistoryStore() as store:
        store.record(Run("k#1", "cpu:0", "1", 4, 1.0, 0.001, 0, 100.0))  # from an old file
        store.record(Run("k#1", "opencl:0", "1", 4, 1.0, 0.002, 0, 101.0, name="edges: blur5"))
        store.record(Run("k#2", "cpu:0", "1", 4, 1.0, 0.003, 0, 102.0))
    rows = {(r["signature"], r["device"]): r["name"] for r in history_summary()["kernels"]}
    # a signature's latest name, whichever device ran it; none known: an empty name
    assert rows == {("k#1", "cpu:0"): "edges: blur5", ("k#1", "opencl:0"): "edges: blur5",
                    ("k#2", "cpu:0"): ""}
