"""Scoped settings: the pinned device, the placement policy and compiler options."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from hermes_nb.backends import Device, get_device
from hermes_nb.scheduler.scope import POLICIES, current_policy, policy

__all__ = ["POLICIES", "Options", "current_options", "current_policy", "device", "options",
           "pinned_device", "policy"]

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
def device(target: str | Device) -> Iterator[Device]:
    """Pin every op built inside the block to ``target`` (an id such as ``"opencl:0"``).

    >>> import hermes_nb as hm
    >>> with hm.device("cpu:0"):
    ...     t = hm.ones((2, 2)) * 3
    >>> t.device
    'cpu:0'
    """
    resolved = get_device(target)
    token = _pinned.set(resolved.id)
    try:
        yield resolved
    finally:
        _pinned.reset(token)


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
