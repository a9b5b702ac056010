"""Data where it is used on a process cluster: a large input goes to the workers once and
never through the scheduler, ``hm.persist`` keeps results on the workers for later graphs,
``hm.asarray`` takes a ``distributed.Future`` and a ``dask.array``, and each kernel is one
task. Every figure here is measured on the cluster (scheduler handlers, worker transfer
counters, the scheduler's transition log), and every result is compared with NumPy."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.errors import ClusterError
from hermes_nb.runtime.explain import explain_nodes

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

MIB = 1 << 20
RNG = np.random.default_rng(7)
BIG = RNG.random((64, 512, 512), dtype=np.float32)  # 64 MiB


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    try:
        with distributed.Client(cluster) as c:
            yield c
    finally:
        cluster.close()


# -- what the scheduler sees ---------------------------------------------------------------

def _watch_scheduler(dask_scheduler: Any) -> None:
    """Record the bytes of every graph and every scatter the scheduler receives, and how
    many gathers it relays to a client."""
    from distributed.utils import nbytes

    seen = dask_scheduler.hermes_test_bytes = {"graph": 0, "scatter": 0, "gather": 0}
    update, scatter, gather = (dask_scheduler.stream_handlers["update-graph"],
                               dask_scheduler.handlers["scatter"],
                               dask_scheduler.handlers["gather"])
    dask_scheduler.hermes_test_original = (update, scatter, gather)

    async def counted_update(*args: Any, expr_ser: Any = None, **kwargs: Any) -> Any:
        seen["graph"] += sum(nbytes(f) for f in [expr_ser.header, *expr_ser.frames])
        return await update(*args, expr_ser=expr_ser, **kwargs)

    async def counted_scatter(*args: Any, data: Any = None, **kwargs: Any) -> Any:
        from dask.sizeof import sizeof

        seen["scatter"] += sizeof(data)
        return await scatter(*args, data=data, **kwargs)

    async def counted_gather(*args: Any, **kwargs: Any) -> Any:
        seen["gather"] += 1
        return await gather(*args, **kwargs)

    dask_scheduler.stream_handlers["update-graph"] = counted_update
    dask_scheduler.handlers["scatter"] = counted_scatter
    dask_scheduler.handlers["gather"] = counted_gather


def _unwatch_scheduler(dask_scheduler: Any) -> dict[str, int]:
    update, scatter, gather = dask_scheduler.hermes_test_original
    dask_scheduler.stream_handlers["update-graph"] = update
    dask_scheduler.handlers["scatter"] = scatter
    dask_scheduler.handlers["gather"] = gather
    return dict(dask_scheduler.hermes_test_bytes)


def _outgoing_bytes(client: distributed.Client) -> int:
    """Bytes every worker has sent, to the client or to another worker."""
    sent = client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total)
    return sum(sent.values())


def _new_tasks(client: distributed.Client, since: int) -> set[str]:
    """Keys that became tasks on the scheduler (released -> waiting) after transition
    ``since`` (the scheduler's ``transition_counter`` then)."""
    def tasks(dask_scheduler: Any, since: int) -> list[str]:
        start = dask_scheduler.transition_counter - len(dask_scheduler.transition_log)
        log = list(dask_scheduler.transition_log)[max(0, since - start):]
        return [str(e[0]) for e in log if e[1] == "released" and e[2] == "waiting"]

    return set(client.run_on_scheduler(tasks, since=since))


def _transitions(client: distributed.Client) -> int:
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


# -- tests ---------------------------------------------------------------------------------

def test_persist_without_a_client_is_compute() -> None:
    with pytest.raises(ValueError):  # first in this file: the cluster is not started yet
        distributed.default_client()
    (y,) = hm.persist(hm.arange(6, dtype="float32") * 2.0)
    assert y.is_materialized and y.device is not None
    np.testing.assert_array_equal(y.numpy(), np.arange(6, dtype=np.float32) * 2)
    with pytest.raises(TypeError, match="persist: expected Tensors, got ndarray"):
        hm.persist(np.ones(3))


def test_a_large_input_goes_to_the_workers_not_through_the_scheduler(client) -> None:
    x = hm.asarray(BIG, copy=True)
    client.run_on_scheduler(_watch_scheduler)
    try:
        first = ((x * 2.0 + 1.0) ** 2).sum(axis=(1, 2)).numpy()
        again = (x - 0.5).max(axis=0).numpy()  # the same array: not sent again
    finally:
        seen = client.run_on_scheduler(_unwatch_scheduler)
    assert seen["graph"] < MIB, f"the graphs carried {seen['graph']} bytes to the scheduler"
    assert seen["scatter"] == 0, "the input was scattered through the scheduler"
    np.testing.assert_allclose(first, ((BIG.astype(np.float64) * 2 + 1) ** 2).sum(axis=(1, 2)),
                               rtol=1e-4)
    np.testing.assert_allclose(again, BIG.max(axis=0) - np.float32(0.5), rtol=1e-6)
    held = client.run_on_scheduler(lambda dask_scheduler: [
        str(k) for k, ts in dask_scheduler.tasks.items()
        if str(k).startswith("hermes-data-") and ts.state == "memory"])
    assert len(held) == 1, f"the input should be on the cluster once, found {held}"
    del x
    gc.collect()  # the tensor is gone: its copy on the workers is released


def test_results_come_straight_from_the_workers(client) -> None:
    client.run_on_scheduler(_watch_scheduler)
    try:
        result = (hm.asarray(BIG[:8]) * 3.0).numpy()
        (kept,) = hm.persist(hm.asarray(BIG[:8]) - 1.0)
        read = kept.numpy()
    finally:
        seen = client.run_on_scheduler(_unwatch_scheduler)
    assert seen["gather"] == 0, "a result was relayed through the scheduler"
    np.testing.assert_array_equal(result, BIG[:8] * np.float32(3.0))
    np.testing.assert_array_equal(read, BIG[:8] - np.float32(1.0))


def test_a_client_that_cannot_reach_its_workers_moves_data_through_the_scheduler(
        client) -> None:
    with distributed.Client(client.scheduler.address, direct_to_workers=False,
                            set_as_default=False) as indirect, indirect.as_current():
        indirect.run_on_scheduler(_watch_scheduler)
        try:
            x = hm.asarray(BIG[8:16], copy=True)
            result = (x * 3.0).numpy()
            (kept,) = hm.persist(x - 1.0)
            read = kept.numpy()
        finally:
            seen = indirect.run_on_scheduler(_unwatch_scheduler)
    assert seen["scatter"] >= BIG[8:16].nbytes, "the input did not go through the scheduler"
    assert seen["gather"] >= 2, "the results did not come through the scheduler"
    np.testing.assert_array_equal(result, BIG[8:16] * np.float32(3.0))
    np.testing.assert_array_equal(read, BIG[8:16] - np.float32(1.0))


def test_a_changed_borrowed_array_is_sent_again(client) -> None:
    data = np.ones((1024, 512), dtype=np.float32)  # 2 MiB, read in place (copy=None)
    x = hm.asarray(data)
    assert float(x.sum()) == data.size
    data[0, :] = 3.0
    assert float(x.sum()) == data.size + 2 * 512


def test_persist_keeps_the_result_on_the_workers_for_later_graphs(client) -> None:
    (y,) = hm.persist(hm.asarray(BIG, copy=True) * 2.0 + 1.0)
    assert y.is_materialized and y.shape == BIG.shape and y.dtype == np.float32
    future = y.node.attrs["handle"].future
    assert future.status == "finished" and client.who_has(future)[future.key]
    before = _outgoing_bytes(client)
    total = (y * 3.0).sum().numpy()
    peak = (y - 1.0).max(axis=0).numpy()
    moved = _outgoing_bytes(client) - before
    results = total.nbytes + peak.nbytes  # what must come back: the two results
    assert moved < results + 64 * 1024, \
        f"{moved} bytes left the workers for {results} bytes of results; y should stay there"
    expected = BIG.astype(np.float64) * 2 + 1
    np.testing.assert_allclose(total, (expected * 3).sum(), rtol=1e-4)
    np.testing.assert_allclose(peak, (expected - 1).max(axis=0), rtol=1e-6)
    # reading it here does gather it: the counter sees a transfer of that size
    before = _outgoing_bytes(client)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)
    assert _outgoing_bytes(client) - before >= BIG.nbytes


def test_a_persisted_value_has_its_size_and_moves_between_workers(client) -> None:
    (y,) = hm.persist(hm.asarray(BIG[:8], copy=True) + 1.0)
    future = y.node.attrs["handle"].future
    size = client.run_on_scheduler(lambda dask_scheduler, key: dask_scheduler.tasks[key].nbytes,
                                   key=future.key)
    assert size >= BIG[:8].nbytes, f"dask.sizeof of a persisted value is {size} bytes"
    (holder,) = client.who_has(future)[future.key]
    other = next(w for w in client.scheduler_info()["workers"] if w != holder)
    moved = client.submit(lambda r: (r.device, r.host().sum(dtype=np.float64)), future,
                          workers=[other], allow_other_workers=False, pure=False).result()
    assert moved[0] == "cpu:0"  # a device buffer crosses as host bytes
    np.testing.assert_allclose(moved[1], (BIG[:8].astype(np.float64) + 1).sum(), rtol=1e-6)


def test_asarray_of_a_future_and_of_a_dask_array(client) -> None:
    data = RNG.random((96, 80))
    future = client.scatter(data)
    t = hm.asarray(future)
    assert t.shape == data.shape and t.dtype == np.float64
    np.testing.assert_allclose((hm.sqrt(t) * 2.0).sum(axis=0).numpy(),
                               (np.sqrt(data) * 2).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(hm.asarray(future, dtype="float32").numpy(),
                               data.astype(np.float32))
    darr = da.from_array(data, chunks=(32, 40)) * 3 - 1
    d = hm.asarray(darr)
    assert d.shape == data.shape
    np.testing.assert_allclose((d + t).numpy(), data * 3 - 1 + data, rtol=1e-12)


def test_asarray_of_a_future_of_an_unsupported_dtype_is_refused(client) -> None:
    future = client.scatter(np.zeros(4, dtype=np.float16))
    with pytest.raises(TypeError, match="asarray: unsupported dtype float16"):
        hm.asarray(future)


def test_each_kernel_is_one_task(client) -> None:
    x = hm.asarray(BIG[:4], copy=True)  # 4 MiB: scattered
    c = hm.asarray(RNG.random(512, dtype=np.float32))  # small, read by two kernels
    outs = [hm.tanh(x * c + 1.0).sum(axis=2), (x - c).max(axis=0)]
    kernels = len(explain_nodes([t.node for t in outs]).kernels)
    hm.compute(*outs)  # warm: compiles and calibration settle
    since = _transitions(client)
    got = hm.compute(*outs)
    tasks = {k for k in _new_tasks(client, since) if not k.startswith("hermes-data-")}
    assert len(tasks) == kernels, f"{len(tasks)} tasks for {kernels} kernels: {sorted(tasks)}"
    xs, cs = BIG[:4].astype(np.float64), c.numpy().astype(np.float64)
    np.testing.assert_allclose(got[0].numpy(), np.tanh(xs * cs + 1).sum(axis=2), rtol=1e-4)
    np.testing.assert_allclose(got[1].numpy(), (xs - cs).max(axis=0), rtol=1e-6)


def test_a_tensor_persisted_on_a_closed_client_is_refused(client) -> None:
    other = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                     host="127.0.0.1", protocol="tcp://",
                                     dashboard_address="127.0.0.1:0")
    try:
        with distributed.Client(other) as short_lived:
            assert distributed.default_client() is short_lived
            (y,) = hm.persist(hm.arange(8, dtype="float32") + 1.0)
            np.testing.assert_array_equal(y.numpy(), np.arange(8, dtype=np.float32) + 1)
    finally:
        other.close()
    assert distributed.default_client() is client
    with pytest.raises(ClusterError,
                       match="its client was closed, which releases its data"):
        (y * 2.0).numpy()


def test_a_graphs_large_inputs_go_in_one_scatter(client, monkeypatch) -> None:
    arrays = [RNG.random((512, 1024), dtype=np.float32) for _ in range(3)]  # 2 MiB each
    calls = []
    scatter = client.scatter
    monkeypatch.setattr(client, "scatter", lambda data, **kw: calls.append(len(data))
                        or scatter(data, **kw))
    a, b, c = (hm.asarray(x) for x in arrays)
    got = ((a * b) + c).sum(axis=1).numpy()
    assert calls == [3], f"scatter calls and their sizes: {calls}"
    again = (a - c).max().numpy()  # the same arrays: nothing is sent again
    assert calls == [3]
    np.testing.assert_allclose(got, (arrays[0] * arrays[1] + arrays[2]).sum(axis=1), rtol=1e-4)
    np.testing.assert_allclose(again, (arrays[0] - arrays[2]).max(), rtol=1e-6)


def test_views_of_one_array_each_keep_their_copy(client, monkeypatch) -> None:
    frames = RNG.random((4, 512, 1024), dtype=np.float32)  # 2 MiB a frame
    calls = []
    scatter = client.scatter
    monkeypatch.setattr(client, "scatter", lambda data, **kw: calls.append(len(data))
                        or scatter(data, **kw))
    for _ in range(2):  # new tensors over the same frames: sent the first time only
        got = hm.compute(*[(hm.asarray(f) * 2.0).sum() for f in frames])
    assert calls == [4], f"scatter calls and their sizes: {calls}"
    np.testing.assert_allclose([float(g) for g in got],
                               (frames.astype(np.float64) * 2).sum(axis=(1, 2)), rtol=1e-4)


def _hermes_inside_a_task(x: np.ndarray) -> np.ndarray:
    import hermes_nb as hm

    # a graph new to this worker has no estimate, so its kernels run on Hermes's own threads
    return (hm.exp(hm.asarray(x) * 0.25) + 1.0).sum(axis=1).numpy()


def test_hermes_called_inside_a_dask_task(client) -> None:
    x = RNG.random((64, 300), dtype=np.float32)
    result = client.submit(_hermes_inside_a_task, x, pure=False).result()
    expected = (np.exp(x.astype(np.float64) * 0.25) + 1.0).sum(axis=1)
    np.testing.assert_allclose(result, expected, rtol=1e-5)
