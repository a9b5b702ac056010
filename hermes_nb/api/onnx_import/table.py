"""What every operator module shares: the node as read at load time, the operands a node
sees when the graph is built, and the load-time errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hermes_nb.api.creation import asarray
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes

# ONNX TensorProto element types by dtype name (onnx.proto's TensorProto.DataType)
ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6,
              "int64": 7, "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13,
              "complex64": 14, "complex128": 15}
# the ones Hermes has a dtype for
DTYPES = {ONNX_TYPES[name]: np.dtype(name) for name in dtypes.NAMES if name in ONNX_TYPES}
DTYPE_NAMES = ", ".join(d.name for d in DTYPES.values())
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class OnnxNode:
    """One ONNX node, decoded once at load: names, attributes as Python values, and the
    opset of its domain."""

    op_type: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]
    opset: int

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def where(self) -> str:
        return f"(node {self.name!r})" if self.name else f"(node producing {self.outputs[0]!r})"

    def unsupported(self, what: str, allowed: str) -> NotImplementedError:
        """The load-time error for an attribute value or input form this importer lacks."""
        return NotImplementedError(
            f"onnx: {self.op_type} {self.where()}: {what} is not supported; supported: {allowed}")


@dataclass(frozen=True)
class OpSpec:
    """How one ONNX operator becomes Hermes ops.

    ``build(node, ins)`` returns the node's outputs; ``attrs`` names the attributes it
    reads (any other is a load-time error); ``static`` the input positions whose value must
    be known when the graph is built (a shape, axes); ``check(node)`` raises at load for a
    value it cannot run; ``outputs`` is how many outputs it can give.
    """

    build: Callable[[OnnxNode, Inputs], Sequence[Any]]
    attrs: frozenset[str] = frozenset()
    static: frozenset[int] = frozenset()
    check: Callable[[OnnxNode], None] | None = None
    outputs: int = 1


def spec(build: Callable[[OnnxNode, Inputs], Sequence[Any]], attrs: str = "",
         static: Sequence[int] = (), check: Callable[[OnnxNode], None] | None = None,
         outputs: int = 1) -> OpSpec:
    return OpSpec(build, frozenset(attrs.split()), frozenset(static), check, outputs)


@dataclass
class Inputs:
    """A node's operands while the graph is built: each a Tensor, or a NumPy array when it
    is an initializer, a Constant or a NumPy graph input (known now)."""

    node: OnnxNode
    values: list[Any]
    _tensors: dict[int, Tensor] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.values)

    def present(self, i: int) -> bool:
        return i < len(self.values) and self.values[i] is not None

    def tensor(self, i: int) -> Tensor:
        v = self.values[i]
        if isinstance(v, Tensor):
            return v
        if i not in self._tensors:
            self._tensors[i] = asarray(v)
        return self._tensors[i]

    def shaped(self, i: int, numpy_form: Callable[[np.ndarray], np.ndarray],
               tensor_form: Callable[[Tensor], Tensor]) -> Tensor:
        """Input ``i`` reshaped or transposed: ``numpy_form`` of its array where it is one (an
        initializer, made so when the graph is built: no kernel reshapes a model's weights
        at every run), else ``tensor_form`` of the Tensor."""
        value = self.values[i]
        if isinstance(value, np.ndarray):
            return asarray(numpy_form(value))
        return tensor_form(self.tensor(i))

    def static(self, i: int) -> np.ndarray | None:
        """Input ``i``'s value as a NumPy array, or ``None`` when it is computed."""
        v = self.values[i]
        if isinstance(v, np.ndarray):
            return v
        if isinstance(v, Tensor) and v.node.op == "constant":
            return np.asarray(v.node.attrs["value"])
        if isinstance(v, Tensor) and v.is_materialized:
            return v.numpy()
        return None

    def known(self, i: int) -> np.ndarray:
        """Input ``i``'s value, which this operator needs when the graph is built."""
        value = self.static(i)
        if value is None:
            raise ValueError(
                f"onnx: {self.node.op_type} {self.node.where()}: input {i} "
                f"({self.node.inputs[i]!r}) must be known when the graph is built (an "
                f"initializer, a Constant, or a NumPy array given for a graph input), got a "
                f"lazy Tensor")
        return value

    def operand(self, i: int) -> Any:
        """Input ``i`` for an elementwise op: a 0-d known value as a Python scalar (a kernel
        argument once fused), anything else as a Tensor."""
        value = self.static(i)
        if value is not None and value.ndim == 0 and value.dtype.kind in "fiub":
            return value.item()
        return self.tensor(i)

    def ints(self, i: int) -> list[int] | None:
        """A known int64 input (shape, axes) as a list, or ``None`` when absent."""
        if not self.present(i):
            return None
        return [int(v) for v in np.asarray(self.known(i)).reshape(-1)]


def check_choice(node: OnnxNode, key: str, allowed: Sequence[Any], default: Any) -> None:
    value = node.attr(key, default)
    if isinstance(value, bytes):
        value = value.decode()
    if value not in allowed:
        raise node.unsupported(f"{key}={value!r}", ", ".join(map(repr, allowed)))


def norm_axis(node: OnnxNode, axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"onnx: {node.op_type} {node.where()}: axis {axis} is out of range "
                         f"for rank {ndim}")
    return axis % ndim if ndim else 0
