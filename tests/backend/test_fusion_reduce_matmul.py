"""Reduction fusion (prologue + reduction + epilogue in one kernel) and matmul epilogue
fusion, on every device: kernel counts from ``explain()``, values against NumPy and
against the unfused path (``hm.options(fuse=False)``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from nvcc import compile_ptx, needs_nvcc

import hermes_nb as hm
from hermes_nb.backends.cpu import device as cpu
from hermes_nb.codegen import c_fused
from hermes_nb.compiler import optimize
from hermes_nb.ir.program import Program


@pytest.fixture
def jit_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small arrays take cpu:0's Numba kernels too (not only its NumPy interpreter)."""
    monkeypatch.setattr(cpu, "JIT_MIN_ELEMENTS", 1)


def _build(device: Any, fn: Callable[..., hm.Tensor], arrays: list[np.ndarray]) -> hm.Tensor:
    with hm.device(device):
        return fn(*[hm.asarray(a) for a in arrays])


def _check(device: Any, fn: Callable[..., hm.Tensor], arrays: list[np.ndarray],
           np_fn: Callable[..., np.ndarray], assert_close: Callable[..., None],
           loose: bool = True, atol: float | None = None) -> hm.Plan:
    """Value equals NumPy's and the unfused path's; returns the fused plan."""
    if not device.fp64 and any(a.dtype == np.float64 for a in arrays):
        pytest.skip(f"{device.id} has no fp64")
    out = _build(device, fn, arrays)
    plan = out.explain()
    got = out.numpy()
    with np.errstate(all="ignore"):
        expected = np.asarray(np_fn(*arrays))
    assert_close(got, expected, loose=loose, atol=atol)
    with hm.options(fuse=False):
        unfused = _build(device, fn, arrays).numpy()
    assert_close(got, unfused, loose=loose, atol=atol)
    return plan


def _fuses(device: Any, op: str) -> bool:
    return op in device.fused_ops


def test_w4_is_one_kernel(device: Any, sample: Any, assert_close: Any) -> None:
    a, b = sample((64, 300), "float32", seed=1), sample((64, 300), "float32", seed=2)
    plan = _check(device, lambda x, y: ((x * y) ** 2).sum(axis=1), [a, b],
                  lambda x, y: ((x * y) ** 2).sum(axis=1), assert_close)
    if _fuses(device, "fused_reduce"):
        assert len(plan.kernels) == 1, plan
        assert plan.kernels[0].ops == ("multiply", "pow", "sum"), plan
        if device.kind == "opencl":
            assert plan.kernels[0].source, "explain() shows the generated source"
        if device.kind == "cpu":  # below the JIT size NumPy runs it: nothing generated
            assert plan.kernels[0].source is None


def test_w4_large_jit_path(device: Any, sample: Any, assert_close: Any) -> None:
    a, b = sample((512, 1000), "float32", seed=3), sample((512, 1000), "float32", seed=4)
    _check(device, lambda x, y: ((x * y) ** 2).sum(axis=1), [a, b],
           lambda x, y: ((x * y) ** 2).sum(axis=1), assert_close)


AXES = [0, 1, 2, -1, (0, 2), (1, 2), (0, 1), None]


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_with_broadcast_prologue(device: Any, op: str, axis: Any, keepdims: bool,
                                            sample: Any, assert_close: Any,
                                            jit_always: None) -> None:
    x = sample((6, 5, 7), "float32", low=0.5, high=1.5, seed=5)
    y = sample((5, 1), "float32", low=0.5, high=1.5, seed=6)  # broadcasts over axes 0, 2

    def fn(a: Any, b: Any) -> Any:
        return getattr(a * b + 0.25, op)(axis=axis, keepdims=keepdims)

    def ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return getattr(np, op)(a * b + np.float32(0.25), axis=axis, keepdims=keepdims)

    plan = _check(device, fn, [x, y], ref, assert_close)
    if _fuses(device, "fused_reduce"):
        assert len(plan.kernels) == 1, plan


@pytest.mark.parametrize("axis", [0, 1, None], ids=str)
def test_int32_accumulates_in_int64(device: Any, axis: Any, sample: Any, assert_close: Any,
                                    jit_always: None) -> None:
    big = np.full((40, 30), 2**30, np.int32)  # sums overflow int32, not int64
    i = sample((40, 30), "int32", seed=7)
    plan = _check(device, lambda a, b: (a + b).sum(axis=axis), [big, i],
                  lambda a, b: (a + b).sum(axis=axis), assert_close)
    if _fuses(device, "fused_reduce"):
        assert len(plan.kernels) == 1, plan
    # prod of int64 wraps like NumPy; max/min of int32 stay int32
    _check(device, lambda a: (a * 3).prod(axis=axis), [i],
           lambda a: (a * 3).prod(axis=axis), assert_close)
    _check(device, lambda a: (a - 1).max(axis=axis), [i],
           lambda a: (a - 1).max(axis=axis), assert_close)


def test_bool_inputs(device: Any, sample: Any, assert_close: Any, jit_always: None) -> None:
    b, c = sample((30, 20), "bool", seed=8), sample((30, 20), "bool", seed=9)
    _check(device, lambda x, y: (x & y).sum(axis=1), [b, c],
           lambda x, y: (x & y).sum(axis=1), assert_close)
    _check(device, lambda x, y: (x | y).max(axis=0), [b, c],
           lambda x, y: (x | y).max(axis=0), assert_close)


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_nan_and_inf(device: Any, op: str, sample: Any, assert_close: Any,
                     jit_always: None) -> None:
    x = sample((8, 300), "float32", seed=10)
    x[1, 7] = np.nan
    x[2, 3] = np.inf
    x[3, 5] = -np.inf
    x[4, :] = np.inf
    x[5, 9] = np.inf
    x[5, 10] = -np.inf  # inf - inf: NaN in a sum
    _check(device, lambda a: getattr(a * 2.0, op)(axis=1), [x],
           lambda a: getattr(np, op)(a * np.float32(2), axis=1), assert_close)
    _check(device, lambda a: getattr(a * 2.0, op)(axis=0), [x],
           lambda a: getattr(np, op)(a * np.float32(2), axis=0), assert_close)


@pytest.mark.parametrize("shape,axis", [((0, 5), 1), ((3, 0), 1), ((0, 4), 0), ((3, 0, 2), None)])
def test_zero_size(device: Any, shape: tuple[int, ...], axis: Any, assert_close: Any,
                   jit_always: None) -> None:
    x = np.ones(shape, np.float32)
    _check(device, lambda a: (a * 2.0).sum(axis=axis) + 1.0, [x],
           lambda a: (a * np.float32(2)).sum(axis=axis) + np.float32(1), assert_close)
    _check(device, lambda a: (a + 1.0).prod(axis=axis), [x],
           lambda a: (a + np.float32(1)).prod(axis=axis), assert_close)
    if x.size or (axis is not None and shape[axis] != 0):
        _check(device, lambda a: (a - 1.0).max(axis=axis), [x],
               lambda a: (a - np.float32(1)).max(axis=axis), assert_close)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_epilogue_and_composites(device: Any, dtype: str, sample: Any, assert_close: Any,
                                 jit_always: None) -> None:
    x = sample((50, 70), dtype, seed=11)
    n = np.asarray(3.0, dtype)
    plan = _check(device, lambda a: a.sum(axis=1) / 70, [x], lambda a: a.sum(axis=1) / 70,
                  assert_close)
    if _fuses(device, "fused_reduce"):
        assert len(plan.kernels) == 1 and plan.kernels[0].ops == ("sum", "divide"), plan
    # an epilogue input of the output's shape, and one broadcast from fewer dims
    w = sample((50,), dtype, seed=12)
    _check(device, lambda a, b: hm.sqrt(hm.abs((a * a).sum(axis=1, keepdims=True) - b[:, None])),
           [x, w], lambda a, b: np.sqrt(np.abs((a * a).sum(axis=1, keepdims=True) - b[:, None])),
           assert_close)
    for axis in (0, 1, None):
        plan = _check(device, lambda a, ax=axis: hm.mean(a * 2.0, axis=ax), [x],
                      lambda a, ax=axis: np.mean(a * 2.0, axis=ax), assert_close)
        _check(device, lambda a, ax=axis: hm.var(a, axis=ax), [x],
               lambda a, ax=axis: np.var(a, axis=ax), assert_close)
        plan = _check(device, lambda a, ax=axis: hm.std(a, axis=ax, correction=1), [x],
                      lambda a, ax=axis: np.std(a, axis=ax, ddof=1), assert_close)
        if _fuses(device, "fused_reduce"):
            assert len(plan.kernels) == 2, plan  # mean, then centred squares + / + sqrt
    del n


def test_requested_outputs_are_not_swallowed(device: Any, sample: Any,
                                             assert_close: Any) -> None:
    x = sample((20, 30), "float32", seed=13)
    with hm.device(device):
        t = hm.asarray(x)
        prod = t * 2.0
        total = prod.sum(axis=1)
        scaled = total / 4.0
        got = hm.compute(prod, total, scaled)
    assert_close(np.asarray(got[0].numpy()), x * np.float32(2))
    assert_close(np.asarray(got[1].numpy()), (x * np.float32(2)).sum(axis=1), loose=True)
    assert_close(np.asarray(got[2].numpy()), (x * np.float32(2)).sum(axis=1) / np.float32(4),
                 loose=True)
    graph = optimize([prod.node, total.node, scaled.node])
    assert graph[0].op != "fused_reduce" and graph[1].op in ("sum", "fused_reduce")


def test_argmax_stays_correct(device: Any, sample: Any, assert_close: Any) -> None:
    x = sample((30, 40), "float32", seed=14)
    _check(device, lambda a: hm.argmax(a * a, axis=1), [x], lambda a: np.argmax(a * a, axis=1),
           assert_close)


# ---- matmul epilogues ---------------------------------------------------------------------

def _matmul_kernels(plan: hm.Plan) -> int:
    return sum(1 for k in plan.kernels if "matmul" in k.ops)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_relu_matmul_bias_is_matmul_plus_one_epilogue(device: Any, dtype: str, sample: Any,
                                                     assert_close: Any, jit_always: None
                                                     ) -> None:
    a, b = sample((33, 20), dtype, seed=15), sample((20, 17), dtype, seed=16)
    bias = sample((17,), dtype, seed=17)
    plan = _check(device, lambda x, y, z: hm.relu(x @ y + z), [a, b, bias],
                  lambda x, y, z: np.maximum(x @ y + z, 0), assert_close)
    assert _matmul_kernels(plan) == 1
    if _fuses(device, "fused_matmul"):
        assert len(plan.kernels) == 1, plan  # the matmul with its epilogue
        assert plan.kernels[0].ops == ("matmul", "add", "relu"), plan
    else:  # matmul, then add and relu fused where the device fuses elementwise ops
        assert len(plan.kernels) <= (2 if _fuses(device, "fused_elementwise") else 3), plan


def test_batched_matmul_broadcast_bias(device: Any, sample: Any, assert_close: Any,
                                       jit_always: None) -> None:
    a = sample((3, 1, 12, 10), "float32", seed=18)
    b = sample((4, 10, 9), "float32", seed=19)
    bias = sample((4, 1, 9), "float32", seed=20)
    scale = sample((12, 1), "float32", seed=21)
    plan = _check(device, lambda x, y, z, s: hm.relu(x @ y + z) * s, [a, b, bias, scale],
                  lambda x, y, z, s: np.maximum(x @ y + z, 0) * s, assert_close)
    if _fuses(device, "fused_matmul"):
        assert len(plan.kernels) == 1, plan


def test_matmul_epilogue_dtype_change_and_output(device: Any, sample: Any, assert_close: Any,
                                                 jit_always: None) -> None:
    a, b = sample((16, 8), "int32", seed=22), sample((8, 5), "int32", seed=23)
    _check(device, lambda x, y: (x @ y) > 3, [a, b], lambda x, y: (x @ y) > 3, assert_close)
    with hm.device(device):
        x, y = hm.asarray(a), hm.asarray(b)
        mm = x @ y
        got = hm.compute(mm, mm + 1)  # the product is requested: it stays a value
    assert_close(np.asarray(got[0].numpy()), a @ b)
    assert_close(np.asarray(got[1].numpy()), a @ b + 1)


def test_large_w3_shape(device: Any, sample: Any, assert_close: Any) -> None:
    # positive data: no cancellation, so BLAS and tiled kernels agree to float rounding
    a = sample((300, 256), "float32", low=0, high=1, seed=24)
    b = sample((256, 300), "float32", low=0, high=1, seed=25)
    bias = sample((300,), "float32", low=-80, high=0, seed=26)
    # products ~64 minus the bias: absolute error of the product's rounding
    _check(device, lambda x, y, z: hm.relu(x @ y + z), [a, b, bias],
           lambda x, y, z: np.maximum(x @ y + z, 0), assert_close, atol=1e-3)


# ---- CUDA sources -------------------------------------------------------------------------

def _programs() -> list[tuple[Program, Program | None, str, str]]:
    pro = Program(("float32", "float32"), ((2.0, "float32"),),
                  (c_fused_instr("multiply", (0, 1), "float32"),
                   c_fused_instr("pow", (3, 2), "float32")), (4,))
    epi = Program(("float32",), ((4.0, "float32"),),
                  (c_fused_instr("divide", (0, 1), "float32"),
                   c_fused_instr("sqrt", (2,), "float32")), (3,))
    ipro = Program(("int32",), (), (c_fused_instr("astype", (0,), "int64"),), (1,))
    bpro = Program(("bool", "bool"), (), (c_fused_instr("logical_and", (0, 1), "bool"),), (2,))
    return [(pro, None, "sum", "float32"), (pro, epi, "max", "float32"),
            (pro, epi, "min", "float32"), (ipro, None, "prod", "int64"),
            (ipro, None, "sum", "int64"), (bpro, None, "max", "bool")]


def c_fused_instr(op: str, args: tuple[int, ...], dtype: str) -> Any:
    from hermes_nb.ir.program import Instr

    return Instr(op, args, dtype)


@needs_nvcc
def test_cuda_sources_compile_with_nvcc(tmp_path: Path) -> None:
    sources = [c_fused.cuda_reduce_source(*p) for p in _programs()]
    epi = Program(("float32", "float32"), (),
                  (c_fused_instr("add", (0, 1), "float32"),
                   c_fused_instr("relu", (2,), "float32")), (3,))
    sources.append(c_fused.cuda_matmul_epilogue_source(epi))
    for k, source in enumerate(sources):
        compile_ptx(source, tmp_path, f"k{k}")


def test_opencl_and_numba_sources_render() -> None:
    for pro, epi, op, acc in _programs():
        src = c_fused.opencl_reduce_source(pro, epi, op, acc, True, "", "", 0, True)
        assert "__kernel void fred(" in src
    attrs = {"prologue": _programs()[0][0], "epilogue": None, "reduce": "sum",
             "reduce_dtype": "float32"}
    pytest.importorskip("numba")
    from hermes_nb.codegen import numba_reduce

    assert "def kernel(" in numba_reduce.render(attrs, ("rows", ("i", "o"), ()))
    assert "def kernel(" in numba_reduce.render(attrs, ("cols", ("i", "i"), ()))
