"""Building nodes: placement pins and device capability checks at build time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb import context
from hermes_nb.ir.node import Node


def make_node(
    op: str, inputs: Sequence[Node], shape: Sequence[int], dtype: np.dtype, **attrs: Any
) -> Node:
    """A new node, pinned to the scoped device or, failing that, to its inputs' common device."""
    device = context.pinned_device()
    if device is None:
        # a computed value's device is where it lives, not a pin: the scheduler weighs
        # moving it against running elsewhere
        pins = {i.device for i in inputs if i.device is not None and i.op != "buffer"}
        device = pins.pop() if len(pins) == 1 else None
    if device is not None:
        check_capability(op, device, dtype, inputs)
    return Node(op, tuple(inputs), tuple(int(s) for s in shape), dtype, attrs, device)


def check_capability(op: str, device_id: str, dtype: np.dtype, inputs: Sequence[Node]) -> None:
    dev = context.device_info(device_id)  # on a cluster, maybe a device only its workers have
    dtypes = {dtype, *(i.dtype for i in inputs)}
    unsupported = [d for d in dtypes if not dev.supports(d)]
    if unsupported:
        names = ", ".join(sorted(d.name for d in unsupported))
        raise ValueError(
            f"{op}: device {dev.id} ({dev.name}) does not support {names}; "
            "use float32 (complex64 for complex128), or pin the op to a device with fp64 "
            "support"
        )
