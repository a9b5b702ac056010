"""``Tensor``'s operators and array methods, installed on the class once the functions
they call exist: ``elementwise``, ``manipulation``, ``reductions`` and ``linalg`` build
tensors, so ``api/tensor.py`` cannot import them without a circle. ``hermes_nb.api``
imports this module, so every ``Tensor`` has them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from hermes_nb.api import (
    composed,
    creation,
    dlpack,
    elementwise,
    linalg,
    manipulation,
    namespace_info,
    numpy_dispatch,
    reductions,
    searching,
)
from hermes_nb.api import random as api_random
from hermes_nb.api.tensor import Tensor

Axis = int | Sequence[int] | None


# ---- construction --------------------------------------------------------------------
def _from_numpy(cls: type[Tensor], array: np.ndarray) -> Tensor:
    """Wrap a NumPy array (copied, so later changes to it do not leak in; ``hm.asarray``
    without ``copy=True`` reads it in place instead)."""
    return creation.from_numpy(array)


def _random(cls: type[Tensor], shape: Sequence[int] | int, dtype: object = "float32",
            seed: int | None = None) -> Tensor:
    """Uniform [0, 1) values; a given seed gives the same values on every device."""
    return api_random.uniform(shape, dtype=dtype, seed=seed)


def _astype(self: Tensor, dtype: object, /, *, copy: bool = True, device: Any = None
            ) -> Tensor:
    return elementwise.astype(self, dtype, copy=copy, device=device)


# ---- operators -----------------------------------------------------------------------
def _binary(fn: Callable[..., Tensor], **kw: Any) -> tuple[Callable[..., Tensor], ...]:
    """``self op other`` and the reflected ``other op self``."""
    def forward(self: Tensor, other: Any) -> Tensor:
        return fn(self, other, **kw)

    def reflected(self: Tensor, other: Any) -> Tensor:
        return fn(other, self, **kw)

    return forward, reflected


def _unary(fn: Callable[..., Tensor], **kw: Any) -> Callable[[Tensor], Tensor]:
    def apply(self: Tensor) -> Tensor:
        return fn(self, **kw)

    return apply


def _comparison(fn: Callable[..., Tensor]) -> Callable[[Tensor, Any], Tensor]:
    return _binary(fn)[0]


_REFLECTED = {
    "add": elementwise.add, "sub": elementwise.subtract, "mul": elementwise.multiply,
    "truediv": elementwise.divide, "floordiv": elementwise.floor_divide,
    "mod": elementwise.remainder, "pow": elementwise.pow, "matmul": linalg.matmul,
}
# the array API's bitwise operators: ``&``, ``|``, ``^`` and ``~`` on integers and bools
# (on bools they are the logical ones); floats are refused with the op's TypeError
_BITWISE = {
    "and": elementwise.bitwise_and, "or": elementwise.bitwise_or,
    "xor": elementwise.bitwise_xor, "lshift": composed.bitwise_left_shift,
    "rshift": composed.bitwise_right_shift,
}
_COMPARISONS = {
    "eq": elementwise.equal, "ne": elementwise.not_equal, "lt": elementwise.less,
    "le": elementwise.less_equal, "gt": elementwise.greater, "ge": elementwise.greater_equal,
}


# ---- shape ---------------------------------------------------------------------------
def _getitem(self: Tensor, key: Any) -> Tensor:
    mask = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if isinstance(mask, (Tensor, np.ndarray)) and mask.dtype == np.bool_:
        return searching.boolean_mask(self, mask)  # data-dependent: the mask is read now
    return manipulation.getitem(self, key)


def _setitem(self: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: ``x`` now stands for ``x.at[key].set(value)``, a new lazy value.

    The tensor's value itself never changes: graphs built from ``x`` before keep reading the
    old value (there are no views to update), and so does a tensor ``x`` was copied into
    (``asarray(x, copy=True)``); only this ``Tensor`` object moves to the new value.

    >>> import hermes_nb as hm
    >>> x = hm.zeros(3)
    >>> y = x + 1
    >>> x[1] = 5.0
    >>> x.numpy().tolist(), y.numpy().tolist()
    ([0.0, 5.0, 0.0], [1.0, 1.0, 1.0])
    """
    self._node = searching.IndexUpdate(self, key).set(value).node


def _transposed(self: Tensor) -> Tensor:
    return manipulation.transpose(self)


def _matrix_transposed(self: Tensor) -> Tensor:
    """The last two axes swapped (``hm.matrix_transpose``); ``ValueError`` below 2-D."""
    return manipulation.matrix_transpose(self)


def _reshape(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
    target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return manipulation.reshape(self, target)  # type: ignore[arg-type]


# ---- the array API's array object ----------------------------------------------------
def _array_namespace(self: Tensor, /, *, api_version: str | None = None) -> ModuleType:
    """``hermes_nb``, the array API namespace of tensors (``api_version`` None or one of
    2021.12 to 2024.12)."""
    return namespace_info.array_namespace(api_version)


def _to_device(self: Tensor, device: str | Any, /, *, stream: None = None) -> Tensor:
    """This tensor's value on ``device`` (an id or a ``hm.Device``), like ``t.to(device)``;
    ``stream`` must be None (Hermes orders work on each device itself)."""
    if stream is not None:
        raise ValueError(f"to_device: stream={stream!r} is not supported; pass None")
    return self.to(namespace_info.device_id(device, "to_device"))


# ---- exchange with NumPy and other libraries ------------------------------------------
def _dlpack(self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The DLPack capsule of this tensor's value (computed first if lazy), for
    ``np.from_dlpack(t)``, ``torch.from_dlpack(t)``, ``torch.as_tensor(t)``.

    On the host (``cpu:0``; OpenCL sharing host memory) it is the value's own memory, no
    copy, flagged read-only for consumers of DLPack >= 1.0 (``max_version=(1, 0)``: NumPy
    >= 2.1 then gives a read-only array; PyTorch, which has no read-only tensors, ignores the
    flag). An older consumer gets a copy (``copy=False`` raises ``BufferError``). On
    ``cuda:N`` it is CuPy's capsule of the device buffer, ``stream`` waiting for the kernels
    that made it. See :mod:`hermes_nb.api.dlpack`.
    """
    return dlpack.export(self, stream=stream, max_version=max_version, dl_device=dl_device,
                         copy=copy)


def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """``(2, N)`` (CUDA) for a tensor on or pinned to ``cuda:N``, else ``(1, 0)`` (host)."""
    return dlpack.export_device(self)


def _array_ufunc(self: Tensor, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any
                 ) -> Any:
    """NumPy ufuncs on tensors: ``np.exp(t)``, ``np.add(t, 1)``, ``a * t``, ``np.add.reduce``
    build lazy Hermes ops where Hermes has them; any other ufunc, method or option is
    **materialised**: NumPy computes it on the tensors' values and returns a NumPy array.
    ``out=`` raises ``TypeError``. See :mod:`hermes_nb.api.numpy_dispatch`."""
    return numpy_dispatch.array_ufunc(ufunc, method, *inputs, **kwargs)


def _array_function(self: Tensor, func: Callable[..., Any], types: Sequence[type],
                    args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """NumPy functions on tensors: ``np.sum``, ``np.mean``, ``np.where``, ``np.concatenate``,
    ``np.transpose``, ... return lazy Tensors where Hermes has the op; any other function
    (``np.sort``, ``np.median``, ``np.linalg.*``) is **materialised**: NumPy computes it on
    the tensors' values and returns its NumPy result. ``out=`` raises ``TypeError``. See
    :mod:`hermes_nb.api.numpy_dispatch`."""
    return numpy_dispatch.array_function(func, types, args, kwargs)


# ---- reductions ----------------------------------------------------------------------
def _reduction(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def reduce(self: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
        return fn(self, axis=axis, keepdims=keepdims)

    reduce.__name__, reduce.__doc__ = fn.__name__, fn.__doc__
    return reduce


def _spread(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def spread(self: Tensor, axis: Axis = None, correction: float = 0.0,
               keepdims: bool = False) -> Tensor:
        return fn(self, axis=axis, correction=correction, keepdims=keepdims)

    spread.__name__, spread.__doc__ = fn.__name__, fn.__doc__
    return spread


def _methods() -> dict[str, Any]:
    """Every method this module installs, by name."""
    methods: dict[str, Any] = {
        "from_numpy": classmethod(_from_numpy), "random": classmethod(_random),
        "astype": _astype,
        "__neg__": _unary(elementwise.negative), "__abs__": _unary(elementwise.abs),
        "__invert__": _unary(elementwise.bitwise_invert),
        "__getitem__": _getitem, "__setitem__": _setitem,
        "T": property(_transposed), "reshape": _reshape,
        "at": property(searching.IndexUpdates),
        "mT": property(_matrix_transposed), "__array_namespace__": _array_namespace,
        "to_device": _to_device,
        "__dlpack__": _dlpack, "__dlpack_device__": _dlpack_device,
        "__array_ufunc__": _array_ufunc, "__array_function__": _array_function,
        "var": _spread(reductions.var), "std": _spread(reductions.std),
    }
    for name, fn in _REFLECTED.items():
        methods[f"__{name}__"], methods[f"__r{name}__"] = _binary(fn)
    for name, fn in _BITWISE.items():
        methods[f"__{name}__"], methods[f"__r{name}__"] = _binary(fn)
    for name, fn in _COMPARISONS.items():
        methods[f"__{name}__"] = _comparison(fn)
    for fn in (reductions.sum, reductions.prod, reductions.mean, reductions.max,
               reductions.min, reductions.argmax, reductions.argmin):
        methods[fn.__name__] = _reduction(fn)
    return methods


def _install() -> None:
    for name, method in _methods().items():
        if callable(method) and not isinstance(method, type):
            method.__qualname__ = f"Tensor.{name}"
        setattr(Tensor, name, method)


_install()
