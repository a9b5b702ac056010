"""The lazy ``Tensor``: a handle on one node of the op graph, and ``compute``.

Its operators and array methods (``+``, ``@``, ``[]``, ``sum``, ``astype``, ...) call the
array functions, which build tensors; :mod:`hermes_nb.api.methods` installs them, so this
module imports none of those functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from hermes_nb import context, runtime
from hermes_nb.api.graph import check_capability
from hermes_nb.backends import get_device
from hermes_nb.ir.node import Node, toposort
from hermes_nb.runtime.explain import explain_nodes
from hermes_nb.runtime.plan import Plan

if TYPE_CHECKING:
    from hermes_nb.backends import Device


class Tensor:
    """A lazily evaluated n-dimensional array.

    Operations build an immutable graph; nothing runs until ``compute()``,
    ``numpy()``, ``np.asarray(t)`` or ``hm.compute(...)``.

    >>> import hermes_nb as hm
    >>> t = (hm.arange(4, dtype="float32") * 2 + 1).sum()
    >>> t.shape, t.dtype.name
    ((), 'float32')
    >>> float(t)
    16.0
    """

    __slots__ = ("_node",)

    def __init__(self, node: Node) -> None:
        self._node = node

    # ---- metadata -----------------------------------------------------------------
    @property
    def node(self) -> Node:
        return self._node

    @property
    def shape(self) -> tuple[int, ...]:
        return self._node.shape

    @property
    def dtype(self) -> np.dtype:
        return self._node.dtype

    @property
    def ndim(self) -> int:
        return self._node.ndim

    @property
    def size(self) -> int:
        return self._node.size

    @property
    def device(self) -> str | None:
        """The id of the device this tensor is pinned to or lives on, if any."""
        return self._node.device

    @property
    def is_materialized(self) -> bool:
        return self._node.op == "buffer"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        shape = "(" + ", ".join(map(str, self.shape)) + ("," if self.ndim == 1 else "") + ")"
        state = f"on {self.device}" if self.is_materialized else self._lazy_state(str)
        return f"Tensor(shape={shape}, dtype={self.dtype.name}, {state})"

    def _lazy_state(self, code: Callable[[str], str]) -> str:
        """``lazy, N ops[, pinned to DEVICE]``, the device name passed through ``code``."""
        ops = sum(1 for n in toposort([self._node]) if n.op not in _SOURCE_OPS)
        state = f"lazy, {ops} op{'s' if ops != 1 else ''}"
        return state + (f", pinned to {code(self.device)}" if self.device else "")

    def _repr_html_(self) -> str:
        """Notebook view: shape, dtype, and whether it is lazy (with its op count) or where it lives."""
        import html

        def code(text: str) -> str:
            return f"<code>{html.escape(str(text))}</code>"

        state = (f"materialised on {code(self.device)}" if self.is_materialized
                 else self._lazy_state(code))
        return (
            f"<div class='hermes-tensor'><b>Tensor</b> shape=<code>{html.escape(str(self.shape))}"
            f"</code> dtype=<code>{html.escape(self.dtype.name)}</code> ({state})</div>"
        )

    # ---- evaluation ---------------------------------------------------------------
    def compute(self) -> Tensor:
        """Run the graph and return a materialised tensor (its value stays on its device)."""
        return compute(self)[0]

    def numpy(self) -> np.ndarray:
        """Run the graph and return the value as a read-only NumPy array.

        A computed tensor is immutable: on ``cpu:0`` the array is a view of the tensor's
        own buffer, so it is handed out read-only; ``np.array(t)`` gives a writable copy.
        """
        (value,) = runtime.execute([self._node])
        view = value.host().reshape(self.shape).view()
        view.flags.writeable = False
        return view

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's conversion protocol, honouring NumPy 2's ``copy=``: ``True`` gives a
        writable copy, ``None`` a read-only view where no conversion is needed, and
        ``False`` raises ``ValueError`` when ``dtype`` needs a conversion."""
        out = self.numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            if copy is False:
                raise ValueError(
                    f"Unable to avoid copy while creating an array as requested: converting "
                    f"a {out.dtype.name} tensor to {np.dtype(dtype).name} needs a copy")
            return out.astype(dtype)
        return out.copy() if copy else out

    def _scalar(self, kind: type) -> Any:
        if self.size != 1:
            raise TypeError(f"only size-1 tensors convert to {kind.__name__}, shape is {self.shape}")
        return kind(self.numpy().reshape(()))

    def __float__(self) -> float:
        return self._scalar(float)

    def __int__(self) -> int:
        return self._scalar(int)

    def __complex__(self) -> complex:
        return self._scalar(complex)

    def __bool__(self) -> bool:
        return self._scalar(bool)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, dtype is {self.dtype}")
        return self._scalar(int)

    def to(self, device: str | Device) -> Tensor:
        """This tensor's value on ``device``, e.g. ``t.to("opencl:0")``. With a
        ``dask.distributed`` Client active, a device any worker has (or one worker's,
        ``"tcp://host:port/opencl:0"``); one no worker has is a ``ValueError`` listing the
        cluster's devices."""
        target = context.device_info(device) if isinstance(device, str) else get_device(device)
        where = device if isinstance(device, str) and "://" in device else target.id
        check_capability("to", where, self.dtype, [self._node])
        node = Node("to_device", (self._node,), self.shape, self.dtype, {}, where)
        return Tensor(node)

    def explain(self) -> Plan:
        """The kernels this tensor's graph runs, in order, with their devices."""
        return explain_nodes([self._node])

    def __pos__(self) -> Tensor:
        return self

    def __dask_tokenize__(self) -> str:
        """Dask's token of a tensor: its node's key (the same graph, the same token)."""
        return self._node.key

    # NumPy-style equality builds a tensor (methods installs ``==``), so hash by identity
    __hash__ = object.__hash__


_SOURCE_OPS = frozenset({"constant", "random", "full", "arange", "buffer"})


def compute(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Materialise several tensors in one graph, so work they share runs once.

    >>> import hermes_nb as hm
    >>> a = hm.arange(3) * 2
    >>> b, c = hm.compute(a + 1, a - 1)
    >>> b.numpy().tolist(), c.numpy().tolist()
    ([1, 3, 5], [-1, 1, 3])
    """
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"compute: expected Tensors, got {type(t).__name__}")
    values = runtime.execute([t.node for t in tensors])
    return tuple(Tensor(runtime.materialised(t.node, v)) for t, v in zip(tensors, values))


def persist(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Compute several tensors in one graph and keep their values where they were computed.

    With a ``dask.distributed`` Client active, the values stay on the workers (a device
    buffer stays on its worker's device) and this returns once they are in worker memory;
    each returned tensor holds a ``distributed.Future``, and later graphs on that cluster read
    it in place, on the worker that has it, without the data coming to this process. Reading
    one here (``numpy()``) gathers it. Closing the client releases the data.

    Without a Client this is :func:`compute`: the values stay on their local devices.

    >>> import hermes_nb as hm
    >>> (a,) = hm.persist(hm.arange(3) * 2)
    >>> a.is_materialized, (a + 1).numpy().tolist()
    (True, [1, 3, 5])
    """
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"persist: expected Tensors, got {type(t).__name__}")
    values = runtime.execute([t.node for t in tensors], persist=True)
    return tuple(Tensor(runtime.materialised(t.node, v)) for t, v in zip(tensors, values))
