"""Lowering the op graph to a Dask task graph: one task per op for now."""

from __future__ import annotations

import logging
from typing import Any

from hermes_nb import random as hm_random
from hermes_nb.devices import get_device
from hermes_nb.errors import DeviceError
from hermes_nb.ir.node import Node, OpSpec, toposort
from hermes_nb.runtime.resident import Resident

log = logging.getLogger("hermes_nb.runtime")

DEFAULT_DEVICE = "cpu:0"


def placement(node: Node) -> tuple[str, str]:
    """The device a node runs on and why."""
    if node.op == "buffer":
        return node.attrs["handle"].device, "resident"
    if node.device is not None:
        return node.device, "pinned"
    return DEFAULT_DEVICE, "default"


def lower(outputs: list[Node]) -> tuple[dict[str, Any], list[str]]:
    """A Dask graph computing ``outputs``, and the keys of the outputs."""
    graph: dict[str, Any] = {}
    for node in toposort(outputs):
        device, _ = placement(node)
        if node.op == "buffer":
            graph[node.key] = node.attrs["handle"]
        elif node.op in ("constant", "random"):
            graph[node.key] = (load_host_source, OpSpec.of(node, device))
        else:
            graph[node.key] = (run_op, OpSpec.of(node, device), *(i.key for i in node.inputs))
    return graph, [n.key for n in outputs]


def load_host_source(spec: OpSpec) -> Resident:
    """Upload a constant, or draw seeded random numbers on the host and upload them."""
    if spec.op == "constant":
        value = spec.attrs["value"]
    else:
        a = spec.attrs
        value = hm_random.draw(a["distribution"], spec.shape, spec.dtype, a["seed"], a["params"])
    device = get_device(spec.device)
    return Resident(device.id, _guarded(spec, device, lambda: device.run(device.from_host, value)))


def run_op(spec: OpSpec, *inputs: Resident) -> Resident:
    """Run one op on its device, moving inputs there first."""
    device = get_device(spec.device)

    def work() -> Any:
        buffers = [r.on(device.id) for r in inputs]
        return device.run(device.execute, spec, buffers)

    out = _guarded(spec, device, work)
    return Resident(device.id, out)


def _guarded(spec: OpSpec, device: Any, work: Any) -> Any:
    try:
        return work()
    except DeviceError:
        raise
    except Exception as exc:
        message = (
            f"{spec.describe()} failed on {device.id} ({device.name}): "
            f"{type(exc).__name__}: {exc}"
        )
        log.debug("hermes: %s", message)
        raise DeviceError(message, op=spec.op, device=device.id) from exc
