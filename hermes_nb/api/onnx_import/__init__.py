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
- Conv (group, strides, pads, dilations, auto_pad) is one ``conv`` node and MaxPool and
  AveragePool one ``pool`` node (max, or sum over the window divided by its count), up to
  three spatial axes (``api/nn.py``): a generated Numba kernel on ``cpu:0`` that the bias,
  the folded BatchNormalization and the activation after it join as an epilogue, one
  work-item per output on OpenCL, im2col and cuBLAS on CUDA. With more spatial axes they
  are composed of strided slices of the padded input (im2col and one batched ``hm.matmul``
  per group for Conv; ``maximum``/``add`` of the slices for the pools). MaxPool's Indices
  output (its second) is one fused kernel over the window's slices: the first tap holding
  the maximum (the first NaN where it is NaN, never a padded tap), numbered as onnxruntime
  does (``storage_order`` 0 row-major, 1 column-major).
- BatchNormalization in inference mode with constant statistics is folded when the graph is
  built into ``x * a + b``; training_mode=1 computes the batch statistics.
- Softmax is ``exp(x - max) / sum``; ReduceSum and ReduceMean take their axes as an
  attribute or (from opsets 13 and 18) a known input.

For inference, ``model.session(device)`` is an :class:`Session`: ``run(None, {"x": x})``
takes and returns NumPy arrays like onnxruntime's ``InferenceSession.run``; the first run
per input shapes computes the graph as above, later ones replay its kernels with nothing
re-planned (``runtime/replay.py``).

Inputs that set a shape (Reshape's shape, a reduction's axes) must be known when the graph
is built: an initializer, a Constant, or a NumPy array given for a graph input. An
operator, attribute value, dtype or dynamic shape the importer lacks is a
``NotImplementedError`` at load that names the operator, the node and what is supported.
"""

from hermes_nb.api.onnx_import.model import SUPPORTED, Model, load
from hermes_nb.api.onnx_import.session import Session

__all__ = ["SUPPORTED", "Model", "Session", "load"]
