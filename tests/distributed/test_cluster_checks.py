"""A cluster that cannot import Hermes is refused with a message saying where it is missing,
instead of Dask's "Error during deserialization of the task graph"."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.errors import ClusterError
from hermes_nb.runtime.cluster import check_cluster

distributed = pytest.importorskip("distributed")

#: no dashboard, and the scheduler's HTTP server (started regardless) on a free loopback
#: port: by default it tries 8787 first, and when another process holds that port the
#: failed bind leaves an unclosed socket, a ResourceWarning (an error in this suite)
QUIET_HTTP = {"dashboard_address": "127.0.0.1:0", "scheduler_kwargs": {"dashboard": False}}


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", **QUIET_HTTP)
    try:
        with distributed.Client(cluster) as c:
            yield c
    finally:
        cluster.close()


def test_a_missing_install_names_the_scheduler_and_every_worker(client) -> None:
    with pytest.raises(ClusterError) as info:
        check_cluster(client, module="hermes_nb_absent_for_this_test")
    message = str(info.value)
    assert "hermes_nb_absent_for_this_test is not installed on" in message
    assert f"the scheduler at {client.scheduler.address}" in message
    for worker in client.scheduler_info()["workers"]:
        assert f"worker {worker}" in message
    assert "pip install" in message


def test_a_cluster_with_hermes_runs_graphs(client) -> None:
    check_cluster(client)
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose((hm.asarray(a) * 3.0 + 1.0).numpy(), a * 3 + 1)


def _die_in_execute() -> None:
    """On a worker: the next cpu:0 kernel kills the worker process (as a crashing driver
    or the kernel's OOM killer would)."""
    import os

    from hermes_nb.backends.cpu.device import CPUDevice

    CPUDevice.execute = lambda self, spec, inputs: os._exit(1)


# distributed leaves the dead worker's socket for the garbage collector to close
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_a_killed_worker_names_the_op_shapes_and_worker() -> None:
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", **QUIET_HTTP)
        try:
            with distributed.Client(cluster) as c:
                c.run(_die_in_execute)
                a = np.ones((40, 30), np.float32)
                with hm.device("cpu:0"), pytest.raises(ClusterError) as info:
                    (hm.exp(hm.asarray(a)) * 2.0).numpy()
        finally:
            cluster.close()
            gc.collect()  # close the dead worker's socket here, under this test's filters
    message = str(info.value)
    assert "fused_elementwise(float32[40, 30]) -> float32[40, 30] on cpu:0" in message
    assert "killed its worker 1 time(s), last tcp://127.0.0.1:" in message
    assert "allowed-failures is 0" in message
