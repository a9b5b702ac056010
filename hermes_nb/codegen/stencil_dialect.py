"""What differs between OpenCL C and CUDA C++ in a fused stencil kernel: index and memory
spellings, and the border-index helpers (OpenCV's ``borderInterpolate``)."""

from __future__ import annotations

from hermes_nb.codegen.c_source import CUDA, OPENCL, CStyleRenderer


class Dialect:
    renderer: CStyleRenderer
    i64: str
    local: str
    barrier: str
    restrict: str
    lid: tuple[str, str]
    gid: tuple[str, str, str]
    ngroups_z: str

    def fma(self, dtype: str) -> str:
        raise NotImplementedError


class OpenCLDialect(Dialect):
    renderer = OPENCL
    i64 = "long"
    local = "__local"
    barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
    restrict = "restrict"
    lid = ("(int)get_local_id(0)", "(int)get_local_id(1)")
    gid = ("(long)get_group_id(0)", "(long)get_group_id(1)", "(long)get_group_id(2)")
    ngroups_z = "(long)get_num_groups(2)"

    def fma(self, dtype: str) -> str:
        return "fma"


class CUDADialect(Dialect):
    renderer = CUDA
    i64 = "long long"
    local = "__shared__"
    barrier = "__syncthreads();"
    restrict = "__restrict__"
    lid = ("(int)threadIdx.x", "(int)threadIdx.y")
    gid = ("(long long)blockIdx.x", "(long long)blockIdx.y", "(long long)blockIdx.z")
    ngroups_z = "(long long)gridDim.z"

    def fma(self, dtype: str) -> str:
        return "fmaf" if dtype == "float32" else "fma"


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
