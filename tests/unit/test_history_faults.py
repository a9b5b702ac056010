"""A damaged or unwritable scheduler history never breaks a compute, and says which file."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.scheduler import Scheduler, policies
from hermes_nb.scheduler.history import HistoryStore, LinkRecord, PerfStoreWarning, Run


def _store(path) -> HistoryStore:
    store = HistoryStore(str(path))
    store.record(Run("sig", "cpu:0", "1", 64, 0.0, 1e-3, 0, 0.0))
    store.save_link(LinkRecord("opencl:0", 1e-5, 1e9, 1e-5, 1e9))
    store.flush()
    store.close()
    return store


def test_text_blobs_and_zero_bandwidth_rows_are_skipped_with_the_file_named(tmp_path, monkeypatch):
    path = tmp_path / "history.sqlite3"
    _store(path)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO runs (signature, device, size_key, nbytes, flops, seconds, bytes_moved, "
                 "recorded_at, pid) VALUES ('sig', 'cpu:0', '1', 'lots', x'00ff', 'fast', 0, 0, 1)")
    conn.execute("UPDATE links SET h2d_bytes_per_s = 0, d2h_bytes_per_s = -5")
    conn.commit()
    conn.close()
    store = HistoryStore(str(path))
    with pytest.warns(PerfStoreWarning, match=rf"{path.name}.*invalid row.*runs"):
        runs = store.runs()
    assert [r.seconds for r in runs] == [1e-3]
    with pytest.warns(PerfStoreWarning, match="invalid row.*links"):
        assert store.links() == []
    # an unpinned compute schedules from what is left, and is right
    monkeypatch.setattr(policies, "_default", Scheduler(store))
    x = np.arange(12, dtype=np.float32)
    np.testing.assert_allclose((hm.asarray(x) * 2 + 1).numpy(), x * 2 + 1)


def test_read_only_history_is_bypassed_not_called_corrupt():
    # what SQLite says of a file it may read but not write: the file is fine, so it is
    # bypassed (kept, written later), never moved aside as corrupt
    from hermes_nb.scheduler.history import _is_lock_error

    assert _is_lock_error(sqlite3.OperationalError("attempt to write a readonly database"))
    assert not _is_lock_error(sqlite3.DatabaseError("file is not a database"))
