"""A value living on one device, and moving it to another."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.backends import get_device


@dataclass(frozen=True, eq=False)
class Resident:
    """A device buffer and the id of the device that holds it.

    Pickling (as ``dask.distributed`` does between processes) copies the value
    to the host; the receiving side uploads it wherever it is needed next.
    """

    device: str
    buffer: Any

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
        return (Resident, ("cpu:0", np.array(self.host(), order="C")))
