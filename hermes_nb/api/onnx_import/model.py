"""An ONNX graph read once, checked at load, and built as Hermes ops at each call."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.api.creation import asarray
from hermes_nb.api.onnx_import import ops_math, ops_nn, ops_shape
from hermes_nb.api.onnx_import.table import DTYPE_NAMES, DTYPES, Inputs, OnnxNode, OpSpec
from hermes_nb.api.tensor import Tensor

OPERATORS: dict[str, OpSpec] = {**ops_math.OPS, **ops_shape.OPS, **ops_nn.OPS}
SUPPORTED = tuple(sorted(OPERATORS))
_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class GraphInput:
    name: str
    dtype: np.dtype
    dims: tuple[int | str | None, ...]  # an int, a symbolic name, or None (unknown)


class Model:
    """A loaded ONNX model: call it with the graph's inputs (positionally, in the graph's
    order, or by name; NumPy arrays or Tensors) to get its outputs as lazy Tensors (one
    Tensor, or a tuple when the graph has several outputs). Initializers are constants."""

    def __init__(self, proto: Any) -> None:
        graph = proto.graph
        opsets = {o.domain: o.version for o in proto.opset_import}
        self.opset = opsets.get("", opsets.get("ai.onnx", 1))
        self.name = graph.name
        self.initializers = {t.name: _tensor_value(t, f"initializer {t.name!r}")
                             for t in graph.initializer}
        self.inputs = tuple(_graph_input(v) for v in graph.input
                            if v.name not in self.initializers)
        self.outputs = tuple(v.name for v in graph.output)
        self.nodes = tuple(_read_node(p, self.opset) for p in graph.node)
        _check_static_inputs(self.nodes, {*self.initializers, *(i.name for i in self.inputs)})

    def __repr__(self) -> str:
        ins = ", ".join(f"{i.name}: {i.dtype.name}{list(i.dims)}" for i in self.inputs)
        return (f"<hm.onnx.Model {self.name!r} ({ins}) -> {', '.join(self.outputs)}; "
                f"{len(self.nodes)} nodes, opset {self.opset}>")

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor | tuple[Tensor, ...]:
        env: dict[str, Any] = dict(self.initializers)
        env.update(self._bind(args, kwargs))
        for node in self.nodes:
            ins = Inputs(node, [env[name] if name else None for name in node.inputs])
            results = OPERATORS[node.op_type].build(node, ins)
            for name, value in zip(node.outputs, results):
                if name:
                    env[name] = value
        outs = tuple(v if isinstance(v, Tensor) else asarray(v) for v in
                     (env[name] for name in self.outputs))
        return outs[0] if len(outs) == 1 else outs

    def session(self, device: str | None = None) -> Any:
        """An inference session of this model (``hm.onnx.Session``): NumPy arrays in and out
        through ``run(output_names, input_feed)``, planned once per input shapes and then
        replayed with nothing re-planned; ``device`` pins every kernel there.

        >>> import numpy as np, hermes_nb as hm
        >>> from onnx import TensorProto, helper
        >>> x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "xy")
        >>> relu = helper.make_node("Relu", ["x"], ["y"])
        >>> model = hm.onnx.load(helper.make_model(helper.make_graph([relu], "g", [x], [y])))
        >>> model.session("cpu:0").run(None, {"x": np.array([-1.0, 2.0], np.float32)})
        [array([0., 2.], dtype=float32)]
        """
        from hermes_nb.api.onnx_import.session import Session

        return Session(self, device)

    def _bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        names = [i.name for i in self.inputs]
        if len(args) > len(names):
            raise TypeError(f"onnx model takes {len(names)} inputs ({', '.join(names)}), "
                            f"got {len(args)}")
        given = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"onnx model has no input {key!r}; its inputs: {', '.join(names)}")
            if key in given:
                raise TypeError(f"onnx model got input {key!r} twice")
            given[key] = value
        missing = [n for n in names if n not in given]
        if missing:
            raise TypeError(f"onnx model is missing inputs: {', '.join(missing)}")
        return {i.name: _bound(i, given[i.name]) for i in self.inputs}


def _bound(spec: GraphInput, value: Any) -> Any:
    """A graph input as given (a Tensor stays lazy, NumPy stays known until an op needs a
    Tensor), checked against the graph's declared dtype and fixed dims."""
    if not isinstance(value, Tensor):
        value = np.asarray(value)
        if value.dtype != spec.dtype and value.dtype.newbyteorder("=") == spec.dtype:
            value = value.astype(spec.dtype)  # another byte order (FITS data's): its values
    if value.dtype != spec.dtype:
        raise TypeError(f"onnx input {spec.name!r}: expected dtype {spec.dtype.name}, got "
                        f"{value.dtype.name}")
    fixed = all(isinstance(d, int) for d in spec.dims)
    if spec.dims and (len(value.shape) != len(spec.dims) or (fixed and tuple(value.shape) != spec.dims)
                      or any(isinstance(d, int) and d != s for d, s in zip(spec.dims, value.shape))):
        raise ValueError(f"onnx input {spec.name!r}: expected shape {list(spec.dims)}, got "
                         f"{list(value.shape)}")
    return value


def _tensor_value(proto: Any, what: str) -> np.ndarray:
    from onnx import numpy_helper

    if proto.data_type not in DTYPES:
        raise NotImplementedError(f"onnx: {what} has ONNX element type {_elem_name(proto.data_type)}"
                                  f", which Hermes has no dtype for; supported: {DTYPE_NAMES}")
    value = np.array(numpy_helper.to_array(proto), dtype=DTYPES[proto.data_type], copy=True)
    value.flags.writeable = False
    return value


def _elem_name(elem: int) -> str:
    from onnx import helper

    try:
        return helper.tensor_dtype_to_np_dtype(elem).name
    except (KeyError, ValueError, TypeError):
        return str(elem)


def _graph_input(v: Any) -> GraphInput:
    t = v.type
    if not t.HasField("tensor_type"):
        raise NotImplementedError(f"onnx: graph input {v.name!r} is not a tensor (sequences, "
                                  f"maps and optionals are not supported)")
    elem = t.tensor_type.elem_type
    if elem not in DTYPES:
        raise NotImplementedError(f"onnx: graph input {v.name!r} has dtype {_elem_name(elem)}, "
                                  f"which Hermes has no dtype for; supported: {DTYPE_NAMES}")
    dims: tuple[int | str | None, ...] = ()
    if t.tensor_type.HasField("shape"):
        dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                     for d in t.tensor_type.shape.dim)
    return GraphInput(v.name, DTYPES[elem], dims)


def _read_node(proto: Any, opset: int) -> OnnxNode:
    from onnx import helper

    node = OnnxNode(proto.op_type, proto.name, tuple(proto.input), tuple(proto.output),
                    {a.name: helper.get_attribute_value(a) for a in proto.attribute}, opset)
    if proto.domain not in _DOMAINS:
        raise NotImplementedError(f"onnx: operator {proto.op_type!r} {node.where()} is in "
                                  f"the domain {proto.domain!r}; supported: the default ONNX "
                                  f"domain")
    op = OPERATORS.get(proto.op_type)
    if op is None:
        raise NotImplementedError(f"onnx: operator {proto.op_type!r} {node.where()} is "
                                  f"not supported; supported: {', '.join(SUPPORTED)}")
    unknown = sorted(set(node.attrs) - op.attrs)
    if unknown:
        raise node.unsupported(f"the attribute{'s' * (len(unknown) > 1)} {', '.join(unknown)}",
                               ", ".join(sorted(op.attrs)) or "no attributes")
    if len([o for o in node.outputs[op.outputs:] if o]):
        raise node.unsupported(f"{len(node.outputs)} outputs", f"at most {op.outputs}")
    if op.check is not None:
        op.check(node)
    return node


def _check_static_inputs(nodes: tuple[OnnxNode, ...], known: set[str]) -> None:
    """An input that must be known when the graph is built (Reshape's shape, a reduction's
    axes) may come from an initializer, a Constant or a graph input, never from a
    computation: that would be a dynamic shape."""
    known = set(known)
    for node in nodes:
        for i in OPERATORS[node.op_type].static:
            name = node.inputs[i] if i < len(node.inputs) else ""
            if name and name not in known:
                raise NotImplementedError(
                    f"onnx: {node.op_type} {node.where()}: input {i} ({name!r}) is computed "
                    f"by the graph (a dynamic shape); supported: an initializer, a Constant "
                    f"or a graph input")
        if node.op_type == "Constant":
            known.update(node.outputs)


def load(model: str | os.PathLike | bytes | Any) -> Model:
    """Read an ONNX model (a path, serialized bytes or an ``onnx.ModelProto``); every
    operator, attribute and input form is checked here, before any graph is built."""
    import onnx

    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model))
    elif isinstance(model, (bytes, bytearray)):
        model = onnx.load_from_string(bytes(model))
    elif not isinstance(model, onnx.ModelProto):
        raise TypeError(f"hm.onnx.load: expected a path, bytes or an onnx.ModelProto, got "
                        f"{type(model).__name__}")
    return Model(model)
