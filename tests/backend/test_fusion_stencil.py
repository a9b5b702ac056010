"""Stencil fusion: blur + Sobel (+ pointwise maths) as one ``fused_stencil`` kernel, on
every device, against the unfused path and scipy.ndimage; and the Numba stencil
generator against the reference interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import ndimage

import hermes_nb as hm
from hermes_nb.compiler import optimize
from hermes_nb.ir.node import OpSpec, toposort
from hermes_nb.ir.program import Instr, Program
from hermes_nb.ir.stencil import ConvStage, PointStage, StencilProgram

BORDERS = ["reflect101", "reflect", "replicate", "constant"]
SCIPY_MODE = {"reflect101": "mirror", "reflect": "reflect", "replicate": "nearest",
              "constant": "constant"}
SOBEL_X = np.outer([1.0, 2.0, 1.0], [-1.0, 0.0, 1.0])


@pytest.fixture
def jit_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run cpu fused stencils through Numba at every size (tiny images included)."""
    from hermes_nb.backends.cpu import device as cpu

    monkeypatch.setattr(cpu, "STENCIL_MIN_ELEMENTS", 0)


def edges(k: int, border: str = "reflect101") -> hm.image.Pipeline:
    return hm.compose(hm.gaussian_blur(kernel_size=k, border=border),
                      hm.sobel_edge_detection(border=border))


def scipy_edges(x: np.ndarray, k: int, border: str) -> np.ndarray:
    """The pipeline in float64 with scipy.ndimage over the last two axes."""
    mode = SCIPY_MODE[border]
    g = hm.image.gaussian_kernel(k)
    b = ndimage.correlate1d(ndimage.correlate1d(x.astype(np.float64), g, axis=-2, mode=mode),
                            g, axis=-1, mode=mode)
    lead = (1,) * (x.ndim - 2)
    gx = ndimage.correlate(b, SOBEL_X.reshape((*lead, 3, 3)), mode=mode)
    gy = ndimage.correlate(b, SOBEL_X.T.reshape((*lead, 3, 3)), mode=mode)
    return np.hypot(gx, gy)


def assert_matches(got: np.ndarray, ref: np.ndarray, dtype: Any, rtol: float | None = None
                   ) -> None:
    """Within float rounding, relative to the largest magnitude."""
    assert got.dtype == np.dtype(dtype) and got.shape == ref.shape
    scale = max(float(np.max(np.abs(ref))), 1e-30) if ref.size else 1.0
    if rtol is None:
        rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    assert err <= rtol * scale, f"max error {err} > {rtol} * {scale}"


def kernels_of(device: Any, fn: Any, x: np.ndarray) -> list[Any]:
    with hm.device(device):
        return fn(hm.asarray(x)).explain().kernels


def unfused(device: Any, run_on: Any, fn: Any, x: np.ndarray) -> np.ndarray:
    with hm.options(fuse=False):
        return run_on(device, fn, x)


# ---- whole pipelines on every device -------------------------------------------------------
@pytest.mark.parametrize("k", [3, 5, 7])
def test_blur_sobel_is_one_kernel(device: Any, run_on: Any, sample: Any, k: int) -> None:
    x = sample((70, 90), "float32", low=0, high=1, seed=k)
    pipeline = edges(k)
    if "fused_stencil" in device.fused_ops:
        (kernel,) = kernels_of(device, pipeline, x)
        assert kernel.ops == ("conv2d", "conv2d", "conv2d", "hypot")
    got = run_on(device, pipeline, x)
    assert_matches(got, scipy_edges(x, k, "reflect101"), "float32")
    assert_matches(got, unfused(device, run_on, pipeline, x).astype(np.float64), "float32")


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (4, 4), (37, 53), (2, 3, 9, 7)],
                         ids=lambda s: "x".join(map(str, s)))
def test_borders_and_shapes(device: Any, run_on: Any, sample: Any, jit_everywhere: None,
                            border: str, shape: tuple[int, ...]) -> None:
    x = sample(shape, "float32", low=0, high=1, seed=len(shape))
    pipeline = edges(5, border)
    got = run_on(device, pipeline, x)
    assert_matches(got, scipy_edges(x, 5, border), "float32")
    assert_matches(got, unfused(device, run_on, pipeline, x).astype(np.float64), "float32")


def test_float64(device: Any, run_on: Any, sample: Any, jit_everywhere: None) -> None:
    x = sample((2, 3, 33, 40), "float64", low=-1, high=1)
    got = run_on(device, edges(7, "reflect"), x)
    assert_matches(got, scipy_edges(x, 7, "reflect"), "float64")


def test_large_image_in_parallel_tasks(device: Any, run_on: Any, sample: Any) -> None:
    # big enough for the cpu kernel's thread pool and several row tasks per image
    x = sample((3, 515, 301), "float32", low=0, high=1)
    got = run_on(device, edges(5), x)
    assert_matches(got, scipy_edges(x, 5, "reflect101"), "float32")


def test_threshold_fuses_too(device: Any, run_on: Any, sample: Any, jit_everywhere: None) -> None:
    x = sample((41, 67), "float32", low=0, high=1, seed=3)

    def binary(img: hm.Tensor) -> hm.Tensor:
        mag = edges(5)(img)
        return hm.where(mag > 0.5, 1.0, 0.0)

    if "fused_stencil" in device.fused_ops:
        assert len(kernels_of(device, binary, x)) == 1
    got = run_on(device, binary, x)
    mag = scipy_edges(x, 5, "reflect101")
    near = np.abs(mag - 0.5) < 1e-5  # float32 rounding may fall either way there
    expected = np.where(mag > 0.5, 1.0, 0.0).astype(got.dtype)
    np.testing.assert_array_equal(got[~near], expected[~near])


def test_requested_blur_is_kept(device: Any, sample: Any, jit_everywhere: None) -> None:
    x = sample((30, 44), "float32", low=0, high=1)
    with hm.device(device):
        blurred = hm.gaussian_blur(hm.asarray(x), kernel_size=5)
        mag = hm.sobel_edge_detection(blurred)
    b, m = hm.compute(blurred, mag)
    g = hm.image.gaussian_kernel(5)
    ref_b = ndimage.correlate1d(ndimage.correlate1d(x.astype(np.float64), g, axis=0, mode="mirror"),
                                g, axis=1, mode="mirror")
    assert_matches(b.numpy(), ref_b, "float32")
    assert_matches(m.numpy(), scipy_edges(x, 5, "reflect101"), "float32")
    if "fused_stencil" in device.fused_ops:
        new_b, new_m = optimize([blurred.node, mag.node])
        assert new_m.op == "fused_stencil" and new_m.inputs == (new_b,)
        assert new_m.attrs["stencil"].ops == ("conv2d", "conv2d", "hypot")


# ---- the pass --------------------------------------------------------------------------------
def _ops(nodes: list[Any]) -> list[str]:
    return [n.op for n in toposort(nodes) if n.op not in ("constant", "buffer")]


def test_pass_takes_one_image_only() -> None:
    a = hm.asarray(np.ones((16, 16), np.float32))
    b = hm.asarray(np.ones((16, 16), np.float32))
    (out,) = optimize([(hm.gaussian_blur(a) + b).node])
    assert _ops([out]) == ["fused_stencil", "add"]  # add: two images; left to fuse_elementwise
    (out,) = optimize([hm.gaussian_blur(a * b).node])
    assert _ops([out]) == ["multiply", "fused_stencil"]


def test_pass_unsharp_mask_and_int_image(run_on: Any, jit_everywhere: None) -> None:
    x = np.arange(12 * 15, dtype=np.int32).reshape(12, 15) % 7

    def sharpen(img: hm.Tensor) -> hm.Tensor:  # the integer image is cast inside
        f = img.astype("float32")
        return f + (f - hm.gaussian_blur(f, kernel_size=3)) * 1.5

    (out,) = optimize([sharpen(hm.asarray(x)).node])
    assert _ops([out]) == ["fused_stencil"]
    assert out.attrs["stencil"].value_dtypes[0] == "int32"
    got = run_on("cpu:0", sharpen, x)
    f = x.astype(np.float64)
    g = hm.image.gaussian_kernel(3)
    blur = ndimage.correlate1d(ndimage.correlate1d(f, g, axis=0, mode="mirror"), g, axis=1,
                               mode="mirror")
    assert_matches(got, f + (f - blur) * 1.5, "float32")


def test_explain_shows_cpu_source() -> None:
    x = np.zeros((300, 300), np.float32)  # above cpu:0's JIT size: Numba runs it
    with hm.device("cpu:0"):
        (kernel,) = edges(5)(hm.asarray(x)).explain().kernels
    assert kernel.source is not None and "def kernel(out, img, " in kernel.source
    with hm.device("cpu:0"):
        (small,) = edges(5)(hm.asarray(x[:8, :8])).explain().kernels
    assert small.source is None  # NumPy runs it stage by stage: nothing generated


# ---- the Numba generator against the interpreter ----------------------------------------------
numba_stencil = pytest.importorskip("hermes_nb.codegen.numba_stencil",
                                    reason="the cpu:0 stencil kernels need numba")
from hermes_nb.backends.cpu import stencil as cpu_stencil  # noqa: E402 (needs numba, checked above)


def _interpret(stencil: StencilProgram, x: np.ndarray) -> np.ndarray:
    from hermes_nb.ir.array_ops import ArrayOps

    spec = OpSpec("fused_stencil", x.shape, np.dtype(stencil.value_dtypes[-1]), (x.shape,),
                  (x.dtype,), {"stencil": stencil}, "cpu:0")
    return ArrayOps(np, ndimage).run(spec, [x])


def _mixed() -> StencilProgram:
    """Borders differing per stage, a non-separable conv, a float64 detour, a bool."""
    laplace = ((0.0, 1.0, 0.0), (1.0, -4.0, 1.0), (0.0, 1.0, 0.0))
    box = tuple(tuple(1 / 15 for _ in range(5)) for _ in range(3))
    to64 = Program(("float32",), ((2.0, "float64"),),
                   (Instr("astype", (0,), "float64"), Instr("multiply", (2, 1), "float64")), (3,))
    mix = Program(("float64", "float32"), ((0.0, "float64"),),
                  (Instr("astype", (1,), "float64"), Instr("greater", (3, 2), "bool"),
                   Instr("where", (4, 0, 3), "float64")), (5,))
    return StencilProgram(
        ("float32", "float32", "float64", "float64", "float64"),
        (ConvStage(0, laplace, None, "constant"),
         PointStage(to64, (1,)),
         ConvStage(2, box, ((1 / 3,) * 3, (1 / 5,) * 5), "reflect"),
         PointStage(mix, (3, 0))))


@pytest.mark.parametrize("shape", [(1, 1), (1, 6), (5, 1), (3, 4), (64, 48), (4, 300, 200)],
                         ids=lambda s: "x".join(map(str, s)))
def test_generator_matches_interpreter(shape: tuple[int, ...], sample: Any) -> None:
    stencil = _mixed()
    x = sample(shape, "float32", low=-1, high=1)
    out = np.empty(shape, np.float64)
    cpu_stencil.launch(stencil, x, out)
    ref = _interpret(stencil, x)
    assert_matches(out, ref.astype(np.float64), "float64", rtol=1e-5)  # a float32 stage first


def test_generator_hypot_specials() -> None:
    ident = ((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 0.0))
    shift = ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 0.0))  # out[y, x] = in[y, x - 1]
    hyp = Program(("float32", "float32"), (), (Instr("hypot", (0, 1), "float32"),), (2,))
    stencil = StencilProgram(("float32",) * 4, (
        ConvStage(0, ident, None, "replicate"), ConvStage(0, shift, None, "reflect"),
        PointStage(hyp, (1, 2))))
    x = np.array([[3e38, np.inf, -np.inf, np.nan, 1e-45, 0.0, -3.0, 1e-30, 2e20]], np.float32)
    x = np.concatenate([x, x[:, ::-1]])
    out = np.empty_like(x)
    cpu_stencil.launch(stencil, x, out)
    # the interpreter runs np.hypot, i.e. hypotf: equal, specials and overflow included
    np.testing.assert_array_equal(out, _interpret(stencil, x))
    assert np.isinf(out[0, 1:4]).all() and out[0, 0] == np.inf  # hypot(inf, nan) is inf


def test_output_pool_never_reuses_a_live_result(sample: Any) -> None:
    pipeline = edges(3)
    x1 = sample((1100, 1000), "float32", low=0, high=1, seed=1)
    x2 = sample((1100, 1000), "float32", low=0, high=1, seed=2)
    with hm.device("cpu:0"):
        (r1,) = hm.compute(pipeline(hm.asarray(x1)))
        first = r1.numpy()
        view = first[10:20]
        del first
        (r2,) = hm.compute(pipeline(hm.asarray(x2)))
        (r3,) = hm.compute(pipeline(hm.asarray(x2)))
    assert_matches(r1.numpy(), scipy_edges(x1, 3, "reflect101"), "float32")
    assert_matches(view, scipy_edges(x1, 3, "reflect101")[10:20], "float32")
    assert_matches(r2.numpy(), scipy_edges(x2, 3, "reflect101"), "float32")
    assert np.shares_memory(r2.numpy(), r3.numpy()) is False
