"""Device discovery: ``cpu:0`` always, every OpenCL device and CUDA GPU found, then the
devices of every plug-in backend.

A missing optional library (pyopencl, cupy) means no device of that kind,
never an import error.

Plug-in backends
----------------
A package adds a backend by declaring an entry point in the group
``hermes_nb.backends`` that names a ``discover()`` callable returning
``Device`` instances (see ``hermes_nb.backends.base.Device`` for what a
device must implement)::

    [project.entry-points."hermes_nb.backends"]
    mykind = "my_package:discover"

A plug-in that fails to load or discover is logged and skipped; a device
whose id is already taken, or whose kind is a built-in one, is refused
with a log message. The built-in devices are always listed first.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

from hermes_nb.backends.base import Device

log = logging.getLogger("hermes_nb.backends")

__all__ = ["Device", "devices", "get_device"]

#: the entry-point group a plug-in backend registers its ``discover()`` in
ENTRY_POINT_GROUP = "hermes_nb.backends"
_BUILTIN_KINDS = ("cpu", "opencl", "cuda")


@functools.cache
def _discover() -> tuple[Device, ...]:
    found = _builtin_devices()
    for source, candidates in _plugin_candidates():
        _add_unique(found, candidates, source)
    return tuple(found)


def _builtin_devices() -> list[Device]:
    import importlib

    from hermes_nb.backends.cpu.device import CPUDevice

    found: list[Device] = [CPUDevice()]
    for kind in _BUILTIN_KINDS[1:]:
        try:
            module = importlib.import_module(f"hermes_nb.backends.{kind}.device")
            found.extend(module.discover())
        except Exception as exc:  # a broken driver must not hide the other devices
            log.warning("hermes: %s discovery failed: %s", kind, exc)
    return found


def _plugin_candidates() -> list[tuple[str, list[object]]]:
    """``(entry point, what its discover() returned)`` for each plug-in that loads."""
    from importlib.metadata import entry_points

    try:
        points = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value))
    except Exception as exc:  # unreadable package metadata must not hide the built-in devices
        log.warning("hermes: reading %s entry points failed: %s", ENTRY_POINT_GROUP, exc)
        return []
    loaded = []
    for point in points:
        source = f"plug-in {point.name!r} ({point.value})"
        try:
            loaded.append((source, list(point.load()())))
        except Exception as exc:  # a broken plug-in must not hide the other devices
            log.warning("hermes: %s skipped: discovery failed: %s: %s",
                        source, type(exc).__name__, exc)
    return loaded


def _add_unique(found: list[Device], candidates: Iterable[object], source: str) -> None:
    for candidate in candidates:
        reason = _refusal(candidate, found)
        if reason is None:
            found.append(candidate)  # type: ignore[arg-type]  # _refusal checked it is a Device
        else:
            log.warning("hermes: %s: device refused: %s", source, reason)


def _refusal(candidate: object, found: list[Device]) -> str | None:
    """Why a plug-in's ``candidate`` cannot be listed, or None when it can."""
    if not isinstance(candidate, Device):
        return f"{candidate!r} is not a hermes_nb.backends.base.Device"
    kind = getattr(candidate, "kind", None)
    if not isinstance(kind, str) or not kind or ":" in kind:
        return f"{type(candidate).__name__}.kind must be a non-empty string without ':', got {kind!r}"
    if kind in _BUILTIN_KINDS:
        # the compiler, explain() and fork handling treat these kinds as Hermes' own
        return f"{candidate.id}: kind {kind!r} is built into Hermes; a plug-in needs a kind of its own"
    taken = next((d for d in found if d.id == candidate.id), None)
    if taken is not None:
        return f"duplicate device id {candidate.id!r}: already taken by {taken!r}"
    return None


def devices() -> list[Device]:
    """Every device Hermes can run on, ``cpu:0`` first, plug-in devices last."""
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
