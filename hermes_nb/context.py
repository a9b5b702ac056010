"""Scoped settings: the pinned device, the placement policy and compiler options."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from hermes_nb.backends import Device, get_device
from hermes_nb.scheduler.scope import POLICIES, current_policy, policy

__all__ = ["POLICIES", "Options", "current_options", "current_policy", "device", "device_info",
           "options", "pinned_device", "policy"]

_pinned: ContextVar[str | None] = ContextVar("hermes_pinned_device", default=None)


@dataclass(frozen=True)
class Options:
    """Compiler and runtime switches."""

    fuse: bool = True
    #: a progress bar of finished kernels: "auto" (once a run has taken a second), True
    #: (from the start), False (never); a widget in a notebook, text on stderr elsewhere
    progress: bool | str = "auto"
    #: split large data-parallel kernels across devices: "auto" (when the scheduler
    #: predicts a gain), "never", or "always" (every splittable kernel; for testing)
    coexec: str = "auto"


_options: ContextVar[Options] = ContextVar("hermes_options", default=Options())


@contextmanager
def device(target: str | Device) -> Iterator[Any]:
    """Pin every op built inside the block to ``target`` (an id such as ``"opencl:0"``).

    With a ``dask.distributed`` Client active, ``target`` names a device of the cluster's
    workers: ``"opencl:0"`` (any worker that has it) or ``"tcp://host:port/opencl:0"``
    (that worker's), whether or not this process has one; a device no worker has is a
    ``ValueError`` listing what the cluster has. The block yields the :class:`Device` here,
    or on a cluster its ``ClusterDevice`` record.

    >>> import hermes_nb as hm
    >>> with hm.device("cpu:0"):
    ...     t = hm.ones((2, 2)) * 3
    >>> t.device
    'cpu:0'
    """
    resolved, pin = _resolve_pin(target)
    token = _pinned.set(pin)
    try:
        yield resolved
    finally:
        _pinned.reset(token)


def _resolve_pin(target: str | Device) -> tuple[Any, str]:
    """The device ``target`` names and the id pinned ops carry (a worker-qualified id
    keeps its worker)."""
    if isinstance(target, Device):
        return target, target.id
    from hermes_nb.runtime.cluster_inventory import active_client, resolve

    client = active_client() if isinstance(target, str) else None
    if client is None:
        resolved = get_device(target)
        return resolved, resolved.id
    found = resolve(client, target)
    return found, found.address if "://" in target else found.id


def device_info(device_id: str) -> Any:
    """What a pinned id names, for the checks made as ops are built: this process's
    device, or (with a Client active) the cluster's record of a device only its workers
    have, with its name and dtypes."""
    try:
        return get_device(device_id)
    except ValueError:
        from hermes_nb.runtime.cluster_inventory import active_client, resolve

        client = active_client()
        if client is None:
            raise
        return resolve(client, device_id, fresh=False)


@contextmanager
def options(**changes: bool | str) -> Iterator[Options]:
    """Change compiler/runtime options inside the block, e.g. ``hm.options(fuse=False)``."""
    current = _options.get()
    unknown = set(changes) - set(current.__dataclass_fields__)
    if unknown:
        allowed = ", ".join(current.__dataclass_fields__)
        raise ValueError(f"options: unknown option(s) {sorted(unknown)}; allowed: {allowed}")
    if "coexec" in changes and changes["coexec"] not in ("auto", "never", "always"):
        raise ValueError(f"options: coexec must be 'auto', 'never' or 'always', got "
                         f"{changes['coexec']!r}")
    if "progress" in changes and changes["progress"] not in (True, False, "auto"):
        raise ValueError(f"options: progress must be True, False or 'auto', got "
                         f"{changes['progress']!r}")
    if "fuse" in changes and not isinstance(changes["fuse"], bool):
        raise ValueError(f"options: fuse must be True or False, got {changes['fuse']!r}")
    token = _options.set(replace(current, **changes))
    try:
        yield _options.get()
    finally:
        _options.reset(token)


def pinned_device() -> str | None:
    return _pinned.get()


def current_options() -> Options:
    return _options.get()
