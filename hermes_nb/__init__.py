"""Hermes: lazy tensors that run on every CPU core, OpenCL device and GPU you have.

>>> import hermes_nb as hm
>>> x = hm.Tensor.random((4, 4), seed=0)
>>> y = hm.relu(x @ x.T - 1.0).sum(axis=1)
>>> y.shape
(4,)
"""

from hermes_nb.api import cluster, image, random
from hermes_nb.api import onnx_import as onnx
from hermes_nb.api.composed import (  # array-API elementwise functions built from other ops
    bitwise_left_shift,
    bitwise_right_shift,
    logical_xor,
    nextafter,
    positive,
    signbit,
)
from hermes_nb.api.construct import (
    empty,
    empty_like,
    eye,
    full_like,
    linspace,
    meshgrid,
    ones_like,
    tril,
    triu,
    zeros_like,
)
from hermes_nb.api.contractions import tensordot, vecdot
from hermes_nb.api.creation import arange, asarray, from_dlpack, from_numpy, full, ones, zeros
from hermes_nb.api.devices import devices
from hermes_nb.api.dtype_functions import can_cast, finfo, iinfo, isdtype, result_type
from hermes_nb.api.elementwise import (  # array-API elementwise functions
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    astype,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_or,
    bitwise_xor,
    ceil,
    clip,
    copysign,
    cos,
    cosh,
    divide,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    hypot,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    pow,
    reciprocal,
    relu,
    remainder,
    round,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    trunc,
    where,
)
from hermes_nb.api.image import (
    Pipeline,
    Stage,
    compose,
    conv2d,
    gaussian_blur,
    sobel,
    sobel_edge_detection,
)
from hermes_nb.api.linalg import matmul
from hermes_nb.api.manipulation import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    matrix_transpose,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    transpose,
    unstack,
)
from hermes_nb.api.namespace_info import API_VERSION as __array_api_version__
from hermes_nb.api.namespace_info import __array_namespace_info__, e, inf, nan, newaxis, pi
from hermes_nb.api.plan import Plan
from hermes_nb.api.reductions import argmax, argmin, max, mean, min, prod, std, sum, var
from hermes_nb.api.tensor import Tensor, compute, persist
from hermes_nb.api.utility import (
    all,
    any,
    count_nonzero,
    cumulative_prod,
    cumulative_sum,
    diff,
    searchsorted,
)
from hermes_nb.backends import Device, get_device
from hermes_nb.context import current_options, current_policy, device, options, policy
from hermes_nb.errors import DeviceError
from hermes_nb.ir.dtypes import bool_ as bool
from hermes_nb.ir.dtypes import (
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from hermes_nb.runtime import fork as _fork  # noqa: F401  (its at-fork handler)
from hermes_nb.runtime.monitor import LoadSampler, load

__version__ = "0.1.0"


def load_monitor(interval_s: float = 0.5, history_s: float = 60.0) -> object:
    """A live monitor widget of every device's load (needs the ``notebook`` extra); see
    :class:`hermes_nb.widgets.LoadMonitor`."""
    from hermes_nb.widgets.monitor import load_monitor as _monitor

    return _monitor(interval_s=interval_s, history_s=history_s)


def __getattr__(name: str) -> object:
    if name == "PipelineBuilder":  # imported on first use: `import hermes_nb` never needs ipywidgets
        from hermes_nb.widgets.builder import PipelineBuilder

        return PipelineBuilder
    raise AttributeError(f"module 'hermes_nb' has no attribute {name!r}")


def load_ipython_extension(ip: object) -> None:
    """``%load_ext hermes_nb``: register the ``%hermes`` / ``%%hermes`` magics.

    Imported lazily so ``import hermes_nb`` never needs IPython.
    """
    from hermes_nb.notebook.magic import load_ipython_extension as _load

    _load(ip)

__all__ = [
    "Device",
    "DeviceError",
    "LoadSampler",
    "Pipeline",
    "Plan",
    "Stage",
    "Tensor",
    # the array API standard (2024.12)
    "__array_api_version__",
    "__array_namespace_info__",
    "abs",
    "acos",
    "acosh",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "asarray",
    "asin",
    "asinh",
    "astype",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "bool",
    "broadcast_arrays",
    "broadcast_to",
    "can_cast",
    "ceil",
    "clip",
    "cluster",
    "compose",
    "compute",
    "concat",
    "conv2d",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "current_options",
    "current_policy",
    "device",
    "devices",
    "diff",
    "divide",
    "e",
    "empty",
    "empty_like",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "eye",
    "finfo",
    "flip",
    "float32",
    "float64",
    "floor",
    "floor_divide",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "gaussian_blur",
    "get_device",
    "greater",
    "greater_equal",
    "hypot",
    "iinfo",
    "image",
    "inf",
    "int8",
    "int16",
    "int32",
    "int64",
    "isdtype",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "linspace",
    "load",
    "load_monitor",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "matrix_transpose",
    "max",
    "maximum",
    "mean",
    "meshgrid",
    "min",
    "minimum",
    "moveaxis",
    "multiply",
    "nan",
    "negative",
    "newaxis",
    "nextafter",
    "not_equal",
    "ones",
    "ones_like",
    "onnx",
    "options",
    "permute_dims",
    "persist",
    "pi",
    "policy",
    "positive",
    "pow",
    "prod",
    "random",
    "reciprocal",
    "relu",
    "remainder",
    "repeat",
    "reshape",
    "result_type",
    "roll",
    "round",
    "searchsorted",
    "sigmoid",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sobel",
    "sobel_edge_detection",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "subtract",
    "sum",
    "tan",
    "tanh",
    "tensordot",
    "tile",
    "transpose",
    "tril",
    "triu",
    "trunc",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "unstack",
    "var",
    "vecdot",
    "where",
    "zeros",
    "zeros_like",
]

# one log for every device (``hm.logs()``): ``hm.log`` is the array API's logarithm
from hermes_nb import logrecords as _logrecords  # noqa: E402

_logrecords.install()
logs = _logrecords.records
# and on disk, written in the background, for the lab panel's log section (the server's process)
from hermes_nb import logsink as _logsink  # noqa: E402

_logsink.start()
__all__.append("logs")

# the hotspot report of a run (``hm.report()``), its figures read from the run's profile
from hermes_nb.runtime.report import Report, report  # noqa: E402

__all__ += ["Report", "report"]

# the array API's linalg extension (``hm.linalg.solve``, ...); ``hm.matmul`` stays too
from hermes_nb.api import linalg_namespace as linalg  # noqa: E402, F401 (in __all__ below)

__all__.append("linalg")

# the standard's indexing, searching, sorting and set functions
from hermes_nb.api.searching import (  # noqa: E402
    argsort,
    nonzero,
    sort,
    take,
    take_along_axis,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)

__all__ += ["argsort", "nonzero", "sort", "take", "take_along_axis", "unique_all",
            "unique_counts", "unique_inverse", "unique_values"]

# the standard's complex dtypes and the functions on complex numbers
from hermes_nb.api.elementwise import conj, imag, real  # noqa: E402
from hermes_nb.ir.dtypes import complex64, complex128  # noqa: E402

__all__ += ["complex64", "complex128", "conj", "imag", "real"]
