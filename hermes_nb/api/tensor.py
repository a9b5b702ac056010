"""The lazy ``Tensor``: a handle on one node of the op graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hermes_nb.ir.node import Node, toposort

if TYPE_CHECKING:
    from hermes_nb.api.plan import Plan
    from hermes_nb.backends import Device

Axis = int | Sequence[int] | None


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
    # NumPy defers to our reflected operators instead of converting the tensor
    __array_ufunc__ = None

    def __init__(self, node: Node) -> None:
        self._node = node

    # ---- construction -------------------------------------------------------------
    @classmethod
    def from_numpy(cls, array: np.ndarray) -> Tensor:
        """Wrap a NumPy array (copied, so later changes to it do not leak in)."""
        from hermes_nb.api.creation import from_numpy

        return from_numpy(array)

    @classmethod
    def random(
        cls, shape: Sequence[int] | int, dtype: object = "float32", seed: int | None = None
    ) -> Tensor:
        """Uniform [0, 1) values; a given seed gives the same values on every device."""
        from hermes_nb.api.random import uniform

        return uniform(shape, dtype=dtype, seed=seed)

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
        if self.is_materialized:
            state = f"on {self.device}"
        else:
            ops = sum(1 for n in toposort([self._node]) if n.op not in _SOURCE_OPS)
            state = f"lazy, {ops} op{'s' if ops != 1 else ''}"
            if self.device:
                state += f", pinned to {self.device}"
        return f"Tensor(shape={shape}, dtype={self.dtype.name}, {state})"

    def _repr_html_(self) -> str:
        """Notebook view: shape, dtype, and whether it is lazy (with its op count) or where it lives."""
        import html

        if self.is_materialized:
            state = f"materialised on <code>{html.escape(str(self.device))}</code>"
        else:
            ops = sum(1 for n in toposort([self._node]) if n.op not in _SOURCE_OPS)
            state = f"lazy, {ops} op{'s' if ops != 1 else ''}"
            if self.device:
                state += f", pinned to <code>{html.escape(self.device)}</code>"
        return (
            f"<div class='hermes-tensor'><b>Tensor</b> shape=<code>{html.escape(str(self.shape))}"
            f"</code> dtype=<code>{html.escape(self.dtype.name)}</code> ({state})</div>"
        )

    # ---- evaluation ---------------------------------------------------------------
    def compute(self) -> Tensor:
        """Run the graph and return a materialised tensor (its value stays on its device)."""
        from hermes_nb.runtime import compute

        return compute(self)[0]

    def numpy(self) -> np.ndarray:
        """Run the graph and return the value as a read-only NumPy array.

        A computed tensor is immutable: on ``cpu:0`` the array is a view of the tensor's
        own buffer, so it is handed out read-only; ``np.array(t)`` gives a writable copy.
        """
        from hermes_nb.runtime import to_numpy

        view = to_numpy(self).view()
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

    def __bool__(self) -> bool:
        return self._scalar(bool)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, dtype is {self.dtype}")
        return self._scalar(int)

    def to(self, device: str | Device) -> Tensor:
        """This tensor's value on ``device``, e.g. ``t.to("opencl:0")``."""
        from hermes_nb.api.graph import check_capability
        from hermes_nb.backends import get_device

        target = get_device(device)
        check_capability("to", target.id, self.dtype, [self._node])
        node = Node("to_device", (self._node,), self.shape, self.dtype, {}, target.id)
        return Tensor(node)

    def explain(self) -> Plan:
        """The kernels this tensor's graph runs, in order, with their devices."""
        from hermes_nb.api.plan import explain

        return explain(self)

    def astype(self, dtype: object) -> Tensor:
        from hermes_nb.api.elementwise import astype

        return astype(self, dtype)

    # ---- operators ----------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return _ew().add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _ew().add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _ew().subtract(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _ew().subtract(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _ew().multiply(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _ew().multiply(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _ew().divide(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _ew().divide(other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _ew().floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _ew().floor_divide(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return _ew().remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return _ew().remainder(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return _ew().pow(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return _ew().pow(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        from hermes_nb.api.linalg import matmul

        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        from hermes_nb.api.linalg import matmul

        return matmul(other, self)

    def __neg__(self) -> Tensor:
        return _ew().negative(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _ew().abs(self)

    def __invert__(self) -> Tensor:
        return _ew().logical_not(self, operator="~")

    def __and__(self, other: Any) -> Tensor:
        return _ew().logical_and(self, other, operator="&")

    def __rand__(self, other: Any) -> Tensor:
        return _ew().logical_and(other, self, operator="&")

    def __or__(self, other: Any) -> Tensor:
        return _ew().logical_or(self, other, operator="|")

    def __ror__(self, other: Any) -> Tensor:
        return _ew().logical_or(other, self, operator="|")

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ew().equal(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ew().not_equal(self, other)

    def __lt__(self, other: Any) -> Tensor:
        return _ew().less(self, other)

    def __le__(self, other: Any) -> Tensor:
        return _ew().less_equal(self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _ew().greater(self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _ew().greater_equal(self, other)

    __hash__ = object.__hash__

    # ---- shape --------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Tensor:
        from hermes_nb.api.manipulation import getitem

        return getitem(self, key)

    @property
    def T(self) -> Tensor:
        from hermes_nb.api.manipulation import transpose

        return transpose(self)

    def reshape(self, *shape: int | Sequence[int]) -> Tensor:
        from hermes_nb.api.manipulation import reshape

        target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return reshape(self, target)  # type: ignore[arg-type]

    # ---- reductions ---------------------------------------------------------------
    def sum(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red().sum(self, axis=axis, keepdims=keepdims)

    def prod(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red().prod(self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red().mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red().max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return _red().min(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return _red().argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        return _red().argmin(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
        return _red().var(self, axis=axis, correction=correction, keepdims=keepdims)

    def std(self, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Tensor:
        return _red().std(self, axis=axis, correction=correction, keepdims=keepdims)


_SOURCE_OPS = frozenset({"constant", "random", "full", "arange", "buffer"})


def _ew() -> Any:
    from hermes_nb.api import elementwise

    return elementwise


def _red() -> Any:
    from hermes_nb.api import reductions

    return reductions
