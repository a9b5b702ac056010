"""One memory figure per device, the same in ``hermes devices``, ``%hermes devices`` and the
lab panel (the server's ``devices`` endpoint).

A device computing in the host's memory (``cpu:0``, PoCL and other host-unified OpenCL
devices) has the host's physical memory: what its driver reports varies with the memory
free when the process started, so two processes would disagree. Other devices have the
memory their driver reports."""

from __future__ import annotations

import os
from typing import Any

GIB = 2**30


def host_memory_bytes() -> int:
    """The host's physical memory in bytes (0 where unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def in_host_memory(device: Any) -> bool:
    return device.kind == "cpu" or bool(getattr(device, "shares_host_memory", False))


def memory_bytes(device: Any) -> int:
    """``device``'s memory in bytes, as every Hermes listing shows it."""
    if in_host_memory(device):
        return host_memory_bytes() or int(device.memory_bytes)
    return int(device.memory_bytes)


def memory_text(device: Any) -> str:
    """``device``'s memory as every listing writes it: ``"15.5 GiB"``, ``" (host)"`` after
    it where that is the host's memory."""
    where = " (host)" if in_host_memory(device) else ""
    return f"{memory_bytes(device) / GIB:.1f} GiB{where}"
