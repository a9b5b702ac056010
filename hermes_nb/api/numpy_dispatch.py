"""NumPy functions called on tensors: ``Tensor.__array_ufunc__`` and ``__array_function__``.

Where Hermes has the operation, the NumPy call builds Hermes ops and returns a lazy
``Tensor``, so nothing runs until it is computed and it fuses with the rest of the graph:
``np.exp(t)``, ``np.add(t, 1)``, ``a + t`` for a NumPy array ``a``, ``np.sum(t, axis=0)``,
``np.mean(t)``, ``np.where(c, t, 0)``, ``np.concatenate([t, u])``, ``np.transpose(t)``,
``np.matmul(t, u)`` and the others in :data:`UFUNCS`, :data:`REDUCTIONS` and
:func:`lazy_functions`.

Everything else is **materialised**: the tensors are computed, NumPy is given read-only
arrays of their values and its result (a NumPy array or scalar, not a Tensor) is
returned, e.g. ``np.sort(t)``, ``np.median(t)``, ``np.linalg.inv(t)``, ``np.isclose(t, u)``,
one-argument ``np.where(c)`` (its shape depends on the data), or a lazy function called
with an option Hermes has no equivalent for (``dtype=``/``where=`` on a ufunc, ``initial=``,
``order="F"``, ``decimals=2``). ``out=`` is refused with ``TypeError``: a tensor is
immutable, so nothing can be written into it, and writing a lazy result into a NumPy
array would compute it behind the caller's back (``out[...] = t`` says so plainly).

>>> import numpy as np, hermes_nb as hm
>>> t = hm.asarray([[1.0, 2.0], [3.0, 4.0]])
>>> s = np.sum(np.exp(t) * 2, axis=0)
>>> type(s).__name__, s.is_materialized
('Tensor', False)
>>> np.allclose(s.numpy(), np.sum(np.exp(t.numpy()) * 2, axis=0))
True
>>> type(np.median(t)).__name__  # no Hermes op: NumPy computes it
'float64'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from hermes_nb.api import (
    construct,
    contractions,
    elementwise,
    linalg,
    manipulation,
    reductions,
    utility,
)
from hermes_nb.api.tensor import Tensor

# NumPy ufunc name -> the Hermes function of the same meaning (same name when not listed)
_RENAMED = {
    "power": "pow", "absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "arctan2": "atan2", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "rint": "round", "invert": "bitwise_invert", "true_divide": "divide", "conjugate": "conj",
}
_ELEMENTWISE = (
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "negative",
    "absolute", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "sin",
    "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "sign", "reciprocal", "maximum",
    "minimum", "hypot", "copysign", "logaddexp", "isnan", "isinf", "isfinite", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "invert", "signbit", "nextafter", "bitwise_left_shift", "bitwise_right_shift", "conjugate",
)


def _positive(x: Any) -> Tensor:
    return +elementwise._as_tensor(x, "positive")


def _ufunc_table() -> dict[str, Callable[..., Tensor]]:
    table: dict[str, Callable[..., Tensor]] = {"positive": _positive, "matmul": linalg.matmul,
                                               "vecdot": contractions.vecdot}
    for name in _ELEMENTWISE:
        fn = getattr(elementwise, _RENAMED.get(name, name), None)
        if fn is not None:
            table[name] = fn
    return table


UFUNCS: dict[str, Callable[..., Tensor]] = _ufunc_table()
"""The ufuncs (by name) whose call on tensors builds a Hermes op."""

REDUCTIONS: dict[tuple[str, str], Callable[..., Tensor]] = {
    ("add", "reduce"): reductions.sum, ("multiply", "reduce"): reductions.prod,
    ("maximum", "reduce"): reductions.max, ("minimum", "reduce"): reductions.min,
    ("logical_and", "reduce"): utility.all, ("logical_or", "reduce"): utility.any,
    ("add", "accumulate"): utility.cumulative_sum,
    ("multiply", "accumulate"): utility.cumulative_prod,
}
"""``np.<ufunc>.reduce``/``accumulate`` on a tensor that build a Hermes reduction or scan."""

# ufunc keywords at their defaults change nothing; any other value is NumPy's to compute
_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "dtype": None,
                   "signature": None}


class _Materialise(Exception):
    """The call has no Hermes equivalent: NumPy computes it on the tensors' values."""


def _refuse_out(name: str, kwargs: dict[str, Any]) -> None:
    out = kwargs.get("out")
    if all(o is None for o in (out if isinstance(out, tuple) else (out,))):
        return
    raise TypeError(
        f"np.{name}(..., out=...) on a hermes Tensor is not supported: a tensor is immutable "
        f"and lazy; use the returned value (r = np.{name}(...)), or copy a computed one into "
        "your array (out[...] = r.numpy())")


def _foreign(value: Any) -> bool:
    """Whether ``value`` is an array of another library that overrides NumPy itself."""
    override = getattr(type(value), "__array_ufunc__", None)
    return not isinstance(value, (Tensor, np.ndarray)) and override is not None and \
        override is not np.ndarray.__array_ufunc__


def materialised(value: Any) -> Any:
    """``value`` with every Tensor in it (also inside lists, tuples and dicts) replaced by
    a read-only NumPy array of its computed value."""
    if isinstance(value, Tensor):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(materialised(v) for v in value)
    if isinstance(value, dict):
        return {k: materialised(v) for k, v in value.items()}
    return value


def array_ufunc(ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``Tensor.__array_ufunc__``: a lazy Tensor for the ufuncs and reductions Hermes has,
    NumPy's materialised result otherwise; ``out=`` is a ``TypeError``."""
    name = ufunc.__name__
    _refuse_out(name, kwargs)
    if method == "at":
        raise TypeError(f"np.{name}.at writes into its first argument in place; a hermes "
                        f"Tensor is immutable: use np.{name}.at on t.numpy().copy()")
    if any(_foreign(x) for x in inputs):
        return NotImplemented
    try:
        return _lazy_ufunc(name, method, inputs, dict(kwargs))
    except _Materialise:
        return getattr(ufunc, method)(*materialised(inputs), **materialised(kwargs))


def _lazy_ufunc(name: str, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> Tensor:
    kwargs.pop("out", None)
    if method == "__call__" and name in UFUNCS:
        if kwargs.pop("where", True) is not True or _changes(kwargs):
            raise _Materialise
        return UFUNCS[name](*inputs)
    fn = REDUCTIONS.get((name, method))
    if fn is None or len(inputs) != 1 or kwargs.pop("dtype", None) is not None:
        raise _Materialise
    axis = kwargs.pop("axis", 0)
    if method == "accumulate":
        if kwargs:
            raise _Materialise
        return fn(inputs[0], axis=axis)
    keepdims = kwargs.pop("keepdims", False)
    if kwargs:  # initial=, where=
        raise _Materialise
    return fn(inputs[0], axis=axis, keepdims=keepdims)


def _changes(kwargs: dict[str, Any]) -> bool:
    return any(k not in _UFUNC_DEFAULTS or v != _UFUNC_DEFAULTS[k] for k, v in kwargs.items())


def array_function(func: Callable[..., Any], types: Sequence[type], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """``Tensor.__array_function__``: a lazy Tensor for the functions Hermes has, NumPy's
    materialised result otherwise; ``out=`` is a ``TypeError``."""
    if not all(issubclass(t, (Tensor, np.ndarray)) for t in types):
        return NotImplemented
    _refuse_out(func.__name__, kwargs)
    adapter = lazy_functions().get(func)
    if adapter is not None:
        try:
            _signature(adapter).bind(*args, **kwargs)
        except TypeError:  # a NumPy option the adapter does not take
            adapter = None
    if adapter is not None:
        try:
            return adapter(*args, **kwargs)
        except _Materialise:
            pass
    return func(*materialised(args), **materialised(kwargs))


_signature = cache(inspect.signature)


# ---- adapters: NumPy's parameter names, Hermes' functions ------------------------------
def _cast(a: Any, dtype: object) -> Any:
    return a if dtype is None else elementwise.astype(elementwise._as_tensor(a, "astype"), dtype)


def _reduction(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def reduce(a: Any, axis: Any = None, dtype: object = None, out: None = None,
               keepdims: bool = False) -> Tensor:
        return fn(_cast(a, dtype), axis=axis, keepdims=bool(keepdims))

    return reduce


def _extremum(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def extremum(a: Any, axis: Any = None, out: None = None, keepdims: bool = False
                 ) -> Tensor:
        return fn(a, axis=axis, keepdims=bool(keepdims))

    return extremum


def _spread(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def spread(a: Any, axis: Any = None, dtype: object = None, out: None = None,
               ddof: float = 0, keepdims: bool = False, *, correction: float | None = None
               ) -> Tensor:
        return fn(_cast(a, dtype), axis=axis, keepdims=bool(keepdims),
                  correction=ddof if correction is None else correction)

    return spread


def _scan(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def scan(a: Any, axis: int | None = None, dtype: object = None, out: None = None
             ) -> Tensor:
        if axis is None:
            a, axis = manipulation.reshape(a, (-1,)), 0
        return fn(a, axis=axis, dtype=dtype)

    return scan


def _where(condition: Any, x: Any = None, y: Any = None) -> Tensor:
    if x is None or y is None:  # np.where(c): the indices, a data-dependent shape
        raise _Materialise
    return elementwise.where(condition, x, y)


def _joined(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def join(arrays: Sequence[Any], axis: int | None = 0, out: None = None, *,
             dtype: object = None, casting: str = "same_kind") -> Tensor:
        if dtype is not None or casting != "same_kind":
            raise _Materialise
        return fn(list(arrays), axis=axis)

    return join


def _reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: bool | None = None) -> Tensor:
    if order != "C":
        raise _Materialise
    return manipulation.reshape(a, newshape if shape is None else shape, copy=copy)


def _ravel(a: Any, order: str = "C") -> Tensor:
    if order not in ("C", "K"):
        raise _Materialise
    return manipulation.reshape(a, (-1,))


def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: None = None, *, min: Any = None,
          max: Any = None) -> Tensor:
    return elementwise.clip(a, a_min if min is None else min, a_max if max is None else max)


def _expand_dims(a: Any, axis: Any) -> Tensor:
    if not isinstance(axis, (int, np.integer)):
        raise _Materialise
    return manipulation.expand_dims(a, axis=int(axis))


def _round(a: Any, decimals: int = 0, out: None = None) -> Tensor:
    if decimals != 0:
        raise _Materialise
    return elementwise.round(a)


def _dot(a: Any, b: Any, out: None = None) -> Tensor:
    if not all(1 <= getattr(v, "ndim", 0) <= 2 for v in (a, b)):
        raise _Materialise  # NumPy's dot of 0-d or N-d arguments is not matmul
    return linalg.matmul(a, b)


def _like(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def like(a: Any, *fill: Any, dtype: object = None, order: str = "K", subok: bool = True,
             shape: Any = None, device: Any = None) -> Tensor:
        if order != "K" or shape is not None or len(fill) > 1:
            raise _Materialise
        return fn(a, *fill, dtype=dtype, device=device)

    return like


def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*(x.dtype if isinstance(x, Tensor) else x for x in arrays_and_dtypes))


def _functions() -> dict[str, Callable[..., Any]]:
    """NumPy function name -> the adapter that builds Hermes ops for it."""
    m, u, c = manipulation, utility, construct
    table: dict[str, Callable[..., Any]] = {
        "sum": _reduction(reductions.sum), "prod": _reduction(reductions.prod),
        "mean": _reduction(reductions.mean), "std": _spread(reductions.std),
        "var": _spread(reductions.var), "cumsum": _scan(u.cumulative_sum),
        "cumprod": _scan(u.cumulative_prod), "where": _where, "dot": _dot,
        "concatenate": _joined(m.concat), "concat": _joined(m.concat),
        "stack": _joined(m.stack), "reshape": _reshape, "ravel": _ravel, "clip": _clip,
        "expand_dims": _expand_dims, "round": _round, "around": _round,
        "result_type": _result_type,
        "transpose": lambda a, axes=None: m.transpose(a, axes),
        "permute_dims": lambda a, axes=None: m.transpose(a, axes),
        "matrix_transpose": lambda x: m.matrix_transpose(x),
        "broadcast_to": lambda array, shape: m.broadcast_to(array, shape),
        "broadcast_arrays": lambda *args: tuple(m.broadcast_arrays(*args)),
        "squeeze": lambda a, axis=None: m.squeeze(a, axis=axis),
        "flip": lambda m_, axis=None: m.flip(m_, axis=axis),
        "roll": lambda a, shift, axis=None: m.roll(a, shift, axis=axis),
        "moveaxis": lambda a, source, destination: m.moveaxis(a, source, destination),
        "tile": lambda A, reps: m.tile(A, (reps,) if isinstance(reps, int) else reps),
        "repeat": lambda a, repeats, axis=None: m.repeat(a, repeats, axis=axis),
        "unstack": lambda x, *, axis=0: m.unstack(x, axis=axis),
        "diff": lambda a, n=1, axis=-1, prepend=None, append=None: u.diff(
            a, n=n, axis=axis, prepend=prepend, append=append),
        "searchsorted": lambda a, v, side="left", sorter=None: u.searchsorted(
            a, v, side=side, sorter=sorter),
        "count_nonzero": lambda a, axis=None, *, keepdims=False: u.count_nonzero(
            a, axis=axis, keepdims=keepdims),
        "tensordot": lambda a, b, axes=2: contractions.tensordot(a, b, axes=axes),
        "tril": lambda m_, k=0: c.tril(m_, k=k), "triu": lambda m_, k=0: c.triu(m_, k=k),
        "zeros_like": _like(c.zeros_like), "ones_like": _like(c.ones_like),
        "empty_like": _like(c.empty_like), "full_like": _like(c.full_like),
        "astype": lambda x, dtype, /, *, copy=True, device=None: elementwise.astype(x, dtype),
        "shape": lambda a: a.shape, "ndim": lambda a: a.ndim,
        "size": lambda a, axis=None: a.size if axis is None else a.shape[axis],
    }
    for name, fn in (("max", reductions.max), ("amax", reductions.max),
                     ("min", reductions.min), ("amin", reductions.min),
                     ("argmax", reductions.argmax), ("argmin", reductions.argmin),
                     ("all", utility.all), ("any", utility.any)):
        table[name] = _extremum(fn)
    return table


@cache
def lazy_functions() -> dict[Callable[..., Any], Callable[..., Any]]:
    """The NumPy functions (those this NumPy has) that stay lazy on a Tensor, each with the
    adapter that maps its arguments to Hermes' function."""
    return {getattr(np, name): fn for name, fn in _functions().items() if hasattr(np, name)}
