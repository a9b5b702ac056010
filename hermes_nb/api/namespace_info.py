"""The array API's inspection namespace (``hm.__array_namespace_info__()``), its constants,
and the ``device=`` argument of the creation functions.

Devices are named by their ids (``"cpu:0"``, ``"opencl:0"``, ``"cuda:0"``), the same
strings ``Tensor.device`` returns. A tensor built outside ``hm.device(...)`` and without
``device=`` is not placed yet: its ``device`` is ``None`` and the scheduler picks a device
when it is computed, so ``None`` is the default device.
"""

from __future__ import annotations

import math
import sys
from contextlib import nullcontext
from types import ModuleType
from typing import Any

import numpy as np

from hermes_nb import context
from hermes_nb.backends import Device, devices, get_device
from hermes_nb.ir import dtypes

#: the version of the array API standard ``hm`` follows
API_VERSION = "2024.12"
#: the versions ``Tensor.__array_namespace__(api_version=...)`` accepts: the earlier ones
#: are subsets of 2024.12 for the functions Hermes has
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None

DeviceLike = str | Device | None

_KINDS = {
    "bool": (dtypes.bool_,),
    "signed integer": dtypes.SIGNED,
    "unsigned integer": dtypes.UNSIGNED,
    "integral": dtypes.INTEGERS,
    "real floating": dtypes.FLOATS,
    "complex floating": dtypes.COMPLEX,
    "numeric": (*dtypes.INTEGERS, *dtypes.FLOATS, *dtypes.COMPLEX),
}


def device_id(device: DeviceLike, op: str) -> str | None:
    """The id of ``device`` (an id string or a ``Device``), ``None`` for ``None``; an unknown
    device is a ``ValueError`` naming ``op`` and the devices there are."""
    if device is None:
        return None
    if not isinstance(device, (str, Device)):
        raise TypeError(f"{op}: device must be a device id such as 'cpu:0', a hm.Device or "
                        f"None, got {device!r} ({type(device).__name__})")
    try:
        return get_device(device).id
    except ValueError:
        available = ", ".join(d.id for d in devices())
        raise ValueError(f"{op}: device {device!r} is not a Hermes device; available: "
                         f"{available}") from None


def on_device(device: DeviceLike, op: str) -> Any:
    """A context in which new nodes are pinned to ``device`` (nothing changes for ``None``)."""
    target = device_id(device, op)
    return nullcontext() if target is None else context.device(target)


def namespace() -> ModuleType:
    """The ``hermes_nb`` module itself (imported before any of its submodules)."""
    return sys.modules[__name__.partition(".")[0]]


def array_namespace(api_version: str | None = None) -> ModuleType:
    """``Tensor.__array_namespace__``: ``hermes_nb``, for ``api_version`` None or one of
    :data:`API_VERSIONS`."""
    if api_version is not None and not isinstance(api_version, str):
        raise TypeError(f"__array_namespace__: api_version must be a string such as "
                        f"'2024.12' or None, got {api_version!r}")
    if api_version is not None and api_version not in API_VERSIONS:
        raise ValueError(f"__array_namespace__: api_version {api_version!r} is not supported; "
                         f"supported: {', '.join(API_VERSIONS)} (or None for {API_VERSION})")
    return namespace()


class Info:
    """What ``hm`` supports and where it runs (the array API's inspection namespace).

    >>> import hermes_nb as hm
    >>> info = hm.__array_namespace_info__()
    >>> "cpu:0" in info.devices()
    True
    >>> info.default_dtypes()["real floating"].name
    'float64'
    >>> info.capabilities()["boolean indexing"]
    False
    """

    def capabilities(self) -> dict[str, Any]:
        """Boolean-mask indexing and data-dependent output shapes are not supported (a
        lazy graph knows every shape when it is built); at most 64 dimensions, the most a
        NumPy array (every host buffer) has."""
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 64}

    def default_device(self) -> str | None:
        """The device of the enclosing ``hm.device(...)`` block, else ``None``: tensors are
        placed by the scheduler when they are computed."""
        return context.pinned_device()

    def devices(self) -> list[str]:
        """The ids of every device Hermes found, ``cpu:0`` first."""
        return [d.id for d in devices()]

    def default_dtypes(self, *, device: DeviceLike = None) -> dict[str, np.dtype | None]:
        """float64, complex128 and int64, as NumPy."""
        device_id(device, "default_dtypes")
        return {"real floating": dtypes.float64, "complex floating": dtypes.complex128,
                "integral": dtypes.int64, "indexing": dtypes.int64}

    def dtypes(self, *, device: DeviceLike = None,
               kind: str | tuple[str, ...] | None = None) -> dict[str, np.dtype]:
        """The dtypes ``device`` supports (float64 only on devices with fp64; every
        device's when ``device`` is None), of ``kind`` (a kind name of ``hm.isdtype``, a
        tuple of them, or None for all)."""
        target = device_id(device, "dtypes")
        kinds = (kind,) if isinstance(kind, str) else kind
        wanted = set(dtypes.SUPPORTED)
        if kinds is not None:
            for k in kinds:
                if k not in _KINDS:
                    raise ValueError(f"dtypes: kind {k!r} is not a dtype kind; allowed: "
                                     f"{', '.join(map(repr, _KINDS))}")
            wanted = {d for k in kinds for d in _KINDS[k]}
        dev = None if target is None else get_device(target)
        return {d.name if d != dtypes.bool_ else "bool": d for d in dtypes.SUPPORTED
                if d in wanted and (dev is None or dev.supports(d))}

    def __repr__(self) -> str:
        return "hermes_nb.__array_namespace_info__()"


def kinds() -> dict[str, tuple[np.dtype, ...]]:
    """The dtype kinds of the array API and the Hermes dtypes in each."""
    return dict(_KINDS)


def __array_namespace_info__() -> Info:
    """The array API's inspection namespace for ``hm``: devices, dtypes, capabilities."""
    return Info()
