"""Hermes' log records on disk (``logsink``), where the Jupyter server reads them for the
lab panel's log section (``GET hermes/api/logs``)."""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb import logrecords, logsink


@pytest.fixture
def sink(tmp_path, monkeypatch):
    """This process's sink, writing to a fresh file for the test (the suite's one after);
    its thread waits long enough that only the test's own ``flush()`` writes."""
    monkeypatch.setattr(logsink, "FLUSH_DELAY_S", 60.0)
    yield from _restarted(tmp_path)


def _restarted(tmp_path):
    logsink.stop()
    started = logsink.start(tmp_path / "perf_history.sqlite3", keep=50)
    assert started is not None
    try:
        yield started
    finally:
        logsink.stop()
        logsink.start()


def _emit(message: str, level: int = logging.WARNING, **fields: str) -> None:
    logrecords.emit(level, message, logger="hermes_nb.runtime", **fields)


def test_records_are_written_in_one_batch_and_read_newest_first(sink) -> None:
    _emit("first on cpu:0", logging.DEBUG, device="cpu:0", kernel="hermes-add-1", category="compile")
    _emit("second on opencl:0", device="opencl:0", kernel="hermes-mul-2")
    _emit("from a worker", logging.ERROR, device="tcp://10.0.0.2:4000/cpu:0", kernel="hermes-add-3")
    assert sink.flush() == 3
    assert sink.flush() == 0  # nothing new: nothing written
    rows = logsink.read_records(sink.path)
    assert [r["message"] for r in rows] == ["from a worker", "second on opencl:0", "first on cpu:0"]
    first = rows[-1]
    assert (first["level"], first["device"], first["kernel"], first["category"]) == (
        "DEBUG", "cpu:0", "hermes-add-1", "compile")
    assert first["pid"] > 0 and first["host"]
    # the filters: level and above, a device (also a worker's), part of a kernel's name
    assert [r["message"] for r in logsink.read_records(sink.path, level="warning")] == [
        "from a worker", "second on opencl:0"]
    assert [r["message"] for r in logsink.read_records(sink.path, device="cpu:0")] == [
        "from a worker", "first on cpu:0"]
    assert [r["message"] for r in logsink.read_records(sink.path, kernel="add")] == [
        "from a worker", "first on cpu:0"]
    assert [r["message"] for r in logsink.read_records(sink.path, limit=1)] == ["from a worker"]
    later = logsink.read_records(sink.path, since=rows[0]["time"])
    assert [r["message"] for r in later] == ["from a worker"]


def test_the_background_thread_writes_without_being_asked(tmp_path) -> None:
    for sink in _restarted(tmp_path):
        _check_background_write(sink)


def _check_background_write(sink: logsink.LogSink) -> None:
    _emit("written by the sink's thread", device="cpu:0")
    deadline = time.monotonic() + 10
    while not logsink.read_records(sink.path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r["message"] for r in logsink.read_records(sink.path)] == ["written by the sink's thread"]
    assert sink.written == 1


def test_the_table_keeps_the_newest_records(sink) -> None:
    for i in range(120):
        _emit(f"record {i}")
        if i % 40 == 39:
            sink.flush()
    sink.flush()
    rows = logsink.read_records(sink.path, limit=500)
    assert len(rows) == sink.keep == 50
    assert rows[0]["message"] == "record 119" and rows[-1]["message"] == "record 70"


def test_no_records_no_file(sink) -> None:
    logrecords.drain_spool()
    assert sink.flush() == 0
    assert not sink.path.exists()
    assert logsink.read_records(sink.path) == []


def test_an_unwritable_file_loses_the_batch_without_an_error(sink, tmp_path) -> None:
    blocked = logsink.LogSink(tmp_path / "a-file" / "perf_history.sqlite3")
    (tmp_path / "a-file").write_text("not a folder")
    _emit("cannot be written")
    assert blocked.flush() == 0 and blocked.dropped == 1


def test_the_history_file_without_a_log_table_holds_no_records(tmp_path) -> None:
    path = tmp_path / "perf_history.sqlite3"
    with hm.scheduler.HistoryStore(path):
        pass
    assert logsink.read_records(path) == []
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        logsink.read_records(path, level="loud")
    with pytest.raises(ValueError, match="limit=0 is not between 1 and"):
        logsink.read_records(path, limit=0)


def test_the_sink_writes_next_to_the_run_history() -> None:
    from hermes_nb.scheduler.history import default_path

    assert logsink.default_path() == default_path()


def test_a_runs_records_reach_the_file_with_their_device(sink, device) -> None:
    """What a run on each device logged (its builds, where it builds: OpenCL's program, its
    self-test launch), and a record naming the device, are in the file under its id."""
    from hermes_nb.runtime import last_profile

    data = np.linspace(-4.0, 4.0, 4096, dtype=np.float32)
    with hm.device(device.id):
        y = hm.exp(hm.asarray(data) * 0.125) + 2.0
    np.testing.assert_allclose(y.numpy(), np.exp(data * 0.125) + 2.0, rtol=1e-5)
    _emit(f"checked a run on {device.id}", device=device.id, kernel="hermes-exp")
    sink.flush()
    stored = {(r["device"], r["message"]) for r in logsink.read_records(sink.path, limit=500)}
    logged = {(r.device, r.message) for r in last_profile().log if r.device == device.id}
    assert logged | {(device.id, f"checked a run on {device.id}")} <= stored
    rows = logsink.read_records(sink.path, device=device.id)
    assert rows[0]["message"] == f"checked a run on {device.id}"
    assert {r["device"] for r in rows} == {device.id}


def test_a_worker_record_already_in_this_file_is_not_written_twice(sink) -> None:
    """A cluster worker on this machine writes its records to the same file as its client;
    the copies it sends the client (``ingest``) are shown by ``hm.logs()`` there but
    written once. A remote worker's, saved to its own machine's file, are written here."""
    _emit("the worker's own record", device="cpu:0")
    made_here = logrecords.drain_spool()
    assert [r.saved_to for r in made_here] == [made_here[0].saved_to]
    assert made_here[0].saved_to.endswith(str(sink.path.resolve()))
    same_file = logrecords.to_wire(made_here)
    elsewhere = [{**same_file[0], "message": "a remote worker's", "saved_to": "far:/x.sqlite3"}]
    start = time.perf_counter()
    logrecords.ingest(same_file + elsewhere, "tcp://127.0.0.1:4001")
    assert sink.flush() == 1
    assert [r["message"] for r in logsink.read_records(sink.path)] == ["a remote worker's"]
    shown = [r.message for r in logrecords.records_of_thread(start - 3600, made_here[0].thread)]
    assert "the worker's own record" in shown and "a remote worker's" in shown
