"""Fused stencil kernels from the C code generator (``hermes_nb.codegen.stencil_c``).

(a) Hand-built :class:`StencilProgram`s run as one OpenCL kernel through
    ``OpenCLDevice.execute`` and match the reference interpreter
    (``ArrayOps._fused_stencil``: the stages one after another with NumPy/SciPy):
    blur + Sobel magnitude for every kernel size and border mode, batches, images
    smaller than the halo, sizes that are not multiples of the tile, float32/float64,
    several launch geometries (vector CPU tiles, scalar GPU-style groups).
(b) The public API: a blur + Sobel pipeline on ``opencl:0`` is ONE kernel.
(c) Without a GPU: the CUDA rendering compiles with ``nvcc -ptx -arch=sm_90``.
(d) Without a device: the source explain() shows; the generators import no backend.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.ndimage
from nvcc import compile_ptx, needs_nvcc

import hermes_nb as hm
from hermes_nb.codegen import stencil_c
from hermes_nb.codegen.stencil_c import StencilConfig
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec
from hermes_nb.ir.program import Instr, Program
from hermes_nb.ir.stencil import ConvStage, PointStage, StencilProgram

BORDERS = ("reflect101", "reflect", "replicate", "constant")
SHAPES = [(1, 1), (2, 3), (4, 6), (37, 150), (70, 17), (2, 3, 19, 33)]
REFERENCE = ArrayOps(np, scipy.ndimage)


def _opencl() -> Any:
    found = [d for d in hm.devices() if d.id == "opencl:0"]
    if not found:
        pytest.skip("needs opencl:0: pyopencl or an OpenCL platform (e.g. PoCL) is missing")
    return found[0]


@pytest.fixture(scope="module")
def ocl() -> Any:
    return _opencl()


# ---- programs -----------------------------------------------------------------------------


def _conv(source: int, col: tuple[float, ...], row: tuple[float, ...], border: str,
          separable: bool = True) -> ConvStage:
    weights = tuple(tuple(c * r for r in row) for c in col)
    return ConvStage(source, weights, (col, row) if separable else None, border)


def _binary(op: str, dtype: str) -> Program:
    return Program((dtype, dtype), (), (Instr(op, (0, 1), dtype),), (2,))


SOBEL_SMOOTH, SOBEL_DIFF = (1.0, 2.0, 1.0), (-1.0, 0.0, 1.0)


def blur_sobel(k: int = 5, border: str = "reflect101", dtype: str = "float32",
               separable: bool = True, sobel_borders: tuple[str, str] | None = None
               ) -> StencilProgram:
    """gaussian_blur(k) then hypot(sobel_x, sobel_y), as the stencil fusion pass builds it."""
    g = tuple(float(v) for v in hm.image.gaussian_kernel(k))
    bx, by = sobel_borders or (border, border)
    return StencilProgram((dtype,) * 5, (
        _conv(0, g, g, border, separable),
        _conv(1, SOBEL_SMOOTH, SOBEL_DIFF, bx, separable),
        _conv(1, SOBEL_DIFF, SOBEL_SMOOTH, by, separable),
        PointStage(_binary("hypot", dtype), (2, 3)),
    ))


def masked_pipeline() -> StencilProgram:
    """Pointwise stages computed on a tile (read by a later convolution), a bool value and
    literal constants: the scalar (non-vector) path, with mixed value dtypes."""
    f = "float32"
    g = tuple(float(v) for v in hm.image.gaussian_kernel(3))
    greater = Program((f,), ((0.5, f),), (Instr("greater", (0, 1), "bool"),), (2,))
    where = Program(("bool", f), ((0.0, f),), (Instr("where", (0, 1, 2), f),), (3,))
    plus = Program((f, f), (), (Instr("add", (0, 1), f),), (2,))
    return StencilProgram((f, f, "bool", f, f, f), (
        _conv(0, g, g, "reflect"),                   # v1 blur
        PointStage(greater, (1,)),                   # v2 = v1 > 0.5 (bool, on v1's tile)
        PointStage(where, (2, 1)),                   # v3 = where(v2, v1, 0) (on a tile)
        _conv(3, SOBEL_DIFF, SOBEL_SMOOTH, "constant", separable=False),  # v4
        PointStage(plus, (4, 0)),                    # v5 = v4 + input (in registers)
    ))


def two_modes_on_input() -> StencilProgram:
    """The input read in two border modes (two input tiles), one convolution non-separable."""
    f = "float32"
    return StencilProgram((f,) * 4, (
        _conv(0, SOBEL_SMOOTH, SOBEL_DIFF, "reflect"),
        _conv(0, (1.0,) * 5, (0.5, -1.0, 0.25), "constant", separable=False),
        PointStage(_binary("maximum", f), (1, 2)),
    ))


# ---- running ------------------------------------------------------------------------------


def run_both(device: Any, stencil: StencilProgram, shape: tuple[int, ...],
             config: StencilConfig | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    dtype = np.dtype(stencil.value_dtypes[0])
    if dtype == np.float64 and not device.fp64:
        pytest.skip(f"{device.id} has no float64")
    x = np.random.default_rng(seed).random(shape).astype(dtype)
    out_dtype = np.dtype(stencil.value_dtypes[-1])
    spec = OpSpec("fused_stencil", shape, out_dtype, (shape,), (dtype,), {"stencil": stencil},
                  device.id)
    if config is not None:  # pin a launch geometry (the device caches its choice per program)
        device._stencil_configs[stencil] = config
    try:
        got = device.to_host(device.execute(spec, [device.from_host(x)]))
    finally:
        if config is not None:
            device._stencil_configs.pop(stencil, None)
    return got, REFERENCE.run(spec, [x])


def check(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    # convolutions accumulate in the value dtype (fma) where the reference uses double
    tol = 2e-5 if got.dtype == np.float32 else 1e-12
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


# ---- (a) hand-built programs on opencl:0 ----------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("k", [3, 5, 7])
def test_blur_sobel_matches_reference(ocl, k, border, dtype):
    stencil = blur_sobel(k, border, dtype)
    for shape in SHAPES:
        got, want = run_both(ocl, stencil, shape)
        check(got, want)


GEOMETRIES = [
    StencilConfig(v=1, wx=32, wy=8, th=16, tw=32),  # GPU-style: scalar items, local memory shared
    StencilConfig(v=8, wx=4, wy=2, th=4, tw=64),  # vectors and several items per group
    StencilConfig(v=4, wx=1, wy=1, th=3, tw=4),  # a tile smaller than the halo
    StencilConfig(v=16, wx=1, wy=1, th=16, tw=64),  # the CPU default
]


@pytest.mark.parametrize("config", GEOMETRIES, ids=lambda c: f"v{c.v}-{c.wx}x{c.wy}-{c.th}x{c.tw}")
@pytest.mark.parametrize("name", ["mixed_borders", "non_separable", "float64_k7"])
def test_geometries(ocl, name, config):
    stencil = {
        # value 1 is read in two modes: one tile per mode, each with its own border fix-up
        "mixed_borders": blur_sobel(5, "reflect", sobel_borders=("constant", "replicate")),
        "non_separable": blur_sobel(7, "reflect101", separable=False),
        "float64_k7": blur_sobel(7, "replicate", "float64"),
    }[name]
    if stencil.value_dtypes[0] == "float64" and config.v > 8:
        config = StencilConfig(v=8, wx=config.wx, wy=config.wy, th=config.th, tw=config.tw)
    for shape in SHAPES:
        got, want = run_both(ocl, stencil, shape, config)
        check(got, want)


@pytest.mark.parametrize("maker", [masked_pipeline, two_modes_on_input])
def test_tile_pointwise_and_input_modes(ocl, maker):
    stencil = maker()
    for shape in SHAPES:
        got, want = run_both(ocl, stencil, shape)
        check(got, want)


def test_vector_geometry_on_cpu(ocl):
    """CPUs get vector work-items (PoCL vectorises float16 loads/fma); scalar programs don't."""
    cfg = ocl.stencil_config(blur_sobel())
    if ocl.capabilities.is_cpu and ocl.capabilities.vector_width("float32") >= 4:
        assert cfg.v >= 4 and cfg.wx == cfg.wy == 1
    assert ocl.stencil_config(masked_pipeline()).v == 1
    source = stencil_c.opencl_stencil_source(blur_sobel(), cfg)
    assert source.count("__kernel") == 1 and "__local" in source


def test_too_big_for_local_memory_falls_back(ocl, monkeypatch):
    """A program whose tiles cannot fit runs its stages one by one, with the same values."""
    stencil = blur_sobel(7, "reflect")
    monkeypatch.setattr(stencil_c, "local_bytes", lambda *a: 1 << 60)
    ocl._stencil_configs.pop(stencil, None)
    try:
        assert ocl.stencil_config(stencil) is None
        got, want = run_both(ocl, stencil, (2, 21, 30))
    finally:
        ocl._stencil_configs.pop(stencil, None)
    check(got, want)


def test_layout_halo():
    """The input tile reaches exactly ``stencil.halo()`` beyond the output tile."""
    for k in (3, 5, 7):
        st = blur_sobel(k)
        lay = stencil_c.layout(st, StencilConfig(v=1, wx=1, wy=1, th=8, tw=8))
        t0 = lay.tiles[0]
        assert (t0.top, t0.left) == st.halo()
        assert t0.rows == 8 + 2 * st.halo()[0] and t0.cols == 8 + 2 * st.halo()[1]
        assert set(lay.tiles) == {0, 1}  # the Sobels and hypot stay in registers


# ---- (b) the public API ---------------------------------------------------------------------


@pytest.mark.parametrize("border", BORDERS)
def test_pipeline_is_one_kernel(ocl, border):
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5, border=border),
                          hm.sobel_edge_detection(border=border))
    x = np.random.default_rng(1).random((2, 45, 70)).astype(np.float32)
    with hm.device(ocl.id):
        t = pipeline(hm.asarray(x))
    plan = t.explain()
    assert len(plan.kernels) == 1, plan
    (kernel,) = plan.kernels
    assert kernel.device == ocl.id
    assert kernel.source is not None and "fused_stencil" in kernel.source
    got = t.numpy()
    with hm.options(fuse=False):
        with hm.device(ocl.id):
            t2 = pipeline(hm.asarray(x))
        assert len(t2.explain().kernels) > 1
        check(got, t2.numpy())


# ---- (c) CUDA ---------------------------------------------------------------------------------


def _cuda_programs() -> list[StencilProgram]:
    return [
        blur_sobel(5),
        blur_sobel(7, "constant", "float64"),
        blur_sobel(3, "reflect", sobel_borders=("replicate", "constant")),
        blur_sobel(5, "reflect101", separable=False),
        masked_pipeline(),
        two_modes_on_input(),
    ]


def test_cuda_source_shape():
    for st in _cuda_programs():
        src = stencil_c.cuda_stencil_source(st)
        assert 'extern "C" __global__' in src and "__shared__" in src
        assert stencil_c.local_bytes(st, stencil_c.CUDA_CONFIG) <= 48 * 1024


@needs_nvcc
def test_cuda_source_compiles(tmp_path):
    programs = _cuda_programs()
    # one translation unit: each program in a namespace of its own, kernels renamed
    units = [
        f"namespace p{k} {{\n"
        + stencil_c.cuda_stencil_source(st).replace("fused_stencil(", f"fused_stencil_{k}(")
        + "}\n"
        for k, st in enumerate(programs)
    ]
    ptx = compile_ptx("\n".join(units), tmp_path, "stencil")
    for k in range(len(programs)):
        assert f".entry fused_stencil_{k}(" in ptx


# ---- (d) without a device -------------------------------------------------------------------


def test_render_source_without_the_device():
    """explain() for a device not on this machine: CUDA's source, or OpenCL's in the
    geometry of a CPU device (the generator asks no device)."""
    st = blur_sobel()
    cpu_geometry = stencil_c.opencl_config("float32", 16, True)
    assert stencil_c.render_source(st, "opencl:99") == stencil_c.opencl_stencil_source(st, cpu_geometry)
    assert stencil_c.render_source(st, "cuda:3") == stencil_c.cuda_stencil_source(st)
    with pytest.raises(ValueError, match="no C source"):
        stencil_c.render_source(st, "cpu:0")


def test_stencil_generators_import_no_backend():
    folder = Path(stencil_c.__file__).parent
    for name in ("stencil_c", "stencil_dialect", "stencil_layout", "numba_stencil"):
        tree = ast.parse((folder / f"{name}.py").read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m.startswith("hermes_nb.backends")], name
