"""A NumPy-only "reference" backend, written as a third-party plug-in would be.

It uses nothing of Hermes but its public backend interface (``Device`` and
``ArrayOps``) and is registered by the entry point in
``hermes_reference-0.1.dist-info/entry_points.txt``. With ``fused_ops`` empty
the compiler sends it single ops, so the device suite checks every op's
NumPy implementation through the whole pipeline, on a device of a kind
Hermes does not know.
"""

from __future__ import annotations

from hermes_reference.device import ReferenceDevice

__all__ = ["ReferenceDevice", "discover"]


def discover() -> list[ReferenceDevice]:
    """The plug-in's devices: one ``reference:0``."""
    return [ReferenceDevice()]
