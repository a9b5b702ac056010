"""How C-style code (OpenCL C, CUDA C++) folds one value into a reduction's accumulator.

Identities and accumulation dtypes come from :mod:`hermes_nb.ir.reduce`; this is only the
spelling, shared by the fused reductions (``c_fused``) and the plain ``reduce.cl``.
"""

from __future__ import annotations

# How C (OpenCL C, CUDA) folds ``{b}`` into ``{a}``, per dtype kind: (float, int, bool).
# ``{t}``/``{u}``: the type and its unsigned twin; integers wrap like NumPy through
# unsigned arithmetic. Arg reductions fold (value, index) pairs in reduce.cl's better(),
# ordered by their ReduceDef; their scalar combine is a placeholder.
C_COMBINE: dict[str, tuple[str, str, str]] = {
    "sum": ("{a} + {b}", "({t})(({u}){a} + ({u}){b})", "{a} | {b}"),
    "prod": ("{a} * {b}", "({t})(({u}){a} * ({u}){b})", "{a} & {b}"),
    "max": ("({a} >= {b} || isnan({a})) ? {a} : {b}", "({a} >= {b}) ? {a} : {b}", "{a} | {b}"),
    "min": ("({a} <= {b} || isnan({a})) ? {a} : {b}", "({a} <= {b}) ? {a} : {b}", "{a} & {b}"),
    "argmax": ("{a}", "{a}", "{a}"),
    "argmin": ("{a}", "{a}", "{a}"),
}


# sum and prod on complex operands; the ordered reductions have none (complex has no order)
_COMPLEX_COMBINE = {"sum": "hc_add_{s}({a}, {b})", "prod": "hc_mul_{s}({a}, {b})"}


def c_combine(op: str, dtype: str, a: str = "a", b: str = "b", t: str = "T", u: str = "U"
              ) -> str:
    """C's expression folding ``b`` into ``a`` for reduction ``op`` over ``dtype`` (complex:
    a ``codegen.c_complex`` helper, which the kernel's functions then define)."""
    if dtype.startswith("complex"):
        if op not in _COMPLEX_COMBINE:
            raise TypeError(f"{op}: complex dtypes have no order; no {op} reduction of {dtype}")
        return _COMPLEX_COMBINE[op].format(a=a, b=b, s=dtype)
    float_form, int_form, bool_form = C_COMBINE[op]
    form = bool_form if dtype == "bool" else float_form if dtype.startswith("float") else int_form
    return form.format(a=a, b=b, t=t, u=u)
