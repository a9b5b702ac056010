"""A fused elementwise kernel as data: a straight-line program over its inputs.

Values are numbered: first the kernel's inputs, then scalar constants, then
one value per instruction. Every device renders or interprets the same program,
and its ``signature`` keys compiled-kernel caches.

Scalar constants are kernel arguments (``params``, passed as ``arguments()``): neither the
source nor the signature holds their values, so a changed gain, threshold, clip bound or
``where`` fill value runs the kernel already compiled. The one exception (``baked``) is a
``pow`` exponent of 2, which every generator writes as ``x * x`` (exact, where ``pow`` may
be 1 ulp off, and what NumPy's ``power`` does for a scalar 2); a program squaring and one
cubing are different kernels anyway.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Instr:
    op: str
    args: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Program:
    input_dtypes: tuple[str, ...]
    consts: tuple[tuple[bool | int | float, str], ...]
    instrs: tuple[Instr, ...]
    outputs: tuple[int, ...]

    @property
    def n_inputs(self) -> int:
        return len(self.input_dtypes)

    def __getstate__(self) -> dict[str, object]:
        # the fields alone: a cached property is derived, and a pickle that held the ones
        # computed so far would key one program differently before and after (node keys
        # hash programs by their pickle)
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def dtype_of(self, value: int) -> str:
        if value < self.n_inputs:
            return self.input_dtypes[value]
        value -= self.n_inputs
        if value < len(self.consts):
            return self.consts[value][1]
        return self.instrs[value - len(self.consts)].dtype

    @functools.cached_property
    def baked(self) -> frozenset[int]:
        """Indices into ``consts`` whose values are written into the source: a float or
        integer ``pow`` exponent of 2 (rendered as ``x * x``)."""
        first = self.n_inputs
        return frozenset(i.args[1] - first for i in self.instrs
                         if i.op == "pow" and 0 <= i.args[1] - first < len(self.consts)
                         and self.consts[i.args[1] - first][0] == 2
                         and self.consts[i.args[1] - first][1] != "bool")

    @functools.cached_property
    def params(self) -> tuple[int, ...]:
        """Indices into ``consts`` passed to the kernel at run time, in argument order."""
        return tuple(k for k in range(len(self.consts)) if k not in self.baked)

    def arguments(self) -> tuple[np.generic, ...]:
        """The values of ``params``, as NumPy scalars of their dtypes: each constant
        already holds its kernel dtype's value, so the conversion is exact."""
        return tuple(np.dtype(self.consts[k][1]).type(self.consts[k][0]) for k in self.params)

    @functools.cached_property
    def template(self) -> Program:
        """This program with every parameter's value replaced by 0: what code generators
        render, so no parameter's value can reach a kernel's source."""
        if not self.params:
            return self
        consts = tuple((v, d) if k in self.baked else (False if d == "bool" else 0, d)
                       for k, (v, d) in enumerate(self.consts))
        return Program(self.input_dtypes, consts, self.instrs, self.outputs)

    @functools.cached_property  # it keys every compiled-kernel cache: asked at each launch
    def signature(self) -> str:
        body = ";".join(f"{i.op}({','.join(map(str, i.args))}):{i.dtype}" for i in self.instrs)
        # a parameter's value is an argument, not part of the kernel
        consts = ",".join(f"{v!r}:{d}" if k in self.baked else f"?:{d}"
                          for k, (v, d) in enumerate(self.consts))
        return f"in[{','.join(self.input_dtypes)}]c[{consts}]{{{body}}}->{self.outputs}"

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(i.op for i in self.instrs)


def single_op(op: str, in_dtypes: tuple[str, ...], dtype: str) -> Program:
    """``op`` on its inputs as a one-instruction program, so a lone elementwise op is rendered
    by the same code generator as a fused chain."""
    n = len(in_dtypes)
    return Program(tuple(in_dtypes), (), (Instr(op, tuple(range(n)), dtype),), (n,))
