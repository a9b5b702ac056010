"""A value living on one device, and moving it to another."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dask.sizeof import sizeof

from hermes_nb.backends import get_device


@dataclass(frozen=True, eq=False)
class Resident:
    """A device buffer and the id of the device that holds it.

    Pickling (as ``dask.distributed`` does between processes) copies the value
    to the host; the receiving side uploads it wherever it is needed next. Dask sees its
    real size (``dask.sizeof``: memory limits, spilling and locality count device data) and
    a token of its own (a device buffer cannot be hashed by content, and need not be).
    """

    device: str
    buffer: Any
    token: str = field(default_factory=lambda: uuid.uuid4().hex, compare=False)

    def __dask_tokenize__(self) -> tuple[str, str, str]:
        return ("hermes-resident", self.device, self.token)

    @property
    def nbytes(self) -> int:
        return int(getattr(self.buffer, "nbytes", 0) or sizeof(self.buffer))

    def on(self, device_id: str) -> Any:
        """The buffer on ``device_id``, copied through the host when it lives elsewhere."""
        if device_id == self.device:
            return self.buffer
        target = get_device(device_id)
        return target.run(target.from_host, self.host())

    def host(self) -> np.ndarray:
        source = get_device(self.device)
        return source.run(source.to_host, self.buffer)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pickle protocol 5 sends a contiguous array's memory as it is: no copy of it first
        return (Resident, ("cpu:0", np.ascontiguousarray(self.host())))


def detached(value: Resident, borrowed: Sequence[np.ndarray]) -> Resident:
    """``value``, or its own copy when its buffer may share memory with a caller's array
    that a borrowed constant reads (``hm.asarray`` without a copy, where the device computes
    from the array in place and a view op returns a view of it): a computed result is a
    snapshot, which a later write to the caller's array must not change."""
    buffer = value.buffer
    if isinstance(buffer, np.ndarray) and any(np.may_share_memory(buffer, a) for a in borrowed):
        own = np.array(buffer, order="C", copy=True)
        own.flags.writeable = False
        return Resident(value.device, own)
    return value


@sizeof.register(Resident)
def _sizeof_resident(value: Resident) -> int:
    return value.nbytes
