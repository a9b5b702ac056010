"""Device discovery: ``cpu:0`` always, plus every OpenCL device and CUDA GPU found.

A missing optional library (pyopencl, cupy) means no device of that kind,
never an import error.
"""

from __future__ import annotations

import functools
import logging

from hermes_nb.backends.base import Device

log = logging.getLogger("hermes_nb.backends")

__all__ = ["Device", "devices", "get_device"]


@functools.cache
def _discover() -> tuple[Device, ...]:
    import importlib

    from hermes_nb.backends.cpu.device import CPUDevice

    found: list[Device] = [CPUDevice()]
    for kind in ("opencl", "cuda"):
        try:
            module = importlib.import_module(f"hermes_nb.backends.{kind}.device")
            found.extend(module.discover())
        except Exception as exc:  # a broken driver must not hide the other devices
            log.warning("hermes: %s discovery failed: %s", kind, exc)
    return tuple(found)


def devices() -> list[Device]:
    """Every device Hermes can run on, ``cpu:0`` first."""
    return list(_discover())


def get_device(device: str | Device) -> Device:
    """The device with this id (``"opencl:0"``), or ``ValueError`` listing the ids there are."""
    if isinstance(device, Device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device: expected a device id such as 'cpu:0' or a Device, got {device!r}")
    wanted = device if ":" in device else f"{device}:0"
    for candidate in _discover():
        if candidate.id == wanted:
            return candidate
    available = ", ".join(d.id for d in _discover())
    raise ValueError(f"device: unknown device {device!r}; available: {available}")
