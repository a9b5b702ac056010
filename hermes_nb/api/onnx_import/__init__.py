"""ONNX models as Hermes graphs: ``hm.onnx.load(path_or_model)`` returns a callable that
builds the model's graph as Hermes ops, so fusion and placement apply to it as to any other
graph (needs the ``onnx`` extra: ``pip install hermes_nb[onnx]``).

>>> import numpy as np, hermes_nb as hm
>>> from onnx import TensorProto, helper
>>> graph = helper.make_graph(
...     [helper.make_node("Relu", ["x"], ["y"])], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
>>> model = hm.onnx.load(helper.make_model(graph))
>>> model(np.array([-1.0, 2.0], np.float32)).numpy()
array([0., 2.], dtype=float32)

How operators map
-----------------
- Elementwise operators (Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Clip)
  are Hermes's own, NumPy-style broadcasting as ONNX has it; a 0-d initializer or Constant
  operand becomes a scalar, a kernel argument once fused. Integer Div truncates as in ONNX.
- MatMul and Gemm are ``hm.matmul`` (Gemm's alpha, beta and bias fuse into its epilogue).
- Conv (any number of spatial axes, group, strides, pads, dilations, auto_pad) is im2col:
  one strided slice of the padded input per kernel offset, stacked, and one batched
  ``hm.matmul`` over the groups. MaxPool and AveragePool combine the same slices with
  ``maximum``/``add`` (one fused elementwise kernel). Every piece is a plain Hermes op, so
  these run on every device; ``hm.conv2d``'s stencil is single-channel and not used.
- BatchNormalization in inference mode with constant statistics is folded when the graph is
  built into ``x * a + b``; training_mode=1 computes the batch statistics.
- Softmax is ``exp(x - max) / sum``; ReduceSum and ReduceMean take their axes as an
  attribute or (from opsets 13 and 18) a known input.

Inputs that set a shape (Reshape's shape, a reduction's axes) must be known when the graph
is built: an initializer, a Constant, or a NumPy array given for a graph input. An
operator, attribute value, dtype or dynamic shape the importer lacks is a
``NotImplementedError`` at load that names the operator, the node and what is supported.
"""

from hermes_nb.api.onnx_import.model import SUPPORTED, Model, load

__all__ = ["SUPPORTED", "Model", "load"]
