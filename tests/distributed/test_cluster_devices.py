"""Placement on a cluster whose workers have different devices: one worker offers only
``cpu:0`` (``HERMES_DEVICES=cpu``), the other ``cpu:0`` and ``opencl:0``. Pinned graphs run
only where their device is, unpinned ones anywhere, all equal to NumPy; the client's
profile and model learn from the workers' runs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.runtime.profile import last_profile
from hermes_nb.scheduler import HistoryStore, Scheduler, policies

distributed = pytest.importorskip("distributed")

HAS_OPENCL = any(d.id == "opencl:0" for d in hm.devices())
needs_opencl = [pytest.mark.opencl, pytest.mark.skipif(not HAS_OPENCL, reason="no opencl:0 device")]
RNG = np.random.default_rng(7)
X = RNG.uniform(-2, 2, size=(48, 40)).astype(np.float32)


def _graph(x: hm.Tensor) -> hm.Tensor:
    return (hm.tanh(x * 0.5) + hm.sqrt(abs(x))).sum(axis=1)


def _reference(x: np.ndarray) -> np.ndarray:
    return (np.tanh(x * np.float32(0.5)) + np.sqrt(np.abs(x))).sum(axis=1)


@pytest.fixture(scope="module")
def cluster() -> Iterator[distributed.SpecCluster]:
    def worker(env: dict[str, str]) -> dict[str, object]:
        return {"cls": distributed.Nanny, "options": {"nthreads": 1, "host": "127.0.0.1", "env": env}}

    spec = distributed.SpecCluster(
        workers={"cpu-only": worker({"HERMES_DEVICES": "cpu"}), "full": worker({})},
        scheduler={"cls": distributed.Scheduler,
                   "options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0",
                               "dashboard": False}})
    try:
        yield spec
    finally:
        spec.close()


@pytest.fixture(scope="module")
def client(cluster) -> Iterator[distributed.Client]:
    with distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def workers(client) -> dict[str, str]:
    """Worker name -> address."""
    return {w["name"]: address for address, w in client.scheduler_info()["workers"].items()}


def _ran_on(profile_devices: list[str]) -> set[str]:
    return {d.rsplit("/", 1)[0] for d in profile_devices}


def test_devices_cluster_lists_every_workers_devices(client, workers) -> None:
    listed = hm.devices(cluster=True)
    by_worker: dict[str, list[str]] = {}
    for d in listed:
        by_worker.setdefault(d.worker, []).append(d.id)
        assert d.host == socket.gethostname()
        assert d.kind == d.id.split(":")[0] and d.name
        assert d.stable_id.startswith(f"{d.kind}:")
        assert d.address == f"{d.worker}/{d.id}"
    assert by_worker[workers["cpu-only"]] == ["cpu:0"]
    assert by_worker[workers["full"]] == [d.id for d in hm.devices()]
    assert hm.devices()[0].id == "cpu:0"  # without the argument: this process's, as before
    resources = {a: w["resources"] for a, w in client.scheduler_info()["workers"].items()}
    assert resources[workers["cpu-only"]] == {"hermes-cpu": 1.0, "hermes-cpu:0": 1.0}
    if HAS_OPENCL:
        assert {"hermes-opencl", "hermes-opencl:0"} <= set(resources[workers["full"]])
        opencl = next(d for d in listed if d.id == "opencl:0")
        assert "|" in opencl.stable_id  # platform | device | driver


@pytest.mark.parametrize("_", [pytest.param(None, marks=needs_opencl)])
def test_pinned_to_opencl_runs_only_on_the_worker_that_has_it(client, workers, _) -> None:
    for round_ in range(3):
        with hm.device("opencl:0"):
            tensor = _graph(hm.asarray(X + round_))
        np.testing.assert_allclose(tensor.numpy(), _reference(X + round_), rtol=1e-5, atol=1e-4)
        ran = [k.device for k in last_profile().kernels]
        assert ran and all(d == f"{workers['full']}/opencl:0" for d in ran), ran


def test_pinned_to_one_workers_device(client, workers) -> None:
    with hm.device(f"{workers['cpu-only']}/cpu:0") as where:
        tensor = _graph(hm.asarray(X))
    assert where.worker == workers["cpu-only"]
    np.testing.assert_allclose(tensor.numpy(), _reference(X), rtol=1e-5, atol=1e-4)
    assert {k.device for k in last_profile().kernels} == {f"{workers['cpu-only']}/cpu:0"}


def test_unpinned_graphs_run_where_they_can(client, workers) -> None:
    offered = {(d.worker, d.id) for d in hm.devices(cluster=True)}
    for round_ in range(6):
        data = X * (round_ + 1)
        np.testing.assert_allclose(_graph(hm.asarray(data)).numpy(), _reference(data),
                                   rtol=1e-5, atol=1e-4)
        for kernel in last_profile().kernels:
            assert tuple(kernel.device.rsplit("/", 1)) in offered, kernel.device


def test_a_kernel_placed_on_a_device_the_worker_lacks_runs_on_one_it_has(client, workers) -> None:
    from hermes_nb.ir.node import OpSpec
    from hermes_nb.runtime.lower import run_op
    from hermes_nb.runtime.resident import Resident

    node = hm.exp(hm.asarray(X))._node
    spec = OpSpec.of(node, "opencl:0")  # what a client with OpenCL may decide
    future = client.submit(run_op, spec, None, 0, Resident("cpu:0", X), workers=[workers["cpu-only"]],
                           pure=False)
    result = future.result()
    assert result.device == "cpu:0"
    np.testing.assert_allclose(result.host(), np.exp(X), rtol=1e-6)


def test_pinning_to_a_device_no_worker_has_names_what_the_cluster_has(client, workers) -> None:
    with pytest.raises(ValueError) as info, hm.device("cuda:3"):
        pass
    message = str(info.value)
    assert "'cuda:3' is not on the cluster" in message and "no worker has cuda:3" in message
    assert "; the cluster has: tcp://" in message
    assert f"{workers['cpu-only']}/cpu:0 (" in message and f"{workers['full']}/cpu:0 (" in message
    with pytest.raises(ValueError, match=r"worker tcp://\S+ has no opencl:0\); the cluster has: "), \
            hm.device(f"{workers['cpu-only']}/opencl:0"):
        pass


def test_the_clients_model_learns_from_worker_runs(client, workers, tmp_path, monkeypatch) -> None:
    data = RNG.uniform(0, 1, size=(37, 29)).astype(np.float32)  # a size of its own
    scheduler = Scheduler(HistoryStore(tmp_path / "history.sqlite3"))  # the suite's is in memory
    monkeypatch.setattr(policies, "_default", scheduler)
    before = {(s, d): r for s, d, r in scheduler.model.pairs()}
    for _ in range(10):
        tensor = hm.exp(hm.asarray(data)) * 3.0 - 1.0
        np.testing.assert_allclose(tensor.numpy(), np.exp(data) * 3 - 1, rtol=1e-5, atol=1e-5)
    assert scheduler.in_flight() == 0, "calibration runs left in flight"
    profile = last_profile()
    assert profile is not None and len(profile.kernels) == 1
    (kernel,) = profile.kernels
    assert _ran_on([kernel.device]) <= set(workers.values())
    assert kernel.seconds > 0
    learnt = {(s, d): r - before.get((s, d), 0) for s, d, r in scheduler.model.pairs()
              if s.startswith(kernel.op)}
    assert sum(learnt.values()) == 10, learnt
    # the workers' devices are this machine's: the client's own device pairs learnt them
    assert {d for (_, d), n in learnt.items() if n} <= {d.id for d in hm.devices()}
    scheduler.flush()
    stored = [r for s in {s for s, _ in learnt} for r in scheduler.store.runs(s)]
    assert len(stored) == 10 and {r.host for r in stored} == {socket.gethostname()}
    scheduler.store.close()


# a client process without OpenCL (no ICD vendors) pins to the workers' opencl:0
CLIENT_WITHOUT_OPENCL = textwrap.dedent("""
    import sys
    import numpy as np
    import distributed
    import hermes_nb as hm
    from hermes_nb.runtime.profile import last_profile

    assert [d.id for d in hm.devices()] == ["cpu:0"], hm.devices()
    x = np.linspace(-1, 1, 600, dtype=np.float32).reshape(20, 30)
    with distributed.Client(sys.argv[1]):
        with hm.device("opencl:0"):
            t = hm.exp(hm.asarray(x)) * 2.0
        np.testing.assert_allclose(t.numpy(), np.exp(x) * 2, rtol=1e-5)
        print("ran on", sorted({k.device for k in last_profile().kernels}))
""")


def _client_without_opencl(script: str, cluster, tmp_path) -> subprocess.CompletedProcess:
    """``script`` run by a client process without OpenCL (no PyOpenCL to import, whose wheel
    brings a PoCL of its own, and an empty vendor folder), against ``cluster``; it must
    succeed."""
    env = {**os.environ, "OCL_ICD_VENDORS": str(tmp_path)}
    without = "import sys\nsys.modules['pyopencl'] = None\n" + script
    done = subprocess.run([sys.executable, "-c", without, cluster.scheduler_address],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.parametrize("_", [pytest.param(None, marks=needs_opencl)])
def test_a_device_only_the_workers_have_is_usable_when_pinned(cluster, workers, tmp_path, _) -> None:
    done = _client_without_opencl(CLIENT_WITHOUT_OPENCL, cluster, tmp_path)
    assert f"ran on ['{workers['full']}/opencl:0']" in done.stdout


def test_the_progress_bar_counts_the_kernels_run_on_workers(client) -> None:
    with hm.options(progress=True, fuse=False):
        result = (hm.exp(hm.asarray(X)) * 2.0 + 1.0).sum(axis=0).numpy()
    np.testing.assert_allclose(result, (np.exp(X) * 2 + 1).sum(axis=0), rtol=1e-5)
    profile = last_profile()
    assert profile.plan is not None and len(profile.plan.kernels) == 4
    assert profile.on_kernel.count == profile.on_kernel.total == 4


# a client process without OpenCL places unpinned kernels on the workers' opencl:0 once its
# model predicts it faster, fuses for it, and moves tensors there with to()
CLIENT_AUTO = textwrap.dedent("""
    import sys
    import numpy as np
    import distributed
    import hermes_nb as hm
    from hermes_nb.compiler import optimize
    from hermes_nb.runtime import compile_target
    from hermes_nb.runtime.cluster_place import cluster_view
    from hermes_nb.runtime.profile import last_profile
    from hermes_nb.scheduler import default_scheduler, kernel_info_of

    assert [d.id for d in hm.devices()] == ["cpu:0"], hm.devices()
    x = np.linspace(-1, 1, 600, dtype=np.float32).reshape(20, 30)

    def chain():
        return hm.tanh(hm.exp(hm.asarray(x)) * 2.0 - 1.0) + 0.5

    expected = np.tanh(np.exp(x) * 2 - 1) + 0.5
    with distributed.Client(sys.argv[1]):
        (opencl,) = [c for c in cluster_view().candidates if c.id == "opencl:0"]
        others = [c for c in cluster_view().candidates if c.id not in ("opencl:0", "cpu:0")]
        assert opencl.model != "opencl:0", opencl  # not the client's hardware: its stable id
        (root,) = optimize([chain().node], compile_target())
        kernel, scheduler = kernel_info_of(root), default_scheduler()
        for _ in range(scheduler.calibration_runs):  # the history: opencl far faster
            scheduler.observe(kernel, opencl.model, 1e-7)
            scheduler.observe(kernel, "cpu:0", 1.0)
            for other in others:  # a second OpenCL driver on the worker: slower still
                scheduler.observe(kernel, other.model, 10.0)
        np.testing.assert_allclose(chain().numpy(), expected, rtol=1e-5, atol=1e-6)
        print("auto ran", [k.device for k in last_profile().kernels])
        # what the worker's inventory says of its PoCL, and so what placement charged for
        # moving data there
        print("host memory", opencl.shares_host_memory,
              scheduler.transfers.in_host_memory(opencl.model))
        with hm.device("opencl:0"):
            pinned = chain()
        np.testing.assert_allclose(pinned.numpy(), expected, rtol=1e-5, atol=1e-6)
        print("pinned ran", [k.device for k in last_profile().kernels])
        moved = hm.asarray(x).to("opencl:0") * 3.0
        np.testing.assert_allclose(moved.numpy(), x * 3, rtol=1e-6)
        print("to ran", sorted({k.device for k in last_profile().kernels}))
""")


@pytest.mark.parametrize("_", [pytest.param(None, marks=needs_opencl)])
def test_unpinned_kernels_go_to_a_device_only_the_workers_have(cluster, workers, tmp_path, _) -> None:
    done = _client_without_opencl(CLIENT_AUTO, cluster, tmp_path)
    there = f"{workers['full']}/opencl:0"
    shares = next(d for d in hm.devices() if d.id == "opencl:0").shares_host_memory
    assert f"host memory {shares} {shares}" in done.stdout, done.stdout
    assert f"auto ran ['{there}']" in done.stdout, done.stdout  # one fused kernel, there
    assert f"pinned ran ['{there}']" in done.stdout, done.stdout  # fused for it too
    assert f"to ran ['{there}']" in done.stdout, done.stdout


def test_to_a_device_no_worker_has_names_what_the_cluster_has(client, workers) -> None:
    with pytest.raises(ValueError) as info:
        hm.asarray(X).to("cuda:7")
    message = str(info.value)
    assert "no worker has cuda:7" in message and "; the cluster has: tcp://" in message
    assert f"{workers['cpu-only']}/cpu:0 (" in message
    moved = hm.asarray(X).to(f"{workers['cpu-only']}/cpu:0") + 1.0
    np.testing.assert_allclose(moved.numpy(), X + 1, rtol=1e-6)
    assert {k.device for k in last_profile().kernels} == {f"{workers['cpu-only']}/cpu:0"}


def test_unpinned_kernels_are_placed_over_the_clusters_devices(client, workers) -> None:
    from hermes_nb.runtime.cluster_place import cluster_view

    view = cluster_view()
    assert view is not None
    offered = {d.id for d in hm.devices(cluster=True)}
    assert {c.id for c in view.candidates} == offered  # this machine's hardware, by id
    assert {c.model for c in view.candidates} == offered  # the client's own model pairs
    cpu = next(c for c in view.candidates if c.id == "cpu:0")
    assert cpu.workers == frozenset(workers.values())
    plan = _graph(hm.asarray(X)).explain()
    assert all(k.device in offered for k in plan.kernels), plan
