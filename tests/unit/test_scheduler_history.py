"""The performance history store and the estimators drawn from it."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import pytest

from hermes_nb.scheduler import (
    HistoryStore,
    KernelInfo,
    PerfModel,
    PerfStoreWarning,
    Run,
    Scheduler,
    TransferModel,
    default_path,
    measure_link,
)
from hermes_nb.scheduler.history import write_runs
from hermes_nb.scheduler.model import Link
from hermes_nb.scheduler.robust import robust_time, theil_sen, trimmed_mean


def kernel(size: int = 1000, sig: str = "elementwise:float32/1#k") -> KernelInfo:
    return KernelInfo(sig, str(size), nbytes=8 * size, flops=float(size), in_bytes=(4 * size,),
                      out_bytes=4 * size, rows=size)


@pytest.fixture
def db(tmp_path):
    return tmp_path / "perf.sqlite3"


def test_default_path_honours_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path / "cache"))
    assert default_path() == tmp_path / "cache" / "perf_history.sqlite3"


def test_runs_are_batched_persisted_and_reloaded(db):
    with HistoryStore(db, batch_size=10, flush_interval_s=3600) as store:
        for i in range(9):
            store.record(Run("sig", "cpu:0", "10", 80, 10.0, 1e-3 * (i + 1)))
        assert store.count() == 0 and store.pending == 9  # no I/O before the batch is due
        assert len(store.runs("sig")) == 9  # pending runs are visible to readers of this store
        store.record(Run("sig", "cpu:0", "10", 80, 10.0, 1e-2))
        assert store.count() == 10 and store.pending == 0
        mode = sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    with HistoryStore(db) as again:
        model = PerfModel(again)
        k = KernelInfo("sig", "10", 80, 10.0)
        assert model.runs("sig", "cpu:0") == 10  # loaded lazily from the file
        assert model.estimate(k, "cpu:0").source == "history"


def test_model_observe_persists_through_store(db):
    with HistoryStore(db, batch_size=1) as store:
        model = PerfModel(store)
        model.observe(kernel(), "cuda:0", 2e-3, bytes_moved=123)
        (run,) = store.runs(device="cuda:0")
        assert run.seconds == 2e-3 and run.bytes_moved == 123 and run.size_key == "1000"


def test_robust_estimators_ignore_slow_outliers():
    assert robust_time([1.0, 10.0]) == 1.0
    assert robust_time([1.0, 1.02, 0.98, 10.0, 11.0]) == 1.02
    assert trimmed_mean([1.0] * 8 + [50.0, 60.0]) == pytest.approx(1.0)
    fit = theil_sen([1, 2, 3, 4, 5, 6], [1.1, 1.2, 13.0, 1.4, 1.5, 1.6])
    assert fit is not None and fit.slope == pytest.approx(0.1) and fit.intercept == pytest.approx(1.0)


def test_outliers_do_not_poison_the_estimate():
    model = PerfModel()
    k = kernel()
    for t in (1e-3, 1.01e-3, 0.99e-3, 10e-3, 1e-3, 12e-3, 1.02e-3):  # two runs 10× slower (busy machine)
        model.observe(k, "cpu:0", t)
    est = model.estimate(k, "cpu:0")
    assert est.source == "history" and est.runs == 7
    assert est.seconds == pytest.approx(1e-3, rel=0.03)


def test_size_fit_predicts_unseen_sizes_despite_outliers():
    model = PerfModel()
    latency, bandwidth = 50e-6, 10e9
    for size in (1_000, 10_000, 100_000, 1_000_000):
        k = kernel(size)
        for rep in range(3):
            slow = 10.0 if (size == 100_000 and rep == 0) else 1.0
            model.observe(k, "cuda:0", slow * (latency + k.nbytes / bandwidth))
    model.observe(kernel(10_000_000), "cuda:0", 100 * (latency + kernel(10_000_000).nbytes / bandwidth))
    unseen = kernel(3_000_000)
    est = model.estimate(unseen, "cuda:0")
    assert est.source == "fit"
    assert est.seconds == pytest.approx(latency + unseen.nbytes / bandwidth, rel=0.05)
    fit = model.fit(unseen.signature, "cuda:0")
    assert fit is not None and fit.intercept == pytest.approx(latency, rel=0.1)


def test_fit_picks_flops_when_time_follows_flops():
    model = PerfModel()
    for n in (128, 256, 512, 1024):  # matmul: bytes ~ n², flops ~ n³, time ~ flops
        k = KernelInfo("matmul:float32/2,2#m", str(n), nbytes=12 * n * n, flops=2.0 * n**3)
        model.observe(k, "cpu:0", k.flops / 50e9)
    big = KernelInfo("matmul:float32/2,2#m", "2048", nbytes=12 * 2048**2, flops=2.0 * 2048**3)
    est = model.estimate(big, "cpu:0")
    assert model.fit(big.signature, "cpu:0").predictor == "flops"  # type: ignore[union-attr]
    assert est.seconds == pytest.approx(big.flops / 50e9, rel=0.02)


def test_one_size_known_scales_and_unknown_gives_none():
    model = PerfModel()
    model.observe(kernel(1000), "cpu:0", 1e-3)
    est = model.estimate(kernel(4000), "cpu:0")
    assert est.source == "scaled" and est.seconds == pytest.approx(4e-3)
    assert model.estimate(kernel(1000), "cuda:0").seconds is None


def test_two_processes_write_at_once(db):
    HistoryStore(db).close()  # create it (WAL) first
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        written = pool.starmap(write_runs, [(str(db), "sig-a", "cpu:0", 300, 7),
                                            (str(db), "sig-b", "cuda:0", 300, 11)])
    assert written == [300, 300]
    with HistoryStore(db) as store:
        assert store.count() == 600
        assert len(store.runs("sig-a")) == 300 and len(store.runs("sig-b", "cuda:0")) == 300


def test_corrupt_database_is_rebuilt_with_a_warning(db):
    db.write_bytes(b"this is not a database at all\x00\xff" * 100)
    with pytest.warns(PerfStoreWarning, match="unreadable"):
        store = HistoryStore(db)
    with store:
        assert store.available
        store.record(Run("sig", "cpu:0", "1", 8, 1.0, 1e-3))
        assert store.flush() == 1 and store.count() == 1
    assert list(db.parent.glob("perf.sqlite3.corrupt-*")), "the corrupt file is kept aside"


def test_scheduler_keeps_working_on_a_corrupt_database(db):
    db.write_bytes(b"\x00garbage" * 500)
    with pytest.warns(PerfStoreWarning):
        sched = Scheduler(HistoryStore(db, batch_size=1))
    d = sched.decide(kernel(), ["cpu:0"], policy="auto")
    sched.record(d, 1e-3)
    assert sched.model.runs(kernel().signature, "cpu:0") == 1
    sched.store.close()  # type: ignore[union-attr]


def test_locked_database_is_bypassed_then_written_later(db):
    HistoryStore(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.warns(PerfStoreWarning, match="locked"):
            store = HistoryStore(db, busy_timeout_s=0.05, batch_size=1, retry_after_s=0.0)
            store.record(Run("sig", "cpu:0", "1", 8, 1.0, 1e-3))  # must not raise
        assert store.pending == 1  # kept in memory
        model = PerfModel(store)
        model.observe(kernel(), "cpu:0", 1e-3)  # estimates still work from memory
        assert model.estimate(kernel(), "cpu:0").seconds == 1e-3
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.flush() == 2  # the lock is gone: the kept runs are written
    assert store.count() == 2
    store.close()


def test_database_locked_before_it_is_even_readable(db):
    holder = sqlite3.connect(db, isolation_level=None)  # rollback journal, exclusive lock
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE other (x)")
    try:
        with pytest.warns(PerfStoreWarning, match="locked"):
            store = HistoryStore(db, busy_timeout_s=0.05, retry_after_s=3600)
        assert not store.available
        sched = Scheduler(store)
        d = sched.decide(kernel(), ["cpu:0", "cuda:0"], policy="auto")
        sched.record(d, 1e-3)
        assert d.device == "cpu:0" and store.pending == 1  # kept in memory, nothing raised
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.close()


def test_transfer_model_routes_and_residency(db):
    with HistoryStore(db) as store:
        tm = TransferModel(store)
        tm.set_link("cuda:0", Link(10e-6, 10e9, 20e-6, 5e9))
        assert tm.seconds("cpu:0", "cpu:0", 10**9) == 0.0
        assert tm.seconds("cpu:0", "host", 10**9) == 0.0  # both in host memory
        assert tm.seconds("cpu:0", "cuda:0", 10**9) == pytest.approx(10e-6 + 0.1)
        assert tm.seconds("cuda:0", "cpu:0", 10**9) == pytest.approx(20e-6 + 0.2)
        assert tm.seconds("cuda:0", "opencl:0", 0) == pytest.approx(20e-6 + tm.default.h2d_latency_s)
        assert tm.input_seconds("cuda:0", 10**9, {"cuda:0", "cpu:0"}) == 0.0  # resident: free
        assert tm.input_seconds("cuda:0", 10**9, {"opencl:0", "cpu:0"}) == pytest.approx(10e-6 + 0.1)
    with HistoryStore(db) as store:
        assert TransferModel(store).link("cuda:0").h2d_bytes_per_s == 10e9  # stored once, reloaded


def test_measure_link_fits_latency_and_bandwidth_robustly():
    now = [0.0]
    calls = [0]

    def clock() -> float:
        return now[0]

    def copy(n: int) -> None:
        calls[0] += 1
        slow = 20.0 if calls[0] == 7 else 1.0  # one copy hit a busy bus
        now[0] += slow * (12e-6 + n / 16e9)

    link = measure_link(copy, clock=clock)
    assert link.h2d_latency_s == pytest.approx(12e-6, rel=0.01)
    assert link.h2d_bytes_per_s == pytest.approx(16e9, rel=0.01)
    assert link.d2h_bytes_per_s == link.h2d_bytes_per_s  # symmetric when d2h is not given


def test_scheduler_measures_a_link_once(db):
    now = [0.0]
    calls = [0]

    def copy(n: int) -> None:
        calls[0] += 1
        now[0] += 5e-6 + n / 8e9

    with HistoryStore(db) as store:
        sched = Scheduler(store)
        link = sched.measure_link("cuda:0", copy, clock=lambda: now[0])
        first = calls[0]
        assert sched.measure_link("cuda:0", copy, clock=lambda: now[0]) == link and calls[0] == first
    with HistoryStore(db) as store:
        assert Scheduler(store).transfers.link("cuda:0").h2d_bytes_per_s == pytest.approx(8e9)


def _rows(db, signature: str) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs WHERE signature = ?",
                            (signature,)).fetchone()[0]


def test_each_pair_keeps_its_newest_runs_without_a_delete_per_flush(db):
    from hermes_nb.scheduler.history import KEEP_PER_PAIR, PRUNE_EVERY

    deletes: list[str] = []
    with HistoryStore(db, batch_size=8, flush_interval_s=3600) as store:
        store._conn.set_trace_callback(lambda sql: deletes.append(sql) if sql.startswith("DELETE")
                                       else None)
        for i in range(3 * KEEP_PER_PAIR):
            store.record(Run("sig", "cpu:0", "1", 8, 1.0, 1e-3 * (1 + i % 5)))
            store.record(Run("other", "cpu:0", "1", 8, 1.0, 1e-3))
            assert _rows(db, "sig") <= KEEP_PER_PAIR + PRUNE_EVERY
        store.flush()
        flushes = 3 * KEEP_PER_PAIR * 2 // 8
        # each pair: once when first written, then once per PRUNE_EVERY of its rows
        assert len(deletes) <= 2 * (1 + 3 * KEEP_PER_PAIR // PRUNE_EVERY) < flushes
        newest = [r.seconds for r in store.runs("sig")][-5:]
    assert newest == [1e-3 * (1 + i % 5) for i in range(3 * KEEP_PER_PAIR - 5, 3 * KEEP_PER_PAIR)]
    # another process's store trims a pair the first time it writes it
    assert _rows(db, "sig") > KEEP_PER_PAIR
    with HistoryStore(db, batch_size=1) as later:
        later.record(Run("sig", "cpu:0", "1", 8, 1.0, 1e-3))
    assert _rows(db, "sig") == KEEP_PER_PAIR
