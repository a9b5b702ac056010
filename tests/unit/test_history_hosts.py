"""The performance history is keyed by host and device: another machine's ``opencl:0``
never stands for this one's, and a schema 1 file is migrated in place."""

from __future__ import annotations

import sqlite3

from hermes_nb.scheduler import HistoryStore, KernelInfo, PerfModel, Run, Scheduler
from hermes_nb.scheduler.history import SCHEMA_VERSION, LinkRecord, local_host, model_device

K = KernelInfo("sig", "10", 80, 10.0)

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, signature TEXT NOT NULL, device TEXT NOT NULL,
    size_key TEXT NOT NULL, nbytes INTEGER NOT NULL, flops REAL NOT NULL,
    bytes_moved INTEGER NOT NULL, seconds REAL NOT NULL, recorded_at REAL NOT NULL,
    pid INTEGER NOT NULL);
CREATE INDEX runs_by_pair ON runs (signature, device, id);
CREATE TABLE links (device TEXT PRIMARY KEY, h2d_latency_s REAL NOT NULL,
    h2d_bytes_per_s REAL NOT NULL, d2h_latency_s REAL NOT NULL, d2h_bytes_per_s REAL NOT NULL,
    measured_at REAL NOT NULL);
INSERT INTO meta VALUES ('schema', '1');
"""


def test_a_schema_1_file_is_migrated_and_its_runs_are_this_hosts(tmp_path) -> None:
    db = tmp_path / "v1.sqlite3"
    conn = sqlite3.connect(db)
    conn.executescript(_V1)
    conn.executemany("INSERT INTO runs (signature, device, size_key, nbytes, flops, bytes_moved, "
                     "seconds, recorded_at, pid) VALUES ('sig', 'opencl:0', '10', 80, 10.0, 0, ?, 1.0, 1)",
                     [(1e-3,), (2e-3,), (3e-3,)])
    conn.execute("INSERT INTO links VALUES ('opencl:0', 1e-5, 1e9, 2e-5, 2e9, 1.0)")
    conn.commit()
    conn.close()
    with HistoryStore(db) as store:
        assert [r.host for r in store.runs("sig")] == [local_host()] * 3
        assert [(li.device, li.h2d_bytes_per_s) for li in store.links()] == [("opencl:0", 1e9)]
        assert PerfModel(store).runs("sig", "opencl:0") == 3  # still this machine's estimate
    version = sqlite3.connect(db).execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


def test_another_hosts_device_is_a_pair_of_its_own(tmp_path) -> None:
    db = tmp_path / "perf.sqlite3"
    with HistoryStore(db, batch_size=1) as store:
        model = PerfModel(store)
        for _ in range(3):
            model.observe(K, "opencl:0", 1e-3)
            model.observe(K, "opencl:0", 9e-3, host="node-b")
        assert model.runs("sig", "opencl:0") == 3
        assert model.runs("sig", "node-b/opencl:0") == 3
        assert model.estimate(K, "opencl:0").seconds == 1e-3
        store.save_link(LinkRecord("opencl:0", 1.0, 1.0, 1.0, 1.0, host="node-b"))
        assert store.links() == []  # another machine's link is not this one's
    with HistoryStore(db) as again:
        hosts = {(r.host, r.device) for r in again.runs("sig")}
        assert hosts == {(local_host(), "opencl:0"), ("node-b", "opencl:0")}
        reloaded = PerfModel(again)
        assert reloaded.runs("sig", "opencl:0") == 3
        assert reloaded.estimate(K, model_device("node-b", "opencl:0")).seconds == 9e-3


def test_a_calibration_slot_is_given_back_by_the_decisions_device() -> None:
    scheduler = Scheduler(None)
    decision = scheduler.decide(K, ["opencl:0", "cpu:0"], policy="auto")
    assert decision.calibrating and scheduler.in_flight() == 1
    scheduler.record(decision, 1e-3, device="cpu:0")  # a fallback ran it elsewhere
    assert scheduler.in_flight() == 0
    assert scheduler.model.runs("sig", "cpu:0") == 1
    again = scheduler.decide(K, ["opencl:0", "cpu:0"], policy="auto")
    scheduler.release(again)
    assert scheduler.in_flight() == 0


def test_runs_written_by_old_code_without_a_host_are_this_hosts(tmp_path) -> None:
    db = tmp_path / "perf.sqlite3"
    HistoryStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO runs (signature, device, size_key, nbytes, flops, bytes_moved, seconds, "
                 "recorded_at, pid) VALUES ('sig', 'cpu:0', '10', 80, 10.0, 0, 1e-3, 1.0, 1)")
    conn.commit()
    conn.close()
    with HistoryStore(db) as store:
        assert PerfModel(store).runs("sig", "cpu:0") == 1
        assert store.runs("sig") == [Run("sig", "cpu:0", "10", 80, 10.0, 1e-3, 0, 1.0, "")]
