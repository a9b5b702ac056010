"""What differs between OpenCL C and CUDA C++ in a fused stencil kernel: index and memory
spellings (a table of class attributes), the kernel's signature and pragmas, vector types
(OpenCL only: CUDA renders scalar work-items), and the border-index helpers (OpenCV's
``borderInterpolate``)."""

from __future__ import annotations

from hermes_nb.codegen.c_source import CUDA, OPENCL, CStyleRenderer, OpenCLRenderer
from hermes_nb.ir.program import Program


class Dialect:
    """The spellings of one C dialect; the scalar forms of loads, stores and types."""

    name: str
    renderer: CStyleRenderer
    vectors: bool  # whether work-items may handle vectors of v > 1 pixels
    i64: str
    local: str  # qualifier of work-group (shared) memory
    global_: str  # prefix of a pointer into global memory ("" where that is the default)
    barrier: str
    restrict: str
    lid: tuple[str, str]
    gid: tuple[str, str, str]
    ngroups_z: str

    def fma(self, dtype: str) -> str:
        raise NotImplementedError

    def kernel_signature(self, wx: int, wy: int, params: str) -> str:
        """The ``fused_stencil`` declaration for groups of ``wx x wy`` work-items."""
        raise NotImplementedError

    def pragmas(self, fp64: bool) -> list[str]:
        """Lines at the top of the source (``fp64``: a float64 value or op occurs)."""
        return []

    def vector_type(self, ctype: str, v: int) -> str:
        return ctype

    def load(self, ptr: str, v: int) -> str:
        return f"(*({ptr}))"

    def store(self, value: str, ptr: str, v: int) -> str:
        return f"*({ptr}) = {value};"

    def convert(self, expr: str, ctype: str, v: int) -> str:
        return f"(({ctype}){expr})"

    def vector_function(self, program: Program, v: int, name: str) -> str:
        raise NotImplementedError(f"{self.name} renders no vector functions")


class OpenCLDialect(Dialect):
    name = "OpenCL"
    renderer = OPENCL
    vectors = True
    i64 = "long"
    local = "__local"
    global_ = "__global "
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    restrict = "restrict"
    lid = ("(int)get_local_id(0)", "(int)get_local_id(1)")
    gid = ("(long)get_group_id(0)", "(long)get_group_id(1)", "(long)get_group_id(2)")
    ngroups_z = "(long)get_num_groups(2)"

    def fma(self, dtype: str) -> str:
        return "fma"

    def kernel_signature(self, wx: int, wy: int, params: str) -> str:
        return (f"__kernel __attribute__((reqd_work_group_size({wx}, {wy}, 1)))\n"
                f"void fused_stencil({params})")

    def pragmas(self, fp64: bool) -> list[str]:
        return [*(["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if fp64 else []),
                "// pointwise stages round like NumPy's separate ops: no contraction",
                "#pragma OPENCL FP_CONTRACT OFF"]

    def vector_type(self, ctype: str, v: int) -> str:
        return ctype + (str(v) if v > 1 else "")

    def load(self, ptr: str, v: int) -> str:
        return f"vload{v}(0, {ptr})" if v > 1 else super().load(ptr, v)

    def store(self, value: str, ptr: str, v: int) -> str:
        return f"vstore{v}({value}, 0, {ptr});" if v > 1 else super().store(value, ptr, v)

    def convert(self, expr: str, ctype: str, v: int) -> str:
        return f"convert_{ctype}{v}({expr})" if v > 1 else super().convert(expr, ctype, v)

    def vector_function(self, program: Program, v: int, name: str) -> str:
        assert isinstance(self.renderer, OpenCLRenderer)
        return self.renderer.vector_function(program, v, name=name, params=True)


class CUDADialect(Dialect):
    name = "CUDA"
    renderer = CUDA
    vectors = False  # threads already run in lock-step warps
    i64 = "long long"
    local = "__shared__"
    global_ = ""
    barrier = "__syncthreads();"
    restrict = "__restrict__"
    lid = ("(int)threadIdx.x", "(int)threadIdx.y")
    gid = ("(long long)blockIdx.x", "(long long)blockIdx.y", "(long long)blockIdx.z")
    ngroups_z = "(long long)gridDim.z"

    def fma(self, dtype: str) -> str:
        return "fmaf" if dtype == "float32" else "fma"

    def kernel_signature(self, wx: int, wy: int, params: str) -> str:
        return (f'extern "C" __global__ void __launch_bounds__({wx * wy})\n'
                f"fused_stencil({params})")


MODE_NAMES = {"reflect101": "reflect101", "reflect": "reflect", "replicate": "replicate",
               "constant": "constant", None: "replicate"}


def border_functions(d: Dialect) -> str:
    """``hb_<mode>(i, n)``: index i mapped into [0, n) like OpenCV's borderInterpolate
    (reflecting as often as needed); -1 means "outside, reads as 0" (constant)."""
    q = d.renderer.qualifier
    L = d.i64
    return f"""\
{q} {L} hb_reflect101({L} i, const {L} n) {{
    if (i >= 0 && i < n) return i;
    if (n == 1) return 0;
    const {L} period = 2 * n - 2;
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
}}
{q} {L} hb_reflect({L} i, const {L} n) {{
    if (i >= 0 && i < n) return i;
    const {L} period = 2 * n;
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - 1 - i;
}}
{q} {L} hb_replicate({L} i, const {L} n) {{
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}}
{q} {L} hb_constant({L} i, const {L} n) {{
    return (i >= 0 && i < n) ? i : -1;
}}
{q} {L} hb_clamp({L} i, const {L} lo, const {L} hi) {{
    return i < lo ? lo : (i > hi ? hi : i);
}}"""
