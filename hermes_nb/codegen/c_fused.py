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

Scalar constants: the OpenCL kernels take the prologue's and epilogue's scalar parameters
as their last arguments (``pc<j>``, ``ec<j>``), rendered from the programs' templates, so a
changed scalar runs the built program. CUDA's ``ReductionKernel`` pieces still hold them
as literals (CuPy keys its compiled reductions by that source: a changed scalar compiles
anew); the ElementwiseKernel epilogues of matmuls and of reductions whose epilogue reads
more than the reduced value take them as arguments.
"""

from __future__ import annotations

import functools
from typing import Any

from hermes_nb.codegen.c_combine import c_combine
from hermes_nb.codegen.c_source import CUDA, OPENCL, CStyleRenderer
from hermes_nb.codegen.opencl_templates import FP64_PRAGMA
from hermes_nb.ir.program import Program
from hermes_nb.ir.reduce import reduce_def

__all__ = [
    "cuda_matmul_epilogue_source",
    "cuda_reduce_parts",
    "cuda_reduce_source",
    "opencl_matmul_hooks",
    "opencl_reduce_source",
    "reduce_identity",
]


def _functions(r: CStyleRenderer, programs: list[tuple[Program, str]],
               params: bool = False, uses: str = "") -> str:
    """The programs as functions after the helpers they (and ``uses``, kernel code outside
    them: a complex combine or identity) call."""
    helpers: dict[str, None] = {}
    bodies = []
    for program, name in programs:
        helpers.update(dict.fromkeys(r.helpers(program)))
        bodies.append(r.function(program, name, params=params))
    complex_helpers = r.complex_helpers("\n".join([*bodies, uses]))
    return "\n\n".join([*helpers, *complex_helpers, *bodies])


def _scalar_names(program: Program | None, prefix: str) -> list[str]:
    """The kernel's names of ``program``'s scalar parameters: ``<prefix><j>``."""
    return [f"{prefix}{j}" for j in program.params] if program is not None else []


def _scalar_decls(r: CStyleRenderer, program: Program | None, prefix: str) -> str:
    """``, const <type> <prefix><j>`` per scalar parameter: the kernel's last arguments."""
    if program is None:
        return ""
    return "".join(f", const {r.ctype(program.consts[j][1])} {prefix}{j}"
                   for j in program.params)


# fred_vec's fold of the vector ``v`` into ``va`` (floats only); ``{vec}``: va's type
_VECTOR_COMBINE = {  # folding vector {x} into vector accumulator {a}
    "sum": "({a} + {x})",
    "prod": "({a} * {x})",
    "max": "select({x}, {a}, ({a} >= {x}) | isnan({a}))",
    "min": "select({x}, {a}, ({a} <= {x}) | isnan({a}))",
}


def reduce_identity(r: CStyleRenderer, op: str, dtype: str) -> str:
    """The C literal every ``op`` accumulation starts from."""
    value = reduce_def(op).identity(dtype)
    if value is None:
        raise ValueError(f"{op} has no identity")
    return r.literal(value, dtype)


def _combine(r: CStyleRenderer, op: str, dtype: str) -> str:
    """``op``'s accumulation step of ``b`` into ``a`` in ``r``'s types."""
    t, u = r.types[dtype]
    return f"({c_combine(op, dtype, t=t, u=u)})"


class _OpenCLReduceWriter:
    """Writes the OpenCL program of one fused-reduction pass, one method per part."""

    def __init__(self, prologue: Program, epilogue: Program | None, op: str, acc: str,
                 rank1: bool, eclasses: str, vec_classes: str, width: int, fp64: bool) -> None:
        self.r = OPENCL
        self.prologue, self.epilogue, self.op, self.acc = prologue, epilogue, op, acc
        self.rank1, self.eclasses, self.vec_classes = rank1, eclasses, vec_classes
        self.width, self.fp64 = width, fp64
        self.n_in = prologue.n_inputs
        self.acc_c = self.r.ctype(acc)
        self.wide = reduce_def(op).work_dtype(acc, fp64) != acc
        self.work_c = "double" if self.wide else self.acc_c
        self.out_t = epilogue.dtype_of(epilogue.outputs[0]) if epilogue is not None else acc

    def source(self) -> str:
        kernel = self.scalar_kernel()
        if self.width:
            kernel += "\n\n" + self.vector_kernel()
        return f"""\
// Generated by hermes_nb.codegen.c_fused: {self.op} of hpro over the reduced elements, then hepi.
{self.fp64_header()}
// NumPy rounds a*b+c twice; do not let the compiler contract it into an fma.
#pragma OPENCL FP_CONTRACT OFF
#define A {self.acc_c}
#define W {self.work_c}
#define IDENT {reduce_identity(self.r, self.op, self.acc)}

{self.functions()}

inline W combine(W a, W b) {{ return {_combine(self.r, self.op, self.acc)}; }}

{kernel}
"""

    def fp64_header(self) -> str:
        programs = [self.prologue] + ([self.epilogue] if self.epilogue is not None else [])
        used = {self.acc, self.out_t}
        for program in programs:
            used |= {*program.input_dtypes, *(i.dtype for i in program.instrs)}
        wide = "float64" in used or "complex128" in used or self.wide
        return FP64_PRAGMA if self.fp64 and wide else ""

    def functions(self) -> str:
        programs = [(self.prologue, "hpro")]
        if self.epilogue is not None:
            programs.append((self.epilogue, "hepi"))
        uses = _combine(self.r, self.op, self.acc) + reduce_identity(self.r, self.op, self.acc)
        functions = _functions(self.r, programs, params=True, uses=uses)
        if self.width:
            functions += "\n\n" + self.r.vector_function(self.prologue, self.width, "hpro_vec",
                                                          params=True)
        return functions

    # ---- signature and indexing --------------------------------------------------------------

    def params(self) -> str:
        r = self.r
        args = "".join(f"__global const {r.ctype(d)}* restrict in{m}, "
                       for m, d in enumerate(self.prologue.input_dtypes))
        if self.epilogue is not None:
            args += "".join(f"__global const {r.ctype(d)}* restrict e{m}, "
                            for m, d in enumerate(self.epilogue.input_dtypes[1:]))
        return (f"__global {r.ctype(self.out_t)}* restrict out, {args}"
                "__global const long* restrict meta, "
                "const long M, const long K, const long parts, const long chunk, const int contig"
                f"{_scalar_decls(r, self.prologue, 'pc')}{_scalar_decls(r, self.epilogue, 'ec')}")

    def head(self) -> str:
        """Work-item ``g``'s output row and part, and its inputs' offsets ``b<m>`` there."""
        n_in = self.n_in
        bases = ", ".join(f"b{m} = 0" for m in range(n_in)) or "unused_b = 0"
        obase = "\n".join(f"        b{m} += c * ostr[{m} * no + d];" for m in range(n_in))
        return f"""\
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

    def call(self, offsets: list[str]) -> str:
        args = [f"in{m}[{o}]" for m, o in enumerate(offsets)] + _scalar_names(self.prologue, "pc")
        return f"hpro({', '.join(args)})"

    # ---- the scalar kernel fred --------------------------------------------------------------

    def scalar_kernel(self) -> str:
        loop = self.rank1_loop() if self.rank1 else self.nd_loop()
        return f"""\
__kernel void fred({self.params()})
{{
{self.head()}
    long lo = p * chunk, hi = min(K, lo + chunk), step = 1;
    if (!contig) {{ lo = p; hi = K; step = parts; }}
    W a0 = IDENT, a1 = IDENT, a2 = IDENT, a3 = IDENT;
{loop}
    const A acc = (A)combine(combine(a0, a1), combine(a2, a3));
    out[g] = {self.store()};
}}"""

    def rank1_loop(self) -> str:
        """One reduced dimension: four accumulators, unrolled."""
        n_in = self.n_in
        strides = "".join(f"    const long s{m} = rstr[{m}];\n" for m in range(n_in))
        at = [self.call([f"b{m} + (k + {u} * step) * s{m}" for m in range(n_in)])
              for u in range(4)]
        return f"""{strides}    long k = lo;
    for (; k + 3 * step < hi; k += 4 * step) {{
        a0 = combine(a0, {at[0]});
        a1 = combine(a1, {at[1]});
        a2 = combine(a2, {at[2]});
        a3 = combine(a3, {at[3]});
    }}
    for (; k < hi; k += step) a0 = combine(a0, {at[0]});"""

    def nd_loop(self) -> str:
        """Several reduced dimensions: each element's offsets from its flat index."""
        n_in = self.n_in
        roffs = "\n".join(f"            o{m} += c * rstr[{m} * nr + d];" for m in range(n_in))
        inits = ", ".join(f"o{m} = b{m}" for m in range(n_in)) or "unused_o = 0"
        return f"""    for (long k = lo; k < hi; k += step) {{
        long {inits};
        long rem = k;
        for (long d = nr - 1; d >= 0; --d) {{
            const long c = rem % rshape[d];
            rem /= rshape[d];
{roffs}
        }}
        a0 = combine(a0, {self.call([f"o{m}" for m in range(n_in)])});
    }}"""

    def store(self) -> str:
        """The value stored: the reduced ``acc``, through the epilogue if there is one."""
        if self.epilogue is None:
            return "acc"
        reads = [f"e{m}[{'0' if c == 's' else 'row'}]" for m, c in enumerate(self.eclasses)]
        return "hepi(" + ", ".join(["acc", *reads, *_scalar_names(self.epilogue, "ec")]) + ")"

    # ---- the vector kernel fred_vec ----------------------------------------------------------

    def vector_combine(self, vec: str, a: str, x: str) -> str:
        """Vector ``x`` of the prologue's dtype folded into accumulator ``a``."""
        if self.op == "sum" and self.wide:
            return f"({a} + convert_{vec}({x}))"
        return _VECTOR_COMBINE[self.op].format(a=a, x=x)

    def vector_loads(self, at: str) -> str:
        """The prologue's vector arguments at element ``at`` (class ``o``: one broadcast)."""
        width = self.width
        return ", ".join([
            f"vload{width}(0, in{m} + b{m} + {at})" if c == "i"
            else f"(({self.r.ctype(d)}{width})(in{m}[b{m}]))"
            for m, (c, d) in enumerate(zip(self.vec_classes, self.prologue.input_dtypes))]
            + _scalar_names(self.prologue, "pc"))

    def vector_kernel(self) -> str:
        width, classes = self.width, self.vec_classes
        vec = f"{self.work_c}{width}"
        vloads, vloads_next = self.vector_loads("k"), self.vector_loads(f"k + {width}")
        scalar = self.call([f"b{m} + k" if c == "i" else f"b{m}" for m, c in enumerate(classes)])
        return f"""\
__kernel void fred_vec({self.params()})
{{
{self.head()}
    const long lo = p * chunk, hi = min(K, lo + chunk);
    {vec} va = ({vec})(IDENT), vb = ({vec})(IDENT);
    long k = lo;
    for (; k + {2 * width} <= hi; k += {2 * width}) {{  // two chains: add latency hidden
        const {self.acc_c}{width} v = hpro_vec({vloads});
        const {self.acc_c}{width} u = hpro_vec({vloads_next});
        va = {self.vector_combine(vec, "va", "v")};
        vb = {self.vector_combine(vec, "vb", "u")};
    }}
    for (; k + {width} <= hi; k += {width}) {{
        const {self.acc_c}{width} v = hpro_vec({vloads});
        va = {self.vector_combine(vec, "va", "v")};
    }}
    va = {_VECTOR_COMBINE[self.op].format(a="va", x="vb")};
    W lanes[{width}];
    vstore{width}(va, 0, lanes);
    W wacc = IDENT;
    for (int l = 0; l < {width}; ++l) wacc = combine(wacc, lanes[l]);
    for (; k < hi; ++k) wacc = combine(wacc, {scalar});
    const A acc = (A)wacc;
    out[g] = {self.store()};
}}"""


def opencl_reduce_source(prologue: Program, epilogue: Program | None, op: str, acc: str,
                         rank1: bool, eclasses: str, vec_classes: str, width: int,
                         fp64: bool) -> str:
    """The OpenCL program of one fused-reduction pass: ``fred`` always, ``fred_vec`` when
    ``width`` > 0 (then ``vec_classes`` has ``i``/``o`` per prologue input). ``eclasses``
    has ``s``/``f`` per epilogue input after the reduced value (empty without one). The
    kernels' last arguments are the prologue's scalar parameters, then the epilogue's
    (:func:`opencl_reduce_arguments`)."""
    return _opencl_reduce_source(prologue.template, epilogue.template if epilogue else None,
                                 op, acc, rank1, eclasses, vec_classes, width, fp64)


def opencl_reduce_arguments(prologue: Program, epilogue: Program | None) -> tuple[Any, ...]:
    """The scalar arguments of a reduction pass's kernels (bools as 0/1 bytes)."""
    from hermes_nb.codegen.c_kernels import opencl_arguments

    return opencl_arguments(prologue) + (opencl_arguments(epilogue) if epilogue else ())


@functools.lru_cache(maxsize=256)
def _opencl_reduce_source(prologue: Program, epilogue: Program | None, op: str, acc: str,
                          rank1: bool, eclasses: str, vec_classes: str, width: int,
                          fp64: bool) -> str:
    return _OpenCLReduceWriter(prologue, epilogue, op, acc, rank1, eclasses, vec_classes,
                               width, fp64).source()


def opencl_matmul_hooks(epilogue: Program, matmul_dtype: str) -> dict[str, str]:
    """The ``matmul.cl`` fillings applying ``epilogue`` at the store: its inputs ``e<m>``
    are read at ``eoff[m * nb + b] + row * estr[2m] + col * estr[2m + 1]``; its scalar
    parameters are the kernel's last arguments (``c_kernels.opencl_arguments``)."""
    r = OPENCL
    epilogue = epilogue.template  # no scalar's value in the source
    extra = epilogue.input_dtypes[1:]
    args = "".join(f", __global const {r.ctype(d)}* restrict e{m}" for m, d in enumerate(extra))
    if extra:
        args += (", __global const long* restrict eoff, __global const long* restrict estr, "
                 "const long nb")
    reads = [f"e{m}[eoff[{m} * nb + b] + row * estr[{2 * m}] + col * estr[{2 * m + 1}]]"
             for m in range(len(extra))]
    return {
        "functions": "#pragma OPENCL FP_CONTRACT OFF\n\n" + _functions(r, [(epilogue, "hepi")],
                                                                      params=True),
        "out_t": r.ctype(epilogue.dtype_of(epilogue.outputs[0])),
        "epi_args": args + _scalar_decls(r, epilogue, "ec"),
        "store": f"hepi({', '.join(['acc', *reads, *_scalar_names(epilogue, 'ec')])})",
    }


@functools.lru_cache(maxsize=256)
def cuda_reduce_parts(prologue: Program, epilogue: Program | None, op: str, acc: str
                      ) -> dict[str, str]:
    """Keyword arguments of ``cupy.ReductionKernel``: the prologue is ``map_expr``; the
    epilogue is ``post_map_expr`` when it reads nothing but the reduced value (else the
    device runs it as a separate ElementwiseKernel and ``post_map_expr`` is ``y = a``)."""
    r = CUDA
    work = reduce_def(op).work_dtype(acc)  # e.g. a float32 sum accumulates in double
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
        "preamble": _functions(r, programs, uses=_combine(r, op, work)
                               + reduce_identity(r, op, acc)),
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
    include = "#include <cupy/complex.cuh>\n" if "thrust::complex" in signature + p["preamble"] \
        else ""
    return f"""\
{include}{p["preamble"]}

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
