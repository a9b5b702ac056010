"""What the Jupyter server extension's endpoints return (the HTTP side, with its
authentication, runs against a real JupyterLab in tests/browser/test_lab_extension.py)."""

from __future__ import annotations

import sqlite3
import statistics

import pytest

pytest.importorskip("jupyter_server", reason="the server extension needs jupyter_server")

import hermes_nb as hm
from hermes_nb.scheduler.history import HistoryStore, LinkRecord, Run
from hermes_nb.server import _jupyter_server_extension_points
from hermes_nb.server.handlers import AUTH_RESOURCE, handlers
from hermes_nb.server.manager import (
    check_log_query,
    device_rows,
    history_summary,
    live_load,
    log_records,
)


def test_devices_are_the_ones_hermes_finds() -> None:
    rows = device_rows()
    assert [r["id"] for r in rows] == [d.id for d in hm.devices()]
    assert {"id", "kind", "name", "memory_bytes", "compute_units", "fp64"} <= set(rows[0])


def test_history_summarises_runs_per_kernel_and_device(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    seconds = {("add[f32]", "cpu:0"): [0.004, 0.001, 0.002],
               ("add[f32]", "opencl:0"): [0.010],
               ("sum[f32]", "cpu:0"): [0.5, 0.7]}
    with HistoryStore() as store:
        clock = 1000.0
        for (signature, device), times in seconds.items():
            for s in times:
                clock += 1
                store.record(Run(signature, device, "1024", 4096, 1024.0, s, 0, clock))
        store.save_link(LinkRecord("opencl:0", 2e-5, 4e9, 3e-5, 5e9))
    summary = history_summary()
    assert summary["path"] == str(tmp_path / "perf_history.sqlite3")
    assert summary["runs"] == 6
    rows = {(r["signature"], r["device"]): r for r in summary["kernels"]}
    assert set(rows) == set(seconds)
    for pair, times in seconds.items():
        assert rows[pair]["runs"] == len(times)
        assert rows[pair]["median_ms"] == pytest.approx(statistics.median(times) * 1e3)
    assert summary["kernels"][0]["signature"] == "sum[f32]"  # the most recent first
    (link,) = summary["links"]
    assert link["device"] == "opencl:0"
    assert link["h2d_gb_per_s"] == pytest.approx(4.0) and link["d2h_gb_per_s"] == pytest.approx(5.0)
    assert link["h2d_latency_us"] == pytest.approx(20.0)


def test_history_limit_keeps_the_most_recent(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    with HistoryStore() as store:
        for i in range(5):
            store.record(Run(f"k{i}", "cpu:0", "1", 4, 1.0, 0.001, 0, 100.0 + i))
    summary = history_summary(limit=2)
    assert [r["signature"] for r in summary["kernels"]] == ["k4", "k3"]
    assert summary["runs"] == 5


def test_live_load_is_each_device_busy_share_of_recent_runs(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    with HistoryStore() as store:
        store.record(Run("k", "cpu:0", "1", 4, 1.0, 2.0, 0, 995.0))
        store.record(Run("k", "cpu:0", "1", 4, 1.0, 1.0, 0, 999.0))
        store.record(Run("k", "cpu:0", "1", 4, 1.0, 9.0, 0, 900.0))  # before the window
    load = live_load(window_s=10.0, now=1000.0)
    rows = {r["id"]: r for r in load["devices"]}
    assert set(rows) == {d.id for d in hm.devices()}
    assert rows["cpu:0"]["busy_pct"] == pytest.approx(30.0) and rows["cpu:0"]["kernels"] == 2
    assert rows["cpu:0"]["last_run_s_ago"] == pytest.approx(1.0)
    assert rows["cpu:0"]["memory"] == {r["id"]: r["memory"] for r in device_rows()}["cpu:0"]


def test_every_handler_is_authenticated_and_authorised() -> None:
    assert _jupyter_server_extension_points() == [{"module": "hermes_nb.server"}]
    routes = handlers()
    assert [path for path, _ in routes] == ["devices", "history", "load", "logs"]
    for _, handler in routes:
        assert handler.auth_resource == AUTH_RESOURCE
        get = handler.get
        # tornado's @authenticated and jupyter_server's @authorized both wrap the method
        assert get.__wrapped__.__wrapped__ is not None, handler


def test_logs_are_the_stored_records_newest_first_with_their_source(tmp_path, monkeypatch) -> None:
    import logging

    from hermes_nb import logrecords, logsink

    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(logsink, "FLUSH_DELAY_S", 60.0)  # only this test's flush writes them
    sink = logsink.LogSink()  # the file the endpoint reads: $HERMES_NB_CACHE_DIR's history
    logrecords.drain_spool()
    logrecords.emit(logging.INFO, "built on cpu:0", device="cpu:0", kernel="hermes-add-1")
    logrecords.emit(logging.WARNING, "fell back from opencl:0", device="opencl:0", kernel="hermes-mul")
    sink.flush()
    sink.close()
    # one record as a notebook's kernel wrote it, the server's sessions knowing its notebook
    conn = sqlite3.connect(tmp_path / "perf_history.sqlite3")
    conn.execute("UPDATE logs SET jupyter_kernel = '0f1e2d3c-4b5a' WHERE device = 'opencl:0'")
    conn.commit()
    conn.close()
    body = log_records(notebooks={"0f1e2d3c-4b5a": "work/edges.ipynb"})
    assert body["path"] == str(tmp_path / "perf_history.sqlite3")
    messages = [r["message"] for r in body["records"]]
    assert messages[:2] == ["fell back from opencl:0", "built on cpu:0"]
    first, second = body["records"][:2]
    assert first["source"] == "work/edges.ipynb" and first["level"] == "WARNING"
    assert second["source"].startswith("pid ") and second["device"] == "cpu:0"
    assert log_records()["records"][0]["source"] == "kernel 0f1e2d3c"  # a session gone
    assert [r["message"] for r in log_records(level="warning")["records"]] == messages[:1]
    assert [r["message"] for r in log_records(device="cpu:0", kernel="add")["records"]] == [
        "built on cpu:0"]
    assert log_records(since=first["time"] + 1)["records"] == []
    assert body["devices"] == ["cpu:0", "opencl:0"]
    assert body["kernels"] == ["hermes-add-1", "hermes-mul"]
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        check_log_query("loud", 10)
    with pytest.raises(ValueError, match="limit=0 is not between 1 and 5000"):
        check_log_query(None, 0)
