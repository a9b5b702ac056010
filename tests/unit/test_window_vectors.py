"""cpu:0's conv kernels (hermes_nb/codegen/numba_window.py) vectorise their loops at the
CPU's full width: 512-bit FMAs where it has AVX-512, which LLVM's tuning for Intel's cores
would otherwise cap at 256 bits."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("numba", reason="cpu:0's generated kernels need numba")

import numba

from benchmarks.machine import vector_extensions
from hermes_nb.codegen import numba_window
from hermes_nb.codegen.numba_support import numba_array


def _compiled_conv(in_channels: int) -> str:
    """The assembly of a 3 x 3 conv kernel, 4 output channels a job, compiled here from the
    generated source (Numba shows no assembly of cached code)."""
    shape = numba_window.WindowShape((3, 3), (1, 1), (1, 1), "float32", 4, in_channels)
    source = numba_window.render_conv(shape).replace("cache=True", "cache=False")
    namespace: dict = {}
    exec(compile(source, "<conv kernel>", "exec"), namespace)
    kernel = namespace["kernel"]
    array4 = numba.types.Array(numba.float32, 4, "C", readonly=True)
    kernel.compile((array4, array4, numba.types.Array(numba.float32, 4, "C"),
                    numba_array("float32", False), *(numba.int64,) * 6))
    return "\n".join(kernel.inspect_asm().values())


@pytest.mark.skipif("avx512f" not in vector_extensions(), reason="needs a CPU with AVX-512")
@pytest.mark.parametrize("in_channels", [0, 3], ids=["channel-loop", "all-channels"])
def test_conv_loops_use_512_bit_fmas(in_channels: int) -> None:
    asm = _compiled_conv(in_channels)
    assert re.search(r"vfmadd\w*\s[^\n]*%zmm", asm), "no 16-lane fma in the conv loop"


@pytest.mark.parametrize("in_channels", [0, 3], ids=["channel-loop", "all-channels"])
def test_conv_kernel_source_runs(in_channels: int) -> None:
    """Both accumulations give the direct convolution's values (a no-padding, one-image
    check of the source the test above compiles)."""
    rng = np.random.default_rng(in_channels)
    x = rng.normal(size=(2, 3, 6, 7)).astype(np.float32)
    w = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    shape = numba_window.WindowShape((3, 3), (1, 1), (1, 1), "float32", 4, in_channels)
    namespace: dict = {}
    exec(compile(numba_window.render_conv(shape).replace("cache=True", "cache=False"),
                 "<conv kernel>", "exec"), namespace)
    out = np.empty((2, 4, 4, 5), np.float32)
    hq, wq = 6, 7
    xq = np.zeros(numba_window.scratch_size(shape, 3, 2, hq, wq), np.float32)
    namespace["kernel"](x, w, out, xq, 1, 0, 0, hq, wq, 1)
    expected = np.zeros_like(out)
    for i in range(3):
        for j in range(3):
            expected += np.einsum("nchw,mc->nmhw", x[:, :, i:i + 4, j:j + 5], w[:, :, i, j])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("strides", "dilations", "expected"), [
    ((1, 1), (1, 1), ((0,), (0,))),
    ((2, 2), (1, 1), ((0, 1), (0, 1))),
    ((2, 2), (2, 2), ((0,), (0,))),  # dilated by the stride: one phase of four
    ((4, 2), (2, 1), ((0, 2), (0, 1))),
    ((3, 3), (2, 2), ((0, 1, 2), (0, 1, 2))),  # 0, 2, 4: every phase of three
])
def test_read_phases_are_the_taps_phases(strides: tuple[int, int], dilations: tuple[int, int],
                                         expected: tuple) -> None:
    shape = numba_window.WindowShape((3, 3), strides, dilations, "float32")
    assert numba_window.read_phases(shape) == expected


def test_phases_no_tap_reads_are_not_copied() -> None:
    """A dilation-2, stride-2 window's scratch: only phase (0, 0) is written."""
    shape = numba_window.WindowShape((3, 3), (2, 2), (2, 2), "float32", 4)
    source = numba_window.render_conv(shape)
    assert "if hp % 2 != 0:" in source
    assert "xq[row + 0 * G" in source and "xq[row + 1 * G" not in source


@pytest.mark.parametrize("kernel, in_channels, channels, fits", [
    ((1, 1), 3, 4, True), ((1, 1), 4, 4, True), ((1, 1), 8, 4, False),
    ((3, 3), 3, 4, False), ((3, 3), 2, 1, True), ((3, 3), 3, 1, False),
])
def test_one_loop_reads_every_input_channel_where_its_weights_fit_registers(
        kernel: tuple[int, int], in_channels: int, channels: int, fits: bool) -> None:
    """The one-loop accumulation only where its weights stay in registers: a first layer's
    3 x 3 taps of 3 colours for 4 channels (108 weights) reload a weight at every
    multiply-add, and run faster a channel at a time."""
    assert numba_window.all_channels_fit(kernel, in_channels, channels) is fits
