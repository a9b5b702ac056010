"""A cluster that cannot import Hermes is refused with a message saying where it is missing,
instead of Dask's "Error during deserialization of the task graph"."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.errors import ClusterError
from hermes_nb.runtime.cluster import check_cluster

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client() -> Iterator[distributed.Client]:
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
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
