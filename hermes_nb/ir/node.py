"""The op graph: immutable nodes with their shape and dtype known at build time."""

from __future__ import annotations

import hashlib
import math
import pickle
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dask.base import normalize_token, tokenize

from hermes_nb.ir.ops import OPS
from hermes_nb.ir.program import Program
from hermes_nb.ir.stencil import StencilProgram


@dataclass(frozen=True, eq=False)
class Node:
    """One op applied to input nodes. Nodes compare and hash by identity.

    ``device`` is the device id the node is pinned to, or ``None`` when the
    scheduler may choose. ``key`` names the node in task graphs: ``hermes-<op>-<token>``,
    the token derived from the node's content (see :func:`content_key`), so the same graph
    gets the same keys in every process and different work never shares a key.
    """

    op: str
    inputs: tuple[Node, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: dict[str, Any] = field(default_factory=dict)
    device: str | None = None
    key: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r}")
        if not self.key:
            object.__setattr__(self, "key", content_key(self))

    def __dask_tokenize__(self) -> str:
        return self.key

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # not np.prod: this is on the scheduler's hot path

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __repr__(self) -> str:
        args = ", ".join(i.key for i in self.inputs)
        return f"<{self.key}({args}) {self.dtype.name}{list(self.shape)}>"


BORROWED = "borrowed"  # attr of a constant that reads the caller's array at each compute


#: attr of a constant whose value changes from one run of a plan to the next (a replay's
#: input, a borrowed array it reads anew): the compiler never folds it, merges it with an
#: equal one or writes its value into a kernel, as it may a constant's read at a compute
VARIABLE = "variable"


def is_variable(node: Node) -> bool:
    """Whether ``node`` is a constant the compiler must treat as unknown (``VARIABLE``)."""
    return node.op == "constant" and bool(node.attrs.get(VARIABLE))


def is_borrowed(node: Node) -> bool:
    """Whether ``node`` is a constant holding a read-only view of the caller's array (not a
    copy), so its contents may change between computes."""
    return node.op == "constant" and bool(node.attrs.get(BORROWED))


def content_key(node: Node) -> str:
    """``hermes-<op>-<token>``: the token is ``dask.base.tokenize`` of the op, shape, dtype,
    attributes, device and the inputs' keys (copied source arrays are hashed by content). A
    computed ``buffer`` has no content to hash here, and a borrowed constant's content may
    change after it is built, so their token is a random UUID: a key never claims content
    its node may no longer have."""
    if node.op == "buffer" or is_borrowed(node):
        return f"hermes-{node.op}-{uuid.uuid4().hex}"
    parts = (node.op, node.shape, node.dtype.str, node.attrs, node.device,
             tuple(i.key for i in node.inputs))
    token = plain_token(parts) if is_plain(node.attrs) else tokenize(*parts)
    return f"hermes-{node.op}-{token}"


_PLAIN = (bool, int, float, str, type(None), np.dtype, Program, StencilProgram)


def is_plain(value: Any) -> bool:
    """Whether ``value`` holds only values whose pickle is the same in every process (no
    large arrays, sets or objects of unknown pickling)."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v) for k, v in value.items())
    if isinstance(value, tuple):
        return all(is_plain(v) for v in value)
    if isinstance(value, np.ndarray):  # a scalar's 0-d array; big ones hash faster by Dask
        return value.size <= 64 and value.dtype.kind in "biuf"
    return False


def plain_token(parts: tuple[Any, ...]) -> str:
    """The token of plain values by hashing their pickle: a fused node's attributes take
    Dask's ``tokenize`` ~30 µs to walk, and optimising a graph keys every node it makes."""
    return hashlib.blake2b(pickle.dumps(parts, protocol=5), digest_size=16).hexdigest()


@normalize_token.register((Program, StencilProgram))
def _normalize_program(program: Program | StencilProgram) -> tuple[str, bytes]:
    """A fused kernel's program as its pickle: frozen dataclasses of plain values pickle
    deterministically (floats by their bits), ~10x faster than Dask walking every field,
    and keying a fused node is most of what a compute spends optimising."""
    return (type(program).__name__, pickle.dumps(program, protocol=5))


@dataclass(frozen=True)
class OpSpec:
    """What a device needs to run one node: picklable, free of graph references."""

    op: str
    shape: tuple[int, ...]
    dtype: np.dtype
    in_shapes: tuple[tuple[int, ...], ...]
    in_dtypes: tuple[np.dtype, ...]
    attrs: dict[str, Any]
    device: str
    key: str = ""

    @classmethod
    def of(cls, node: Node, device: str) -> OpSpec:
        attrs = {k: v for k, v in node.attrs.items() if k != "handle"}
        return cls(
            op=node.op,
            shape=node.shape,
            dtype=node.dtype,
            in_shapes=tuple(i.shape for i in node.inputs),
            in_dtypes=tuple(i.dtype for i in node.inputs),
            attrs=attrs,
            device=device,
            key=node.key,
        )

    def describe(self) -> str:
        """Op, shapes and dtypes, as error messages name them."""
        ins = ", ".join(f"{d.name}{list(s)}" for s, d in zip(self.in_shapes, self.in_dtypes))
        return f"{self.op}({ins}) -> {self.dtype.name}{list(self.shape)}"


def toposort(outputs: list[Node], within: Callable[[Node], bool] | None = None) -> list[Node]:
    """Nodes reachable from ``outputs``, each once, inputs before users; with ``within``,
    only the inputs it accepts are followed (and listed)."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(n, False) for n in reversed(outputs)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((i, False) for i in reversed(node.inputs)
                     if id(i) not in seen and (within is None or within(i)))
    return order
