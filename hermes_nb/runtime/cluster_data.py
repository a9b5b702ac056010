"""Data where it is used, on a ``dask.distributed`` cluster.

:func:`for_cluster` rewrites a lowered graph before it is sent:

* a large host input (a constant holding a NumPy array, or a value computed locally) is
  scattered once to the workers, straight from this process (``cluster.direct``: the
  scheduler never holds the bytes), and the graph names its Future; the Future is cached for the client
  by the array's content, so a later graph over the same array sends nothing again;
* a persisted tensor (:class:`~hermes_nb.runtime.remote.Remote`) is named by its Future,
  so its value is read in place on the worker that holds it;
* small constants are folded into each kernel task that reads them: one task per kernel.

:func:`kept` turns the Futures of a persisted run into :class:`Remote` handles.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hermes_nb.ir.node import BORROWED, OpSpec
from hermes_nb.runtime.cluster import direct
from hermes_nb.runtime.lower import load_host_source, load_snapshot, run_op
from hermes_nb.runtime.remote import Remote, fetched
from hermes_nb.runtime.resident import Resident

# Above this a host value is scattered; below it travels in the graph, where it costs less
# than the scatter's round trip. Dask warns of a large graph only from 10 MB.
SCATTER_BYTES = 1 << 20

_LOADS = (load_host_source, load_snapshot)
_lock = threading.Lock()
# client id -> content token -> Future of the scattered value. Arrays of equal content share
# one Future; it is dropped (which releases the data on the workers) when the last array or
# computed value sent under that token is collected, or when a borrowed array's contents
# changed and the new contents were sent
_scattered: dict[str, dict[str, Any]] = {}
# a holder is (id of an array, the region of it a constant reads: its data address, shape
# and strides), so views of one array, e.g. images[i], each keep their own copy
Holder = tuple[int, tuple[Any, ...]]
_owners: dict[tuple[str, str], set[Holder]] = {}  # (client id, token) -> its holders
_latest: dict[tuple[str, Holder], str] = {}  # (client id, holder) -> its token
_watched: set[tuple[str, int]] = set()  # (client id, id of an array) with a finalizer


def load_scattered(spec: OpSpec, value: Any) -> Resident:
    """A constant whose array was scattered: upload the worker's copy to the device."""
    if isinstance(value, Resident):
        return value
    return load_host_source(replace(spec, attrs={**spec.attrs, "value": value}))


def for_cluster(client: Any, graph: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``graph`` as it is sent to ``client``'s cluster (see the module's docstring)."""
    sends = _Sends(client)
    out: dict[str, Any] = {}
    for key, task in graph.items():
        if isinstance(task, Resident) and task.nbytes >= SCATTER_BYTES:
            out[key] = sends.future(task, task.token, task)
        elif isinstance(task, tuple) and task and task[0] is fetched:
            out[key] = task[1].usable_by(client)
        elif _is_load(task):
            out[key] = _source(sends, task)
        elif _is_kernel(task):  # loads lowered inline into their one reader
            out[key] = task[:4] + tuple(_source(sends, a) if _is_load(a) else a
                                        for a in task[4:])
        else:
            out[key] = task
    futures = sends.send()
    if futures:
        out = {k: _filled(t, futures) for k, t in out.items()}
    return _folded(out, set(keys))


@dataclass(frozen=True)
class _Pending:
    """Where a value being scattered goes in the graph, until its Future exists."""

    key: str


class _Sends:
    """The values one graph scatters, sent together in one ``client.scatter`` call."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.values: dict[str, Any] = {}
        self.owners: list[tuple[str, Any, tuple[Any, ...]]] = []

    def future(self, value: Any, token: str, owner: Any, region: tuple[Any, ...] = ()) -> Any:
        """The cached Future of ``value``, or a placeholder for the one :meth:`send` makes."""
        with _lock:
            cached = _scattered.get(self.client.id, {}).get(token)
        self.owners.append((token, owner, region))
        if cached is not None and cached.status == "finished":
            return cached
        key = f"hermes-data-{token}"  # never a graph key: a wanted constant's task reads it
        self.values[key] = value
        return _Pending(key)

    def send(self) -> dict[str, Any]:
        futures = self.client.scatter(self.values, direct=direct(self.client)) \
            if self.values else {}
        with _lock:
            cache = _scattered.setdefault(self.client.id, {})
            for key, future in futures.items():
                cache[key.removeprefix("hermes-data-")] = future
            for token, owner, region in self.owners:
                _adopt(self.client.id, token, owner, region)
        return futures


def _filled(task: Any, futures: dict[str, Any]) -> Any:
    if isinstance(task, _Pending):
        return futures[task.key]
    if isinstance(task, tuple):
        return tuple(_filled(a, futures) for a in task)
    return task


def _is_load(task: Any) -> bool:
    return isinstance(task, tuple) and len(task) == 2 and any(task[0] is f for f in _LOADS)


def _source(sends: _Sends, task: tuple[Any, OpSpec]) -> Any:
    """A load task, naming a scattered Future in place of a large array."""
    load, spec = task
    value = spec.attrs.get("value") if spec.op == "constant" else None
    if not isinstance(value, np.ndarray) or value.nbytes < SCATTER_BYTES:
        return task
    # a copied constant's key is derived from its content; a borrowed array's content may
    # have changed since it was built, so it is hashed now
    token = _content_token(value) if spec.attrs.get(BORROWED) \
        else spec.key.removeprefix("hermes-")
    if load is load_snapshot:  # the worker's copy is the snapshot: nothing can write to it
        value = np.array(value, order="C", copy=True)
    bare = replace(spec, attrs={k: v for k, v in spec.attrs.items() if k != "value"})
    # the workers' copy lives as long as the array it was made from: a borrowed constant's
    # view is made anew by each hm.asarray, the caller's array (its base) is not
    owner, region = spec.attrs["value"], ()
    if spec.attrs.get(BORROWED) and isinstance(owner.base, np.ndarray):
        region = (owner.__array_interface__["data"][0], owner.shape, owner.strides)
        owner = owner.base
    return (load_scattered, bare, sends.future(value, token, owner, region))


def _content_token(value: np.ndarray) -> str:
    from dask.base import tokenize

    return tokenize(value)


def _adopt(client_id: str, token: str, owner: Any, region: tuple[Any, ...]) -> None:
    """Count ``region`` of ``owner`` (the part of the array a constant reads) as holding the
    contents ``token`` names (under the lock)."""
    holder = (id(owner), region)
    previous = _latest.get((client_id, holder))
    if previous == token:
        return
    if (client_id, id(owner)) not in _watched:
        _watched.add((client_id, id(owner)))
        weakref.finalize(owner, _forget, client_id, id(owner))
    if previous is not None:
        _release(client_id, previous, holder)
    _latest[(client_id, holder)] = token
    _owners.setdefault((client_id, token), set()).add(holder)


def _release(client_id: str, token: str, holder: tuple[int, tuple[Any, ...]]) -> None:
    holders = _owners.get((client_id, token), set())
    holders.discard(holder)
    if not holders:
        _owners.pop((client_id, token), None)
        _scattered.get(client_id, {}).pop(token, None)


def _forget(client_id: str, owner: int) -> None:
    with _lock:
        _watched.discard((client_id, owner))
        for (cid, holder) in [k for k in _latest if k[0] == client_id and k[1][0] == owner]:
            _release(cid, _latest.pop((cid, holder)), holder)


def _folded(graph: dict[str, Any], wanted: set[str]) -> dict[str, Any]:
    """Source loads read by kernel tasks folded into those tasks: Dask runs a nested task
    inline, so each kernel is one task on the scheduler, and a scattered Future stays a
    dependency of the kernel, which Dask runs where that data is."""
    readers: dict[str, int] = {}
    for task in graph.values():
        if _is_kernel(task):
            for arg in task[4:]:
                if isinstance(arg, str):
                    readers[arg] = readers.get(arg, 0) + 1
    sources = {k for k, t in graph.items() if k not in wanted and _is_source(t)}
    references = _all_references(graph)
    out: dict[str, Any] = {}
    for key, task in graph.items():
        if key in sources and readers.get(key, 0) == references.get(key, 0):
            continue  # every reader takes it inline
        if _is_kernel(task):
            task = task[:4] + tuple(graph[a] if isinstance(a, str) and a in sources
                                    and readers.get(a, 0) == references.get(a, 0) else a
                                    for a in task[4:])
        out[key] = task
    return out


def _is_kernel(task: Any) -> bool:
    return isinstance(task, tuple) and len(task) >= 4 and task[0] is run_op


def _is_source(task: Any) -> bool:
    """A load that is cheap to repeat in each reader: a scattered value's load, or a small
    constant's (a random draw or a large embedded array stays one task)."""
    if not isinstance(task, tuple) or not task:
        return False
    if task[0] is load_scattered:
        return True
    return _is_load(task) and task[1].op == "constant"


def _all_references(graph: dict[str, Any]) -> dict[str, int]:
    """How many times each key is named as an argument of any task, nested ones included."""
    counts: dict[str, int] = {}
    stack = [t[1:] for t in graph.values() if isinstance(t, tuple)]
    while stack:
        for arg in stack.pop():
            if isinstance(arg, str) and arg in graph:
                counts[arg] = counts.get(arg, 0) + 1
            elif isinstance(arg, (tuple, list)):
                stack.append(arg)
    return counts


def kept(futures: list[Any], graph: dict[str, Any], keys: list[str], nbytes: list[int]
         ) -> list[Remote]:
    """The Futures of a persisted run, once they are in worker memory, as handles; a failed
    task's error is raised here, as ``compute`` would raise it."""
    from distributed import wait

    wait(futures)
    for future in futures:
        if future.status == "error":
            future.result()  # raises the task's exception
    return [Remote(f, _device_of(graph.get(k)), n) for f, k, n in zip(futures, keys, nbytes)]


def _device_of(task: Any) -> str:
    if isinstance(task, tuple) and len(task) > 1 and isinstance(task[1], OpSpec):
        return task[1].device
    if isinstance(task, (Resident, Remote)):
        return task.device
    return "cpu:0"


def as_resident(value: Any) -> Resident:
    """On a worker: a Future's value (an array) as a host value next to it."""
    host = value.host() if isinstance(value, Resident) else value
    return Resident("cpu:0", np.ascontiguousarray(host))


def array_facts(value: Resident) -> tuple[tuple[int, ...], str]:
    """On a worker: the shape and dtype a tensor needs when it is built."""
    return tuple(value.buffer.shape), value.buffer.dtype.str


def remote_of(obj: Any) -> tuple[Remote, tuple[int, ...], np.dtype]:
    """A ``distributed.Future`` of an array, or a ``dask.array.Array`` (computed on the
    active client's cluster into one array on a worker, ``client.compute``), as a handle on
    that worker, with the shape and dtype read there: the data stays on the cluster."""
    import uuid

    from distributed import Future, default_client

    if isinstance(obj, Future):
        client, future = obj.client, obj
    else:
        client = default_client()
        future = client.compute(obj)
    held = client.submit(as_resident, future, key=f"hermes-buffer-{uuid.uuid4().hex}")
    shape, dtype = client.submit(array_facts, held, pure=False).result()
    dt = np.dtype(dtype)
    return Remote(held, "cpu:0", int(np.prod(shape)) * dt.itemsize), shape, dt
