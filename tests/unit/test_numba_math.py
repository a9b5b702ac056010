"""cpu:0's vectorised float32 math (hermes_nb/codegen/numba_math.py) against NumPy over the
whole float32 range: every k-th bit pattern (subnormals, both signs) and the special values.
Each function's max error against the float64 result is at most NumPy's own float32 error on
the same inputs, or 2 ulp where NumPy's is smaller; special values are NumPy's exactly; and the
compiled loop is AVX-512 code without a libm call."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("numba", reason="cpu:0's generated kernels need numba")

import hermes_nb as hm
from benchmarks.machine import vector_extensions
from hermes_nb.backends.cpu.device import JIT_MIN_ELEMENTS
from hermes_nb.codegen import numba_cpu
from hermes_nb.codegen.numba_support import numba_array
from hermes_nb.ir.program import Instr, Program

FUNCTIONS = ("exp", "log", "log2", "log10", "tanh")
STEP = 4099  # a prime: about 1M inputs, every exponent and sign, mantissas spread out
SPECIAL = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 1, 0x80000001,
                    0x007FFFFF, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800000, 0x7F7FFFFF,
                    0xFF7FFFFF, 0x3F3504F3, 0x3F3504F4, 0x3F200000, 0xBF200000], np.uint32)


def _inputs() -> np.ndarray:
    bits = np.arange(0, 1 << 32, STEP, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits, SPECIAL]).view(np.float32)
    assert x.size >= JIT_MIN_ELEMENTS  # so that cpu:0 runs the generated kernel
    return x


X = _inputs()


def ulp_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in float32 ulps at ``exact`` (float64); 0 where ``got`` is ``exact``
    rounded to float32 (so also for matching infinities and NaNs)."""
    _, e = np.frexp(np.abs(exact))
    ulp = np.ldexp(1.0, np.maximum(e - 24, -149))
    with np.errstate(all="ignore"):
        rounded = exact.astype(np.float32)
        err = np.abs(got.astype(np.float64) - exact) / ulp
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    return np.where(same, 0.0, np.where(np.isfinite(err), err, np.inf))


def _hermes(name: str, x: np.ndarray) -> np.ndarray:
    with hm.device("cpu:0"):
        t = getattr(hm, name)(x) * 1.0  # exact, and fuses into one generated kernel
        (kernel,) = t.explain().kernels
        assert kernel.source is not None and f"def {name}_float32(" in kernel.source
        return np.asarray(t.numpy())


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float32_error_is_at_most_numpys(name: str) -> None:
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        exact, numpy_result = f(X.astype(np.float64)), f(X)
    got = _hermes(name, X)
    err, numpy_err = ulp_errors(got, exact), ulp_errors(numpy_result, exact)
    worst = int(np.argmax(err))
    assert err[worst] <= max(numpy_err.max(), 2.0), (
        f"{name}({X[worst]!r}) = {got[worst]!r}, exact {exact[worst]!r}: {err[worst]:.2f} ulp, "
        f"NumPy's max {numpy_err.max():.2f}")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float32_special_values_are_numpys(name: str) -> None:
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(X)
    got = _hermes(name, X)
    special = ~np.isfinite(expected) | (expected == 0) | ~np.isfinite(got) | (got == 0)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    # equal bits (so also the sign of zeros and infinities), NaNs aside
    both = special & ~nan
    np.testing.assert_array_equal(got[both].view(np.uint32), expected[both].view(np.uint32))


def test_log_of_negative_zero_and_subnormal_inputs() -> None:
    x = np.resize(np.array([-0.0, 0.0, -1e-45, 1e-45, 1e-40, -np.inf, np.inf, np.nan, 1.0],
                           np.float32), JIT_MIN_ELEMENTS)
    got = _hermes("log", x)[:9]
    exact = np.log(np.array([1e-45, 1e-40], np.float32).astype(np.float64))
    np.testing.assert_array_equal(got[[0, 1, 2, 5, 6, 7, 8]],
                                  np.float32([-np.inf, -np.inf, np.nan, np.nan, np.inf, np.nan, 0]))
    assert np.all(ulp_errors(got[[3, 4]], exact) <= 1.0)


@pytest.mark.skipif("fma" not in vector_extensions(),
                    reason="needs a CPU with FMA (AVX2 or AVX-512)")
@pytest.mark.parametrize("name", FUNCTIONS)
def test_float32_loop_is_vectorised_without_libm(name: str) -> None:
    """The loop runs 8 or 16 lanes of FMAs: LLVM's tuning for the host CPU picks the width
    (256 bits on Intel cores with AVX-512, which slow their clock on 512-bit code; 512 on
    AMD Zen 4), and never calls libm."""
    program = Program(("float32",), ((1.0, "float32"),),
                      (Instr(name, (0,), "float32"), Instr("add", (2, 1), "float32")), (3,))
    # compiled here from the generated source: Numba shows no assembly of cached code
    source = numba_cpu.render(program, ("flat", ("f",))).replace("cache=True", "cache=False")
    namespace: dict = {}
    exec(compile(source, f"<{name} kernel>", "exec"), namespace)
    kernel = namespace["kernel"]
    # the constant 1.0 is the kernel's scalar parameter C0
    kernel.compile((numba_array("float32", False), numba_array("float32", True),
                    numba_cpu.numba.float32))
    asm = "\n".join(kernel.inspect_asm().values())
    assert re.search(r"vfmadd\w*\s[^\n]*%[yz]mm", asm), "no 8- or 16-lane fma in the loop"
    symbols = set(re.findall(r"(?:movabsq\s+\$|call\w*\s+)([A-Za-z_]\w*)", asm))
    assert not symbols & {"log", "logf", "log2", "log2f", "log10", "log10f", "tanh", "tanhf",
                          "exp", "expf"}

