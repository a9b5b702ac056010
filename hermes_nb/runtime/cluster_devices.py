"""The devices of a ``dask.distributed`` cluster: each worker's inventory, published by a
worker plugin, and binding a kernel to a worker's own device at run time.

Each worker runs ``cluster_plugin.HermesDevices`` (registered on a client's first Hermes graph, or by
``hm.cluster.setup(client)``). It lists the devices the worker offers, each with the
machine's name and a stable id that names the hardware, not its index (``cuda:0`` is another
GPU on each worker that dask-cuda gives its own ``CUDA_VISIBLE_DEVICES``), and publishes them
as Dask worker resources: ``hermes-<kind>`` and ``hermes-<id>`` (``hermes-opencl``,
``hermes-opencl:0``), so tasks can be restricted to workers that have the device.

``HERMES_DEVICES`` (ids or kinds, comma-separated: ``cpu`` or ``cpu,opencl:1``) limits what
a worker offers to the cluster; ``cpu:0`` is always offered, as every kernel can run there.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hermes_nb.backends import Device, devices, get_device
from hermes_nb.ir import dtypes
from hermes_nb.ir.ops import Kind, kind_of
from hermes_nb.scheduler.history import local_host

log = logging.getLogger("hermes_nb.runtime")

ENV = "HERMES_DEVICES"
PLUGIN_NAME = "hermes-devices"
RESOURCE_PREFIX = "hermes-"
_DTYPES = dtypes.NAMES


@dataclass(frozen=True)
class ClusterDevice:
    """One device of one worker, as ``hm.devices(cluster=True)`` lists it."""

    worker: str  # the worker's address, "tcp://127.0.0.1:40123"
    host: str  # the machine's name
    id: str  # the device's id on that worker, "opencl:0"
    name: str
    kind: str
    stable_id: str  # names the hardware: "opencl:<platform>|<device>|<driver>", "cuda:<PCI bus id>"
    dtypes: tuple[str, ...] = _DTYPES
    shares_host_memory: bool = False  # computes in host memory: moving data to it is free

    @property
    def address(self) -> str:
        """The id that pins this very device: ``"tcp://127.0.0.1:40123/opencl:0"``."""
        return f"{self.worker}/{self.id}"

    def supports(self, dtype: Any) -> bool:
        return np.dtype(dtype).name in self.dtypes


def split_address(device: str) -> tuple[str | None, str]:
    """``"tcp://h:p/opencl:0"`` -> ``("tcp://h:p", "opencl:0")``; a plain id has no worker."""
    if "://" in device and "/" in device.split("://", 1)[1]:
        worker, local = device.rsplit("/", 1)
        return worker, local
    return None, device if ":" in device else f"{device}:0"


def offered_devices() -> list[Device]:
    """The devices this process offers to a cluster: ``devices()``, limited by ``HERMES_DEVICES``."""
    wanted = [w.strip() for w in os.environ.get(ENV, "").split(",") if w.strip()]
    found = devices()
    if not wanted:
        return found
    unknown = [w for w in wanted if not any(w in (d.id, d.kind) for d in found)]
    if unknown:
        _warn_unknown(tuple(unknown), tuple(d.id for d in found))
    return [d for d in found if d.id == "cpu:0" or d.id in wanted or d.kind in wanted]


@functools.cache
def _warn_unknown(unknown: tuple[str, ...], found: tuple[str, ...]) -> None:
    """Once per process: a name in ``HERMES_DEVICES`` that no device here has."""
    log.warning("hermes: %s=%s names %s, which this process does not have (it has %s)",
                ENV, os.environ.get(ENV), ", ".join(unknown), ", ".join(found))


@functools.cache
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def stable_id(device: Device) -> str:
    """A name for the hardware behind ``device`` that does not depend on its index here."""
    try:
        if device.kind == "opencl":
            cl = device.cl_device  # type: ignore[attr-defined]
            return f"opencl:{cl.platform.name.strip()}|{cl.name.strip()}|{cl.driver_version.strip()}"
        if device.kind == "cuda":
            return f"cuda:{_cuda_bus_id(device.index)}"
        if device.kind == "cpu":
            return f"cpu:{_cpu_model()}"
    except Exception as exc:  # an unreadable property: the id and name still tell devices apart
        log.debug("hermes: no stable id for %s: %s", device.id, exc)
    return f"{device.id}|{device.name}"


def _cuda_bus_id(index: int) -> str:
    """The PCI bus id of the GPU the CUDA runtime calls ``index`` in this process: the runtime
    numbers only the GPUs ``CUDA_VISIBLE_DEVICES`` shows, so this names the physical one."""
    import cupy

    try:
        return str(cupy.cuda.runtime.deviceGetPCIBusId(index)).lower()
    except Exception:
        uuid = cupy.cuda.runtime.getDeviceProperties(index).get("uuid", b"")
        return "GPU-" + (uuid.hex() if isinstance(uuid, bytes) else str(uuid))


def inventory(worker: str = "") -> list[ClusterDevice]:
    """This process's offered devices, as a worker at ``worker`` publishes them."""
    return [ClusterDevice(worker, local_host(), d.id, d.name, d.kind, stable_id(d),
                          tuple(t for t in _DTYPES if d.supports(np.dtype(t))),
                          bool(getattr(d, "shares_host_memory", False)))
            for d in offered_devices()]


def resources_of(entries: list[ClusterDevice], slots: int) -> dict[str, float]:
    """Worker resources for ``entries``: capability markers, one slot per worker thread
    (a kernel waits for its device's own thread, so Dask need not ration them)."""
    names = {RESOURCE_PREFIX + e.kind for e in entries} | {RESOURCE_PREFIX + e.id for e in entries}
    return {n: float(max(slots, 1)) for n in sorted(names)}


_published: dict[str, list[ClusterDevice]] = {}


def publish(worker: str, entries: list[ClusterDevice]) -> None:
    """Keep what the plugin published for ``worker`` (read back by :func:`published`)."""
    _published[worker] = entries


def published(dask_worker: Any) -> list[dict[str, Any]]:
    """On a worker (``client.run``): its inventory as plain data."""
    entries = _published.get(dask_worker.address)
    if entries is None:  # the plugin has not run here: what it would publish
        entries = inventory(dask_worker.address)
    return [asdict(e) for e in entries]


def on_worker() -> Any:
    """The ``distributed.Worker`` running the current task, or None."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:
        return None


def can_run(device: Device, spec: Any) -> bool:
    """Whether ``device`` runs the kernel ``spec``: usable, its fused kind, its dtypes."""
    if getattr(device, "unusable_reason", None):
        return False
    if kind_of(spec.op) is Kind.FUSED and spec.op not in device.fused_ops:
        return False
    return all(device.supports(d) for d in (spec.dtype, *spec.in_dtypes))


def bind(device_id: str, spec: Any) -> Device:
    """The device that runs ``spec`` here. In a plain process: ``get_device`` (an unknown id
    raises, as always). On a cluster worker: the named device if the worker offers it, else
    a capable one it has (same kind first), since the client placed the kernel without
    knowing which worker would take it."""
    _, local = split_address(device_id)
    if on_worker() is None:
        return get_device(local)
    offered = offered_devices()
    for candidate in offered:
        if candidate.id == local:
            return candidate
    kind = local.split(":", 1)[0]
    capable = sorted((d for d in offered if can_run(d, spec)), key=lambda d: d.kind != kind)
    if not capable:
        from hermes_nb.errors import DeviceError

        raise DeviceError(f"{spec.describe()}: this worker has no {local} and no other device "
                          f"that runs it (it offers {', '.join(d.id for d in offered)})",
                          op=spec.op, device=local)
    log.info("hermes: %s placed on %s, which this worker lacks: running on %s",
             spec.op, local, capable[0].id)
    return capable[0]
