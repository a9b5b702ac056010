"""Every elementwise op of the IR's op table has a form in every renderer table (OpenCL C,
CUDA C++, Numba), a function in the array backend and a NumPy reference, and no table has
an entry for an op the op table does not declare."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any

import numpy as np
import pytest
import reference_ops

import hermes_nb as hm
from hermes_nb.codegen import c_source, numba_cpu
from hermes_nb.ir import dtypes
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.ops import ELEMENTWISE as ALL_ELEMENTWISE
from hermes_nb.ir.ops import OPS, Kind
from hermes_nb.ir.program import Instr, Program

# ``to_device`` only moves data between devices: the fusion passes never put it in a program
ELEMENTWISE = sorted(ALL_ELEMENTWISE - {"to_device"})
DTYPES = dtypes.NAMES
REFERENCES = {
    **reference_ops.UNARY_MATH, **reference_ops.PREDICATES, **reference_ops.BITWISE_UNARY,
    **reference_ops.ARITHMETIC, **reference_ops.COMPARISONS, **reference_ops.LOGICAL,
    **reference_ops.BITWISE, **reference_ops.OTHER,
}
# table name -> (its entries by op, the ops it must cover)
TABLES: dict[str, tuple[Collection[str], Collection[str]]] = {
    "c_source.C_FORMS": (c_source.C_FORMS, ELEMENTWISE),
    "numba_cpu.NUMBA_FORMS": (numba_cpu.NUMBA_FORMS, ELEMENTWISE),
    "ArrayOps.elementwise": (ArrayOps(np, "scipy.ndimage").elementwise, ALL_ELEMENTWISE),
    "tests/reference_ops.py": (REFERENCES, ALL_ELEMENTWISE),
    # partial tables: only ops that need them
    "c_source.VECTOR_FLOAT_FORMS": (c_source.VECTOR_FLOAT_FORMS, ()),
    "c_source.VECTOR_MASK_FORMS": (c_source.VECTOR_MASK_FORMS, ()),
    "c_source.FLOAT_HELPERS": (c_source.FLOAT_HELPERS, ()),
    "c_source.INT_HELPERS": (c_source.INT_HELPERS, ()),
    "c_source.UINT_HELPERS": (c_source.UINT_HELPERS, ()),
}
# builders for ops whose public function is not ``hm.<op>(inputs...)``
BUILDERS: dict[str, Callable[..., Any]] = {
    "astype": lambda t: hm.astype(t, "float64" if t.dtype != np.float64 else "int32"),
    "where": lambda t: hm.where(t > 0, t, t),
}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_table_has_every_op(table):
    entries, required = TABLES[table]
    missing = sorted(set(required) - set(entries))
    assert not missing, f"{table} has no form of {missing}"


@pytest.mark.parametrize("table", sorted(TABLES))
def test_no_table_has_an_undeclared_op(table):
    entries, _ = TABLES[table]
    unknown = sorted(op for op in entries if op not in OPS)
    assert not unknown, f"{table} has forms of {unknown}, which hermes_nb/ir/ops.py does not declare"
    wrong_kind = sorted(op for op in entries if OPS[op].kind is not Kind.ELEMENTWISE)
    assert not wrong_kind, f"{table} has forms of the non-elementwise ops {wrong_kind}"


@pytest.mark.parametrize("rows", [c_source.C_FORMS, numba_cpu.NUMBA_FORMS], ids=["c", "numba"])
def test_renderer_rows_have_a_form(rows):
    empty = sorted(op for op, row in rows.items() if not any(dataclasses.astuple(row)))
    assert not empty, f"rows without any form: {empty}"


@pytest.mark.parametrize("op", sorted(OPS))
def test_only_elementwise_ops_have_a_dtype_rule_and_an_array_form(op):
    definition = OPS[op]
    assert definition.name == op
    elementwise = definition.kind is Kind.ELEMENTWISE
    assert (definition.dtype is not None) == elementwise
    assert (definition.numpy is not None) == elementwise
    if elementwise:
        assert callable(definition.array_function(np))


def _node(op: str, dtype: str) -> Any:
    """The node the tensor layer builds for ``op`` on ``dtype`` inputs, None if it refuses."""
    arity = OPS[op].arity
    build = BUILDERS.get(op, getattr(hm, op))
    with hm.device("cpu:0"):
        args = [hm.ones((2,), dtype=dtype) for _ in range(arity if op != "where" else 1)]
        try:
            node = build(*args).node
        except TypeError:
            return None
    return node if node.op == op else None


def _program(node: Any) -> Program:
    ins = tuple(i.dtype.name for i in node.inputs)
    return Program(ins, (), (Instr(node.op, tuple(range(len(ins))), node.dtype.name),), (len(ins),))


CASES = [(op, dt, n) for op in ELEMENTWISE for dt in DTYPES if (n := _node(op, dt)) is not None]
PARAMS = [pytest.param(node, id=f"{op}-{dt}") for op, dt, node in CASES]


def test_every_op_is_built_by_the_tensor_layer():
    assert {op for op, _, _ in CASES} == set(ELEMENTWISE)


@pytest.mark.parametrize("op", ELEMENTWISE)
def test_every_op_has_a_numpy_reference(op):
    assert callable(REFERENCES.get(op)), f"{op} has no NumPy reference in tests/reference_ops.py"


@pytest.mark.parametrize("op", ELEMENTWISE)
def test_array_backend_runs_every_op(op):
    ops = ArrayOps(np, "scipy.ndimage")
    assert callable(ops.elementwise.get(op)), f"{op} has no form in ir/array_ops.py"


@pytest.mark.parametrize("renderer", [c_source.OPENCL, c_source.CUDA], ids=["opencl", "cuda"])
@pytest.mark.parametrize("node", PARAMS)
def test_c_renderers_have_every_op(renderer, node):
    source = renderer.functions(_program(node))  # a missing form is a KeyError
    assert "return v" in source


@pytest.mark.parametrize("node", PARAMS)
def test_numba_renderer_has_every_op(node):
    program = _program(node)
    assert numba_cpu.supports(program), f"numba_cpu renders no {node.op} on {program.input_dtypes}"


@pytest.mark.parametrize("op", sorted(c_source.VECTOR_FLOAT_FORMS))
def test_vector_forms_are_ops(op):
    assert OPS[op].kind is Kind.ELEMENTWISE


def test_vector_form_renders_predicates_as_masks():
    program = Program(("float32",), (), (Instr("isnan", (0,), "bool"),), (1,))
    assert c_source.vectorizable(program)
    source = c_source.OPENCL.vector_function(program, 8)
    assert "isnan(x0)" in source and "convert_uchar8(v1 & (int8)1)" in source
