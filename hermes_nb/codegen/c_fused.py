"""C-family sources of the fused reduction and matmul-epilogue kernels (OpenCL C, CUDA).

Prologue and epilogue :class:`Program` s become inline functions ``hpro(x0, ...)`` (the
value reduced, per element) and ``hepi(r, e0, ...)`` (the output from the reduced value
or product ``r``) through the renderers of :mod:`hermes_nb.codegen.c_source`, so they
round exactly like fused elementwise kernels.

OpenCL reduction (``opencl_reduce_source``): kernel ``fred`` gives work-item ``g`` the
output ``row = g / parts`` and part ``p = g % parts`` of its reduced elements (a
contiguous chunk on CPUs, every ``parts``-th element on GPUs so neighbours read
neighbours); inputs are read through the layout of :mod:`hermes_nb.codegen.layout`
passed in ``meta``. With ``parts > 1`` the host reduces the ``(M, parts)`` partials in a
second pass that applies the epilogue. ``fred_vec`` (CPU devices, innermost dimension
reduced, vectorisable prologue) walks its chunk ``width`` elements at a time with
``hpro_vec``: PoCL vectorises only vector types. A float32 sum accumulates in ``W`` =
double where the device has fp64 (``A``, the reduction's dtype, otherwise) and is rounded
to ``A`` once per work-item.

CUDA: ``cuda_reduce_parts`` gives the pieces of a ``cupy.ReductionKernel`` (the
prologue as ``map_expr``), ``cuda_reduce_source`` a standalone kernel using the same
expressions (what ``explain()`` shows, and what tests compile with nvcc);
``cuda_matmul_epilogue_source`` the ElementwiseKernel-equivalent epilogue after cuBLAS.
"""

from __future__ import annotations

import functools

import numpy as np

from hermes_nb.codegen.c_source import CUDA, OPENCL, CStyleRenderer
from hermes_nb.compiler.program import Program

__all__ = [
    "cuda_matmul_epilogue_source",
    "cuda_reduce_parts",
    "cuda_reduce_source",
    "opencl_matmul_hooks",
    "opencl_reduce_source",
    "reduce_identity",
]


def _functions(r: CStyleRenderer, programs: list[tuple[Program, str]]) -> str:
    helpers: dict[str, None] = {}
    bodies = []
    for program, name in programs:
        helpers.update(dict.fromkeys(r.helpers(program)))
        bodies.append(r.function(program, name))
    return "\n\n".join([*helpers, *bodies])


def reduce_identity(r: CStyleRenderer, op: str, dtype: str) -> str:
    """The C literal every ``op`` accumulation starts from."""
    if op in ("sum", "prod"):
        return r.literal(int(op == "prod"), dtype)
    low = op == "max"
    if dtype == "bool":
        return r.literal(not low, dtype)
    if dtype.startswith("float"):
        return r.literal(float("-inf") if low else float("inf"), dtype)
    info = np.iinfo(dtype)
    return r.literal(info.min if low else info.max, dtype)


def _combine(r: CStyleRenderer, op: str, dtype: str, a: str = "a", b: str = "b") -> str:
    """``op``'s accumulation step of ``b`` into ``a`` (NaN-propagating max/min)."""
    if dtype == "bool":
        return f"({a} | {b})" if op in ("sum", "max") else f"({a} & {b})"
    if op in ("sum", "prod"):
        sym = "+" if op == "sum" else "*"
        t, u = r.types[dtype]
        if dtype.startswith("int"):  # wrap like NumPy: unsigned arithmetic
            return f"(({t})(({u}){a} {sym} ({u}){b}))"
        return f"({a} {sym} {b})"
    cmp = ">=" if op == "max" else "<="
    nan = f" || isnan({a})" if dtype.startswith("float") else ""
    return f"(({a} {cmp} {b}{nan}) ? {a} : {b})"


def _widens(op: str, acc: str) -> bool:
    """float32 sums accumulate in double where the device has fp64: as accurate as NumPy's
    pairwise summation at any length (the result is rounded to float once)."""
    return op == "sum" and acc == "float32"


@functools.lru_cache(maxsize=256)
def opencl_reduce_source(prologue: Program, epilogue: Program | None, op: str, acc: str,
                         rank1: bool, eclasses: str, vec_classes: str, width: int,
                         fp64: bool) -> str:
    """The OpenCL program of one fused-reduction pass: ``fred`` always, ``fred_vec`` when
    ``width`` > 0 (then ``vec_classes`` has ``i``/``o`` per prologue input). ``eclasses``
    has ``s``/``f`` per epilogue input after the reduced value (empty without one)."""
    from hermes_nb.backends.opencl import kernels as ocl

    r = OPENCL
    n_in = prologue.n_inputs
    acc_c = r.ctype(acc)
    wide = fp64 and _widens(op, acc)
    work_c = "double" if wide else acc_c
    out_t = epilogue.dtype_of(epilogue.outputs[0]) if epilogue is not None else acc
    programs = [(prologue, "hpro")] + ([(epilogue, "hepi")] if epilogue is not None else [])
    functions = _functions(r, programs)
    if width:
        functions += "\n\n" + r.vector_function(prologue, width, "hpro_vec")
    combine = _combine(r, op, acc)
    args = "".join(f"__global const {r.ctype(d)}* restrict in{m}, "
                   for m, d in enumerate(prologue.input_dtypes))
    if epilogue is not None:
        args += "".join(f"__global const {r.ctype(d)}* restrict e{m}, "
                        for m, d in enumerate(epilogue.input_dtypes[1:]))
    store = "acc"
    if epilogue is not None:
        store = "hepi(" + ", ".join(["acc", *(f"e{m}[{'0' if c == 's' else 'row'}]"
                                              for m, c in enumerate(eclasses))]) + ")"
    bases = ", ".join(f"b{m} = 0" for m in range(n_in)) or "unused_b = 0"
    obase = "\n".join(f"        b{m} += c * ostr[{m} * no + d];" for m in range(n_in))
    head = f"""\
    const long g = (long)get_global_id(0);
    if (g >= M * parts) return;
    const long row = g / parts, p = g - row * parts;
    const long no = meta[0], nr = meta[1];
    __global const long* oshape = meta + 2;
    __global const long* rshape = oshape + no;
    __global const long* ostr = rshape + nr;
    __global const long* rstr = ostr + {n_in} * no;
    long {bases};
    long rem = row;
    for (long d = no - 1; d >= 0; --d) {{
        const long c = rem % oshape[d];
        rem /= oshape[d];
{obase}
    }}
    (void)rstr; (void)rshape;"""

    def call(offsets: list[str]) -> str:
        return f"hpro({', '.join(f'in{m}[{o}]' for m, o in enumerate(offsets))})"

    if rank1:
        strides = "".join(f"    const long s{m} = rstr[{m}];\n" for m in range(n_in))
        at = [[f"b{m} + (k + {u} * step) * s{m}" for m in range(n_in)] for u in range(4)]
        loop = f"""{strides}    long k = lo;
    for (; k + 3 * step < hi; k += 4 * step) {{
        a0 = combine(a0, {call(at[0])});
        a1 = combine(a1, {call(at[1])});
        a2 = combine(a2, {call(at[2])});
        a3 = combine(a3, {call(at[3])});
    }}
    for (; k < hi; k += step) a0 = combine(a0, {call(at[0])});"""
    else:
        roffs = "\n".join(f"            o{m} += c * rstr[{m} * nr + d];" for m in range(n_in))
        inits = ", ".join(f"o{m} = b{m}" for m in range(n_in)) or "unused_o = 0"
        loop = f"""    for (long k = lo; k < hi; k += step) {{
        long {inits};
        long rem = k;
        for (long d = nr - 1; d >= 0; --d) {{
            const long c = rem % rshape[d];
            rem /= rshape[d];
{roffs}
        }}
        a0 = combine(a0, {call([f"o{m}" for m in range(n_in)])});
    }}"""
    params = (f"__global {r.ctype(out_t)}* restrict out, {args}__global const long* restrict meta, "
              "const long M, const long K, const long parts, const long chunk, const int contig")
    kernel = f"""\
__kernel void fred({params})
{{
{head}
    long lo = p * chunk, hi = min(K, lo + chunk), step = 1;
    if (!contig) {{ lo = p; hi = K; step = parts; }}
    W a0 = IDENT, a1 = IDENT, a2 = IDENT, a3 = IDENT;
{loop}
    const A acc = (A)combine(combine(a0, a1), combine(a2, a3));
    out[g] = {store};
}}"""
    if width:
        vec = f"{work_c}{width}"
        vloads = ", ".join(
            f"vload{width}(0, in{m} + b{m} + k)" if c == "i"
            else f"(({r.ctype(d)}{width})(in{m}[b{m}]))"
            for m, (c, d) in enumerate(zip(vec_classes, prologue.input_dtypes)))
        vcombine = {"sum": f"(va + convert_{vec}(v))" if wide else "(va + v)",
                    "prod": "(va * v)",
                    "max": "select(v, va, (va >= v) | isnan(va))",
                    "min": "select(v, va, (va <= v) | isnan(va))"}[op]
        scalar = call([f"b{m} + k" if c == "i" else f"b{m}" for m, c in enumerate(vec_classes)])
        kernel += f"""

__kernel void fred_vec({params})
{{
{head}
    const long lo = p * chunk, hi = min(K, lo + chunk);
    {vec} va = ({vec})(IDENT);
    long k = lo;
    for (; k + {width} <= hi; k += {width}) {{
        const {acc_c}{width} v = hpro_vec({vloads});
        va = {vcombine};
    }}
    W lanes[{width}];
    vstore{width}(va, 0, lanes);
    W wacc = IDENT;
    for (int l = 0; l < {width}; ++l) wacc = combine(wacc, lanes[l]);
    for (; k < hi; ++k) wacc = combine(wacc, {scalar});
    const A acc = (A)wacc;
    out[g] = {store};
}}"""
    used = {*prologue.input_dtypes, acc, out_t, *(i.dtype for i in prologue.instrs)}
    if epilogue is not None:
        used |= {*epilogue.input_dtypes, *(i.dtype for i in epilogue.instrs)}
    header = ocl.FP64_PRAGMA if fp64 and ("float64" in used or wide) else ""
    return f"""\
// Generated by hermes_nb.codegen.c_fused: {op} of hpro over the reduced elements, then hepi.
{header}
// NumPy rounds a*b+c twice; do not let the compiler contract it into an fma.
#pragma OPENCL FP_CONTRACT OFF
#define A {acc_c}
#define W {work_c}
#define IDENT {reduce_identity(r, op, acc)}

{functions}

inline W combine(W a, W b) {{ return {combine}; }}

{kernel}
"""


def opencl_matmul_hooks(epilogue: Program, matmul_dtype: str) -> dict[str, str]:
    """The ``matmul.cl`` fillings applying ``epilogue`` at the store: its inputs ``e<m>``
    are read at ``eoff[m * nb + b] + row * estr[2m] + col * estr[2m + 1]``."""
    r = OPENCL
    extra = epilogue.input_dtypes[1:]
    args = "".join(f", __global const {r.ctype(d)}* restrict e{m}" for m, d in enumerate(extra))
    if extra:
        args += (", __global const long* restrict eoff, __global const long* restrict estr, "
                 "const long nb")
    reads = [f"e{m}[eoff[{m} * nb + b] + row * estr[{2 * m}] + col * estr[{2 * m + 1}]]"
             for m in range(len(extra))]
    return {
        "functions": "#pragma OPENCL FP_CONTRACT OFF\n\n" + _functions(r, [(epilogue, "hepi")]),
        "out_t": r.ctype(epilogue.dtype_of(epilogue.outputs[0])),
        "epi_args": args,
        "store": f"hepi({', '.join(['acc', *reads])})",
    }


@functools.lru_cache(maxsize=256)
def cuda_reduce_parts(prologue: Program, epilogue: Program | None, op: str, acc: str
                      ) -> dict[str, str]:
    """Keyword arguments of ``cupy.ReductionKernel``: the prologue is ``map_expr``; the
    epilogue is ``post_map_expr`` when it reads nothing but the reduced value (else the
    device runs it as a separate ElementwiseKernel and ``post_map_expr`` is ``y = a``)."""
    r = CUDA
    work = "float64" if _widens(op, acc) else acc  # a float32 sum accumulates in double
    in_epi = epilogue is not None and epilogue.n_inputs == 1
    out_t = epilogue.dtype_of(epilogue.outputs[0]) if in_epi else acc
    programs = [(prologue, "hpro")] + ([(epilogue, "hepi")] if in_epi else [])
    out_t_c = r.ctype(out_t)
    return {
        "in_params": ", ".join(f"{d} x{m}" for m, d in enumerate(prologue.input_dtypes)),
        "out_params": f"{out_t} y",
        "map_expr": f"hpro({', '.join(f'x{m}' for m in range(prologue.n_inputs))})",
        "reduce_expr": _combine(r, op, work),
        "post_map_expr": f"y = hepi(({r.ctype(acc)})a)" if in_epi else f"y = ({out_t_c})a",
        "identity": reduce_identity(r, op, acc),
        "reduce_type": r.ctype(work),
        "preamble": _functions(r, programs),
    }


def cuda_reduce_source(prologue: Program, epilogue: Program | None, op: str, acc: str) -> str:
    """A standalone CUDA kernel ``hermes_fused_reduce(out, in0.., M, K)`` over inputs
    contiguous as ``(M, K)``: one block per output, the same map/reduce/post expressions
    CuPy's ReductionKernel gets from :func:`cuda_reduce_parts`."""
    p = cuda_reduce_parts(prologue, epilogue, op, acc)
    r = CUDA
    out_t = p["out_params"].rsplit(" ", 1)[0]
    ins = "".join(f"const {r.ctype(d)}* __restrict__ in{m}, "
                  for m, d in enumerate(prologue.input_dtypes))
    signature = f"{r.ctype(out_t)}* __restrict__ out, {ins}long long M, long long K"
    loads = "\n".join(f"        const {r.ctype(d)} x{m} = in{m}[row * K + k];"
                      for m, d in enumerate(prologue.input_dtypes))
    return f"""\
{p["preamble"]}

typedef {p["reduce_type"]} acc_t;

extern "C" __global__ void hermes_fused_reduce({signature}) {{
    __shared__ acc_t part[256];
    const long long row = blockIdx.x;
    if (row >= M) return;
    acc_t a = {p["identity"]};
    for (long long k = threadIdx.x; k < K; k += blockDim.x) {{
{loads}
        const acc_t b = {p["map_expr"]};
        a = (acc_t){p["reduce_expr"]};
    }}
    part[threadIdx.x] = a;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) {{
            const acc_t b = part[threadIdx.x + s];
            a = part[threadIdx.x];
            part[threadIdx.x] = (acc_t){p["reduce_expr"]};
        }}
        __syncthreads();
    }}
    if (threadIdx.x == 0) {{
        a = part[0];
        {r.ctype(out_t)} y;
        {p["post_map_expr"]};
        out[row] = y;
    }}
}}
"""


def cuda_matmul_epilogue_source(epilogue: Program) -> str:
    """The CUDA epilogue kernel run over the cuBLAS product (input 0)."""
    from hermes_nb.codegen.c_kernels import cuda_kernel_source

    return cuda_kernel_source(epilogue, "hermes_matmul_epilogue")
