"""OpenCL C sources from the templates in ``kernels/opencl/*.cl`` (reduce, matmul, conv2d,
copy, fill, fused elementwise), filled with ``string.Template``.

Shapes and strides are always kernel arguments, never part of the source, so the number of
distinct programs is bounded by op x dtype x variant (PoCL takes ~0.4 s per compile).
"""

from __future__ import annotations

import math
import string
from functools import cache
from pathlib import Path

import numpy as np

from hermes_nb.codegen.c_combine import c_combine
from hermes_nb.codegen.c_source import type_table
from hermes_nb.ir.reduce import reduce_def

# dtype -> (OpenCL C type, unsigned twin used for wrapping integer arithmetic)
CL_TYPES: dict[str, tuple[str, str]] = type_table(0)  # complex: float2/double2 (c_complex)
# Element size -> type the strided copy moves (copies never look at the values).
COPY_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong", 16: "ulong2"}


FP64_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable"


def ctype(dtype: np.dtype) -> str:
    return CL_TYPES[np.dtype(dtype).name][0]


def utype(dtype: np.dtype) -> str:
    return CL_TYPES[np.dtype(dtype).name][1]


def kernel_dir() -> Path:
    """The folder holding the ``.cl`` templates (in the wheel, else in the source checkout)."""
    root = Path(__file__).resolve().parents[1]  # the hermes_nb package folder
    shipped = root / "_kernels" / "opencl"
    return shipped if shipped.is_dir() else root.parent / "kernels" / "opencl"


@cache
def template(name: str) -> string.Template:
    return string.Template((kernel_dir() / f"{name}.cl").read_text())


def render(name: str, **values: object) -> str:
    return template(name).substitute({k: str(v) for k, v in values.items()})


# OpenCL C's names for the limits: a literal of the most negative value does not exist
_LIMITS = {"int8": ("CHAR_MIN", "CHAR_MAX"), "int16": ("SHRT_MIN", "SHRT_MAX"),
           "int32": ("INT_MIN", "INT_MAX"), "int64": ("LONG_MIN", "LONG_MAX"),
           "uint8": ("0", "UCHAR_MAX"), "uint16": ("0", "USHRT_MAX"), "uint32": ("0", "UINT_MAX"),
           "uint64": ("0", "ULONG_MAX")}


def _template_literal(value: bool | int | float | None, dtype: str) -> str:
    """``value`` as reduce.cl's IDENT spells it (cast to T there)."""
    if value is None:  # arg reductions: index -1 marks "no element yet", the value is unused
        return "0"
    if isinstance(value, float) and math.isinf(value):
        return "-INFINITY" if value < 0 else "INFINITY"
    if dtype in _LIMITS:
        info = np.iinfo(dtype)
        if value in (info.min, info.max):
            return _LIMITS[dtype][value == info.max]
    return str(int(value))


def limit_literal(value: int, dtype: np.dtype) -> str:
    """An integer ``value`` of ``dtype`` as OpenCL C spells it (its limits by name)."""
    return _template_literal(value, np.dtype(dtype).name)


def reduce_source(op: str, dtype: np.dtype, fp64: bool) -> str:
    """reduce.cl for ``op`` over ``dtype``: identity from ``ir.reduce``, combine from
    ``codegen.c_fused`` (in the template's types ``T`` and ``U``)."""
    dtype = np.dtype(dtype)
    rdef = reduce_def(op)
    combine = c_combine(op, dtype.name)
    header = FP64_PRAGMA if fp64 else ""
    if dtype.kind == "c":  # the identity and combine are complex helpers (codegen.c_complex)
        from hermes_nb.codegen.c_source import OPENCL

        ident = OPENCL.literal(rdef.identity(dtype.name), dtype.name)
        header = "\n\n".join([header, *OPENCL.complex_helpers(combine + ident)])
    else:
        ident = f"(T)({_template_literal(rdef.identity(dtype.name), dtype.name)})"
    return render(
        "reduce",
        header=header,
        t=ctype(dtype),
        uns_t=utype(dtype),
        is_float=int(dtype.kind == "f"),
        is_arg=int(rdef.is_arg),
        ident=ident,
        combine=combine,
        cmp=rdef.order if rdef.is_arg else "<",  # read by arg reductions only
    )


def typed_source(name: str, dtype: np.dtype, fp64: bool, **extra: object) -> str:
    """Sources parameterised only by one element type: matmul, conv2d. ``extra`` fills
    the matmul's epilogue hooks (``codegen.c_fused``); without them it stores the product."""
    if name == "matmul":
        extra = {"functions": "", "out_t": ctype(dtype), "epi_args": "", "store": "acc", **extra}
    return render(
        name,
        header=FP64_PRAGMA if fp64 else "",
        t=ctype(dtype),
        uns_t=utype(dtype),
        is_float=int(np.dtype(dtype).kind == "f"),
        is_complex=int(np.dtype(dtype).kind == "c"),
        **extra,
    )


def copy_source(itemsize: int) -> str:
    return render("copy", t=COPY_TYPES[itemsize])


def fill_source(out_dtype: np.dtype, calc_dtype: np.dtype, fp64: bool) -> str:
    value = "start + (C)i * step"
    kind = np.dtype(out_dtype).kind
    conv = f"(uchar)(({value}) != 0)" if kind == "b" else f"(O)({value})"
    if kind == "c":  # (O)(x) would put x in both components
        part = "float" if np.dtype(out_dtype) == np.complex64 else "double"
        conv = f"(O)(({part})({value}), ({part})0)"
    if np.dtype(calc_dtype).kind == "c":  # full's program: arange counts in the components
        calc_dtype = np.float32 if np.dtype(calc_dtype) == np.complex64 else np.float64
    return render(
        "fill",
        header=FP64_PRAGMA if fp64 else "",
        out_t=ctype(out_dtype),
        calc_t=ctype(calc_dtype),
        convert=conv,
    )
