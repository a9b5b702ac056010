"""Two-level placement on a cluster, without one: how a kernel's device becomes task
resources and worker restrictions, how pinned ids parse, and what a plain process keeps."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.ir.node import OpSpec
from hermes_nb.runtime.cluster_devices import ClusterDevice, bind, inventory, resources_of, split_address
from hermes_nb.runtime.cluster_run import restrictions
from hermes_nb.runtime.lower import run_op
from hermes_nb.scheduler import Decision, kernel_info

A, B = "tcp://127.0.0.1:1001", "tcp://127.0.0.1:1002"
CLUSTER = [ClusterDevice(A, "h", "cpu:0", "cpu", "cpu", "cpu:x"),
           ClusterDevice(B, "h", "cpu:0", "cpu", "cpu", "cpu:x"),
           ClusterDevice(B, "h", "opencl:0", "pocl", "opencl", "opencl:p|d|v")]


def _task(device: str, policy: str = "auto") -> tuple:
    f32 = np.dtype("float32")
    spec = OpSpec("exp", (4,), f32, ((4,),), (f32,), {}, device, f"k-{device}")
    decision = Decision(device, policy, "", kernel_info("exp", (4,), "float32", [(4,)]), ())
    return (run_op, spec, decision, 1, "x")


def test_a_kernel_goes_to_workers_with_its_device_or_its_kind() -> None:
    graph = {"a": _task("opencl:0"), "b": _task("cpu:0"), "c": _task("opencl:1"),
             "d": _task(f"{B}/opencl:0", "pinned"), "e": _task("cuda:0"), "x": np.ones(4)}
    resources, workers, decisions = restrictions(graph, CLUSTER)
    assert resources == {"a": {"hermes-opencl:0": 1}, "b": {"hermes-cpu:0": 1},
                         "c": {"hermes-opencl": 1}, "d": {"hermes-opencl:0": 1}}
    assert workers == {"d": [B]}
    assert set(decisions) == {"a", "b", "c", "d", "e"}  # "e": no worker has cuda, not pinned: free


@pytest.mark.parametrize("device", ["cuda:0", f"{A}/opencl:0"])
def test_a_pin_no_worker_can_honour_is_a_value_error_naming_the_cluster(device: str) -> None:
    with pytest.raises(ValueError, match=r"which .*; it has: tcp://127\.0\.0\.1:1001/cpu:0 \(cpu\)"):
        restrictions({"a": _task(device, "pinned")}, CLUSTER)


def test_pinned_ids_parse() -> None:
    assert split_address(f"{A}/opencl:0") == (A, "opencl:0")
    assert split_address("opencl") == (None, "opencl:0")
    assert split_address("cpu:0") == (None, "cpu:0")


def test_a_plain_process_binds_as_before_and_lists_its_own_devices() -> None:
    spec = _task("opencl:7")[1]
    with pytest.raises(ValueError, match="unknown device 'opencl:7'"):
        bind("opencl:7", spec)
    assert bind("cpu:0", spec).id == "cpu:0"
    mine = inventory("w")
    assert [d.id for d in mine] == [d.id for d in hm.devices()]
    assert resources_of(mine[:1], 2) == {"hermes-cpu": 2.0, "hermes-cpu:0": 2.0}
    with pytest.raises(ValueError, match=r"no dask\.distributed Client is active"):
        hm.devices(cluster=True)


def test_hermes_devices_limits_what_a_worker_offers(monkeypatch) -> None:
    monkeypatch.setenv("HERMES_DEVICES", "cpu")
    assert [d.id for d in inventory("w")] == ["cpu:0"]


def test_a_co_executed_tile_goes_to_workers_with_the_tiles_device() -> None:
    from hermes_nb.runtime.coexec import Tile, tile_task

    spec = _task("cpu:0")[1]
    graph = {"t0": (tile_task, spec, (True,), Tile("opencl:0", 0, 2), 0, 1, "x"),
             "t1": (tile_task, spec, (True,), Tile("cpu:0", 2, 4), 0, 1, "x")}
    resources, _, decisions = restrictions(graph, CLUSTER)
    assert resources == {"t0": {"hermes-opencl:0": 1}, "t1": {"hermes-cpu:0": 1}}
    assert decisions == {}


class _FakeRuntime:
    """CuPy's runtime as a worker with ``CUDA_VISIBLE_DEVICES=2,0`` sees it: index 0 is the
    physical GPU on bus 0000:41:00.0."""

    def deviceGetPCIBusId(self, index: int) -> str:
        return ("0000:41:00.0", "0000:01:00.0")[index].upper()

    def getDeviceProperties(self, index: int) -> dict:
        return {"uuid": bytes([index]) * 16}


class _FakeGPU(hm.Device):
    kind = "cuda"

    def __init__(self, index: int) -> None:
        super().__init__(index, "Fake GPU", memory_bytes=1, compute_units=1, fp64=True)

    def from_host(self, array: np.ndarray) -> np.ndarray:
        return array

    def to_host(self, buffer: np.ndarray) -> np.ndarray:
        return buffer

    def execute(self, spec: OpSpec, inputs: object) -> None:
        raise NotImplementedError


def test_a_gpu_is_named_by_its_pci_bus_id_not_its_index(monkeypatch) -> None:
    import sys
    import types

    from hermes_nb.runtime.cluster_devices import stable_id

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=_FakeRuntime()))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert stable_id(_FakeGPU(0)) == "cuda:0000:41:00.0"
    assert stable_id(_FakeGPU(1)) == "cuda:0000:01:00.0"

    def no_bus_id(index: int) -> str:
        raise RuntimeError("not supported")

    monkeypatch.setattr(fake.cuda.runtime, "deviceGetPCIBusId", no_bus_id)
    assert stable_id(_FakeGPU(1)) == "cuda:GPU-" + "01" * 16
