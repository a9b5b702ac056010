"""With a dask.distributed Client active, graphs run on the cluster and give the same results.

Each cluster (threaded workers, then worker processes) starts once per module and
is closed at the end. Results are compared with the same graphs computed without a
client and with independent NumPy/OpenCV references.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import hermes_nb as hm

distributed = pytest.importorskip("distributed")

#: no dashboard, and the scheduler's HTTP server (started regardless) on a free loopback
#: port: by default it tries 8787 first, and when another process holds that port the
#: failed bind leaves an unclosed socket, a ResourceWarning (an error in this suite)
QUIET_HTTP = {"dashboard_address": "127.0.0.1:0", "scheduler_kwargs": {"dashboard": False}}
cv2 = pytest.importorskip("cv2")

RNG = np.random.default_rng(1234)
X = RNG.uniform(-2, 2, size=(24, 16)).astype(np.float32)
W = RNG.uniform(-1, 1, size=(16, 10)).astype(np.float32)
IMG = RNG.uniform(0, 1, size=(2, 20, 28)).astype(np.float32)

HAS_OPENCL = any(d.id == "opencl:0" for d in hm.devices())


def _graphs() -> dict[str, hm.Tensor]:
    """The graphs under test, built fresh (in whatever device context is active)."""
    x = hm.asarray(X)
    w = hm.asarray(W)
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel(axis=-1))
    return {
        "elementwise": hm.tanh(x * 0.5 + 1.0) - hm.sqrt(abs(x)) * hm.where(x > 0, x, -x),
        "reduction": (x * 2.0).sum(axis=0) + x.max(axis=0),
        "matmul": x @ w + 1.0,
        "image": pipeline(hm.asarray(IMG)),
    }


def _cv_image_reference(img: np.ndarray) -> np.ndarray:
    out = []
    for plane in img:
        blurred = cv2.GaussianBlur(plane, (5, 5), 0, borderType=cv2.BORDER_REFLECT_101)
        out.append(cv2.Sobel(blurred, -1, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101))
    return np.stack(out)


REFERENCES: dict[str, Callable[[], np.ndarray]] = {
    "elementwise": lambda: (
        np.tanh(X * np.float32(0.5) + np.float32(1.0)) - np.sqrt(np.abs(X)) * np.where(X > 0, X, -X)
    ),
    "reduction": lambda: (X * np.float32(2.0)).sum(axis=0) + X.max(axis=0),
    "matmul": lambda: (X.astype(np.float64) @ W.astype(np.float64)).astype(np.float32) + 1,
    "image": lambda: _cv_image_reference(IMG),
}
NAMES = list(REFERENCES)


def _check_reference(name: str, actual: np.ndarray) -> None:
    expected = np.asarray(REFERENCES[name]())
    assert actual.dtype == expected.dtype == np.float32
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def _no_client() -> bool:
    try:
        distributed.default_client()
    except ValueError:
        return True
    return False


@pytest.fixture(scope="module")
def baseline() -> dict[str, np.ndarray]:
    """Results without any dask.distributed client (computed before any cluster starts)."""
    assert _no_client(), "a dask.distributed client is already active"
    results = {name: t.numpy() for name, t in _graphs().items()}
    for name, value in results.items():
        _check_reference(name, value)
    return results


@pytest.fixture(scope="module", params=["threads", "processes"])
def client(request: pytest.FixtureRequest, baseline) -> Iterator[distributed.Client]:
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=request.param == "processes",
        host="127.0.0.1",
        # without processes, distributed defaults to its in-process transport, whose
        # addresses cannot carry a host; TCP on loopback works for both kinds
        protocol="tcp://",
        **QUIET_HTTP,
    )
    try:
        with distributed.Client(cluster) as c:
            yield c
    finally:
        cluster.close()
    assert _no_client(), "the client is still registered after closing"


def _scheduler_transitions(client: distributed.Client) -> int:
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


def _assert_ran_on_cluster(client: distributed.Client, before: int) -> None:
    assert _scheduler_transitions(client) > before, "no task went through the cluster"


@pytest.mark.parametrize("name", NAMES)
def test_numpy_on_cluster_matches_local(client, baseline, name: str) -> None:
    assert distributed.default_client() is client
    before = _scheduler_transitions(client)
    result = _graphs()[name].numpy()
    _assert_ran_on_cluster(client, before)
    assert result.dtype == baseline[name].dtype
    assert result.shape == baseline[name].shape
    np.testing.assert_allclose(result, baseline[name], rtol=1e-5, atol=1e-6)
    _check_reference(name, result)


def test_hm_compute_on_cluster_matches_local(client, baseline) -> None:
    graphs = _graphs()
    before = _scheduler_transitions(client)
    computed = hm.compute(*graphs.values())
    _assert_ran_on_cluster(client, before)
    assert len(computed) == len(graphs)
    for name, tensor in zip(graphs, computed, strict=True):
        assert isinstance(tensor, hm.Tensor)
        value = tensor.numpy()
        np.testing.assert_allclose(value, baseline[name], rtol=1e-5, atol=1e-6)
        _check_reference(name, value)


def test_computed_result_reused_on_cluster(client, baseline) -> None:
    (m,) = hm.compute(_graphs()["matmul"])
    again = (m * 2.0 - 1.0).sum(axis=1).numpy()
    expected = (baseline["matmul"].astype(np.float64) * 2.0 - 1.0).sum(axis=1)
    np.testing.assert_allclose(again, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.opencl
@pytest.mark.skipif(not HAS_OPENCL, reason="no opencl:0 device")
@pytest.mark.parametrize("name", NAMES)
def test_pinned_to_opencl_on_cluster(client, baseline, name: str) -> None:
    with hm.device("opencl:0"):
        tensor = _graphs()[name]
    assert tensor.device == "opencl:0"
    before = _scheduler_transitions(client)
    result = tensor.numpy()
    _assert_ran_on_cluster(client, before)
    np.testing.assert_allclose(result, baseline[name], rtol=1e-4, atol=1e-4)
    _check_reference(name, result)


@pytest.mark.skipif(len(hm.devices()) < 2, reason="co-execution needs two devices")
def test_coexecuted_tiles_run_on_workers_and_report_to_the_profile(client) -> None:
    from hermes_nb.runtime.profile import last_profile

    x = RNG.uniform(-2, 2, size=(256, 64)).astype(np.float32)
    with hm.options(coexec="always"):
        result = (hm.tanh(hm.asarray(x)) * 2.0).numpy()
    np.testing.assert_allclose(result, np.tanh(x) * np.float32(2.0), rtol=1e-5)
    tiles = [k for k in last_profile().kernels if k.reason == "co-execution tile"]
    # every tile's run came back from the worker that ran it, rows covering the whole output
    bounds = sorted(tuple(map(int, k.key.rsplit("[", 1)[1].rstrip("]").split(":"))) for k in tiles)
    assert len(bounds) == len({k.device for k in tiles}) >= 2, tiles
    assert [lo for lo, _ in bounds] == [0] + [hi for _, hi in bounds[:-1]], bounds
    assert bounds[-1][1] == 256, bounds
    workers = set(client.scheduler_info()["workers"])
    assert all(k.device.rsplit("/", 1)[0] in workers for k in tiles), tiles
