"""The array API's elementwise functions that Hermes builds from other ops.

``logical_xor`` is ``!=`` on bools, ``positive`` an identity, ``signbit`` a comparison of
``copysign(1, x)`` and the bit shifts products and floor divisions by powers of two, so
none of them needs a line in the code generators' tables: every device runs them as the
ops they are made of (and fuses them like any other elementwise tree). ``nextafter``, which
steps the bits of a float, is computed now on the host, like ``sort``.
"""

from __future__ import annotations

import numpy as np

from hermes_nb.api import elementwise as ew
from hermes_nb.api.searching import _back, _value, _xp
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes
from hermes_nb.ir.infer import broadcast_shapes

Operand = ew.Operand


def logical_xor(x1: Operand, x2: Operand, /) -> Tensor:
    """True where exactly one of ``x1`` and ``x2`` is true (nonzero values count as true).

    >>> import hermes_nb as hm
    >>> hm.logical_xor(hm.asarray([True, True, False]), False).numpy().tolist()
    [True, True, False]
    """
    a = ew.astype(ew._as_tensor(x1, "logical_xor"), dtypes.bool_)
    b = ew.astype(ew._as_tensor(x2, "logical_xor"), dtypes.bool_)
    return ew._elementwise("not_equal", [a, b], dtypes.bool_)


def positive(x: Operand, /) -> Tensor:
    """``+x``: ``x`` itself (tensors are immutable, so no copy is needed); bool is refused
    like in ``negative``.

    >>> import hermes_nb as hm
    >>> hm.positive(hm.asarray([-1.5, 2.0])).numpy().tolist()
    [-1.5, 2.0]
    """
    t = ew._as_tensor(x, "positive")
    ew._reject_bool("positive", t.dtype)
    return t


def signbit(x: Operand, /) -> Tensor:
    """True where the sign bit of ``x`` is set: negative numbers, ``-0.0``, ``-inf`` and a
    NaN with its sign bit set. Integers: ``x < 0``.

    >>> import hermes_nb as hm
    >>> hm.signbit(hm.asarray([-0.0, 0.0, -2.0, float("inf")])).numpy().tolist()
    [True, False, True, False]
    """
    t = ew._as_tensor(x, "signbit")
    ew._reject_bool("signbit", t.dtype, "real-valued")
    dtypes.refuse_complex("signbit", t.dtype)  # the standard defines it for reals only
    if dtypes.is_integer(t.dtype):
        return ew._binary("less", t, 0)
    # copysign carries the sign bit of NaN and of -0.0, which comparisons cannot see
    return ew._binary("less", ew._binary("copysign", 1.0, t), 0.0)


def _shift_operands(op: str, x1: Operand, x2: Operand) -> tuple[Tensor, Tensor, int]:
    """``x1`` and ``x2`` in their promoted integer dtype, and its width in bits."""
    a, b = ew._operand(x1, op), ew._operand(x2, op)
    for name, value in (("x1", a), ("x2", b)):
        kind = value.dtype if isinstance(value, Tensor) else np.dtype(type(value))
        if isinstance(value, bool) or not dtypes.is_integer(kind):
            raise TypeError(f"{op}: argument {name} has "
                            f"{'dtype ' + kind.name if isinstance(value, Tensor) else repr(value)}"
                            f"; {op} is defined for integer dtypes only "
                            f"({', '.join(d.name for d in dtypes.SUPPORTED if d.kind in 'iu')})")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = ew._as_tensor(a, op)
    work = dtypes.result_type(ew._dtype_of(a), ew._dtype_of(b))
    return ew.cast(a, work, op), ew.cast(b, work, op), work.itemsize * 8


def bitwise_left_shift(x1: Operand, x2: Operand, /) -> Tensor:
    """``x1 << x2`` (``x2`` >= 0): ``x1 * 2**x2`` in ``x1``'s wrapping integer arithmetic;
    shifts by the width of the dtype or more give 0.

    >>> import hermes_nb as hm
    >>> hm.bitwise_left_shift(hm.asarray([1, 3, -1]), 2).numpy().tolist()
    [4, 12, -4]
    """
    a, b, bits = _shift_operands("bitwise_left_shift", x1, x2)
    in_range = ew._binary("less", b, bits)
    factor = ew.pow(ew.cast(2, a.dtype, "bitwise_left_shift"), ew.where(in_range, b, 0))
    return ew.where(in_range, ew._binary("multiply", a, factor), 0)


def bitwise_right_shift(x1: Operand, x2: Operand, /) -> Tensor:
    """``x1 >> x2`` (``x2`` >= 0), arithmetic: ``floor(x1 / 2**x2)``; shifting by the width
    of the dtype or more gives 0, or -1 for a negative signed ``x1``.

    >>> import hermes_nb as hm
    >>> hm.bitwise_right_shift(hm.asarray([16, -16, 7]), 2).numpy().tolist()
    [4, -4, 1]
    """
    a, b, bits = _shift_operands("bitwise_right_shift", x1, x2)
    # 2**(bits-1) does not fit a signed dtype, so those shifts take the sign instead
    limit = bits if a.dtype.kind == "u" else bits - 1
    in_range = ew._binary("less", b, limit)
    factor = ew.pow(ew.cast(2, a.dtype, "bitwise_right_shift"), ew.where(in_range, b, 0))
    op = "bitwise_right_shift"
    beyond = (ew.where(ew._binary("less", a, 0), ew.cast(-1, a.dtype, op), ew.cast(0, a.dtype, op))
              if limit < bits else 0)
    return ew.where(in_range, ew._binary("floor_divide", a, factor), beyond)


def nextafter(x1: Operand, x2: Operand, /) -> Tensor:
    """The next float after ``x1`` in the direction of ``x2`` (``x2`` itself where they are
    equal, NaN where either is NaN), in the promoted float dtype. No device has a kernel
    for it (it steps the bits of the float), so it is computed now: NumPy on the host,
    CuPy on ``cuda:N``; the result is on the operands' device.

    >>> import hermes_nb as hm
    >>> x = hm.nextafter(hm.asarray([1.0, 0.0], dtype=hm.float32), -1.0)
    >>> x.dtype.name, x.numpy().tolist()[0] == 1.0 - 2.0**-24, x.numpy().tolist()[1] < 0
    ('float32', True, True)
    """
    a, b = ew._operand(x1, "nextafter"), ew._operand(x2, "nextafter")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = ew._as_tensor(a, "nextafter")
    work = dtypes.result_type(ew._dtype_of(a), ew._dtype_of(b))
    if not dtypes.is_float(work):
        raise TypeError(f"nextafter: expected real floating-point operands, got {work.name} "
                        f"(from {_kind(a)} and {_kind(b)}); cast them to float32 or float64")
    ta, tb = ew.cast(a, work, "nextafter"), ew.cast(b, work, "nextafter")
    shape = broadcast_shapes("nextafter", ta.shape, tb.shape)
    xp = _xp(ta)
    return _back(xp.nextafter(xp.broadcast_to(_value(ta), shape),
                              xp.broadcast_to(_value(tb), shape)), ta)


def _kind(value: Tensor | bool | int | float) -> str:
    return value.dtype.name if isinstance(value, Tensor) else f"a Python {type(value).__name__}"
