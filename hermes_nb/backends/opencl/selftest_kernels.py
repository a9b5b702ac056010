"""The OpenCL features Hermes's code generators rely on, as small kernels checked against
NumPy. Run inside the isolated worker (``devices.worker``): a feature that crashes the
driver kills only that process.

Features: ``scalar`` (float32 maths: exp, hypot, sin, cos, pow, fma, sqrt, tanh),
``float32xN`` / ``float64xN`` (the same on N-wide vectors), ``local`` (local memory and
barriers).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hermes_nb.backends.opencl.build import build_program

_N = 1024
_FUNCS = ("exp(x)", "hypot(x, y)", "sin(x)", "cos(x)", "pow(y, x)", "fma(x, y, x)",
          "sqrt(y)", "tanh(x)")
_REFS = (
    lambda x, y: np.exp(x), np.hypot, lambda x, y: np.sin(x), lambda x, y: np.cos(x),
    lambda x, y: np.power(y, x), lambda x, y: x * y + x, lambda x, y: np.sqrt(y),
    lambda x, y: np.tanh(x),
)
_RTOL = {"float32": 2e-5, "float64": 1e-12}


def feature_names(fp64: bool, widths: tuple[int, ...] = (16, 8, 4)) -> list[str]:
    names = ["scalar", "local", *(f"float32x{w}" for w in widths)]
    if fp64:
        names += [f"float64x{w}" for w in widths]
    return names


def maths_source(dtype: str, width: int) -> str:
    """One kernel evaluating every function of ``_FUNCS`` on ``width``-wide vectors."""
    scalar = "float" if dtype == "float32" else "double"
    t = scalar if width == 1 else f"{scalar}{width}"
    load = (lambda p: f"{p}[i]") if width == 1 else (lambda p: f"vload{width}(i, {p})")
    store = (lambda v, k: f"out[{k} * n + i] = {v};") if width == 1 else (
        lambda v, k: f"vstore{width}({v}, i, out + {k} * n * {width});")
    body = "\n    ".join(store(f, k) for k, f in enumerate(_FUNCS))
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "float64" else ""
    return (
        f"{pragma}__kernel void maths(__global {scalar} *out, __global const {scalar} *xs,\n"
        f"                    __global const {scalar} *ys, const long n) {{\n"
        f"    const long i = get_global_id(0);\n    if (i >= n) return;\n"
        f"    const {t} x = {load('xs')};\n    const {t} y = {load('ys')};\n    {body}\n}}\n"
    )


LOCAL_SOURCE = """
__kernel void reverse(__global float *out, __global const float *in, __local float *tile) {
    const int l = get_local_id(0), g = get_group_id(0), n = get_local_size(0);
    tile[l] = in[g * n + l];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[g * n + l] = tile[n - 1 - l];
}
"""


def _inputs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.uniform(-3.0, 3.0, _N).astype(dtype)
    y = rng.uniform(0.5, 2.0, _N).astype(dtype)
    return x, y


def _check_maths(dtype: str, width: int, ctx: Any, queue: Any) -> str:
    import pyopencl as cl
    import pyopencl.array as cla

    x, y = _inputs(dtype)
    prg = build_program(cl, ctx, maths_source(dtype, width))
    out = cla.to_device(queue, np.zeros((len(_FUNCS), _N), dtype))
    dx, dy = cla.to_device(queue, x), cla.to_device(queue, y)
    items = _N // width
    prg.maths(queue, (items,), None, out.data, dx.data, dy.data, np.int64(items))
    got = out.get()
    wide = x.astype(np.float64), y.astype(np.float64)
    for name, ref, row in zip(_FUNCS, _REFS, got):
        want = ref(*wide)
        err = np.abs(row - want) / np.maximum(np.abs(want), 1e-30)
        if not np.all(np.isfinite(row)) or float(err.max()) > _RTOL[dtype]:
            return f"{name.split('(')[0]} on {dtype}x{width} off by {float(np.nanmax(err)):.2g} relative"
    return ""


def _check_local(ctx: Any, queue: Any) -> str:
    import pyopencl as cl
    import pyopencl.array as cla

    group = 64
    x = np.arange(4 * group, dtype=np.float32)
    prg = build_program(cl, ctx, LOCAL_SOURCE)
    out = cla.to_device(queue, np.zeros(x.shape, np.float32))
    prg.reverse(queue, x.shape, (group,), out.data, cla.to_device(queue, x).data,
                cl.LocalMemory(group * 4))
    want = x.reshape(-1, group)[:, ::-1].ravel()
    return "" if np.array_equal(out.get(), want) else "local memory with barriers gives wrong values"


def run_feature(feature: str, device: Any, ctx: Any, queue: Any) -> str:
    """``""`` if ``feature`` computes right on this device, else what went wrong."""
    if feature == "scalar":
        return _check_maths("float32", 1, ctx, queue)
    if feature == "local":
        return _check_local(ctx, queue)
    dtype, width = feature.split("x")
    return _check_maths(dtype, int(width), ctx, queue)
