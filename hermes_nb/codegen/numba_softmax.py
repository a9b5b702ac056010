"""The Numba kernel of a small ``fused_softmax`` on ``cpu:0``: each row of a 2-D view (the
softmax's axes last, flattened) in three short loops, the largest value, the shifted
exponentials and their sum, then the division.

One launch costs about a microsecond, where NumPy's steps cost some 7 us however small the
rows (each of its two reductions ~3 us); NumPy's vectorised ``exp`` wins from a few
thousand elements, where the launcher hands back to it. The largest value propagates a
NaN as NumPy's ``max`` does; a float32 row's sum accumulates in float64.
"""

from __future__ import annotations

from hermes_nb.codegen.numba_support import codegen_hash, module_header

__all__ = ["render"]

_CODEGEN_HASH = codegen_hash(__file__)


def render(dtype: str) -> str:
    """``kernel(x, out)``: ``out[r] = softmax(x[r])`` for each row of the 2-D ``x``."""
    t = f"np.{dtype}"
    lines = module_header("numba_softmax", _CODEGEN_HASH, [f"softmax over rows, {dtype}"])
    lines += [
        '@njit(cache=True, boundscheck=False, nogil=True, error_model="numpy")',
        "def kernel(x, out):",
        "    R, K = x.shape",
        "    for r in range(R):",
        "        row = x[r]",
        "        o = out[r]",
        "        m = row[0]",
        "        for k in range(1, K):",
        "            v = row[k]",
        "            if v > m or v != v:  # a NaN stays the largest",
        "                m = v",
        "        s = np.float64(0.0)",
        "        for k in range(K):",
        "            e = np.exp(row[k] - m)",
        "            o[k] = e",
        "            s += e",
        "        for k in range(K):",
        f"            o[k] = {t}(o[k] / s)",
        "",
    ]
    return "\n".join(lines)
