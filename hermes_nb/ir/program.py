"""A fused elementwise kernel as data: a straight-line program over its inputs.

Values are numbered: first the kernel's inputs, then literal constants, then
one value per instruction. Every device renders or interprets the same program,
and its ``signature`` keys compiled-kernel caches.
"""

from __future__ import annotations

from dataclasses import dataclass


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

    def dtype_of(self, value: int) -> str:
        if value < self.n_inputs:
            return self.input_dtypes[value]
        value -= self.n_inputs
        if value < len(self.consts):
            return self.consts[value][1]
        return self.instrs[value - len(self.consts)].dtype

    @property
    def signature(self) -> str:
        body = ";".join(f"{i.op}({','.join(map(str, i.args))}):{i.dtype}" for i in self.instrs)
        consts = ",".join(f"{v!r}:{d}" for v, d in self.consts)
        return f"in[{','.join(self.input_dtypes)}]c[{consts}]{{{body}}}->{self.outputs}"

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(i.op for i in self.instrs)


def single_op(op: str, in_dtypes: tuple[str, ...], dtype: str) -> Program:
    """``op`` on its inputs as a one-instruction program, so a lone elementwise op is rendered
    by the same code generator as a fused chain."""
    n = len(in_dtypes)
    return Program(tuple(in_dtypes), (), (Instr(op, tuple(range(n)), dtype),), (n,))
