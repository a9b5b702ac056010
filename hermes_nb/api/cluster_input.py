"""``hm.asarray`` of data already on a ``dask.distributed`` cluster: a ``Future`` of an array
or a ``dask.array.Array``. Neither library is imported unless such an object is passed."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes
from hermes_nb.ir.node import Node


def _is_future(obj: Any) -> bool:
    distributed = sys.modules.get("distributed")
    return distributed is not None and isinstance(obj, distributed.Future)


def _is_dask_array(obj: Any) -> bool:
    array = sys.modules.get("dask.array")
    return array is not None and isinstance(obj, array.Array)


def _has_client() -> bool:
    from distributed import default_client

    try:
        default_client()
    except ValueError:
        return False
    return True


def from_cluster(obj: Any) -> Any:
    """A tensor reading ``obj`` where it is, when ``obj`` is a Future or a dask array on a
    cluster; a dask array without a Client, computed here into a NumPy array; otherwise
    ``obj`` itself."""
    if _is_dask_array(obj) and ("distributed" not in sys.modules or not _has_client()):
        return np.asarray(obj.compute())
    if not (_is_future(obj) or _is_dask_array(obj)):
        return obj
    from hermes_nb.runtime.cluster_data import remote_of

    remote, shape, dtype = remote_of(obj)
    dt = dtypes.as_dtype(dtype, op="asarray")
    return Tensor(Node("buffer", (), shape, dt, {"handle": remote}, remote.device))
