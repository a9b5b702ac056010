"""Compile cost bounded: long stencil pipelines and elementwise chains become several
kernels (each within its build budget) that still give NumPy's / SciPy's results on every
device; the compiled-kernel caches stay within their bounds, in memory and on disk; a long
build logs its progress."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import ndimage

import hermes_nb as hm
from hermes_nb.codegen import numba_support
from hermes_nb.compiler import fuse, fuse_stencil, optimize
from hermes_nb.compiler.progress import building
from hermes_nb.ir.node import toposort
from hermes_nb.ir.stencil import ConvStage

STAGES = 10
CHAIN = 1200  # ops: three elementwise kernels of at most 512


@pytest.fixture
def jit_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu:0 runs fused kernels through Numba at every size."""
    from hermes_nb.backends.cpu import device as cpu

    monkeypatch.setattr(cpu, "STENCIL_MIN_ELEMENTS", 0)
    monkeypatch.setattr(cpu, "JIT_MIN_ELEMENTS", 0)


def _pipeline(x: Any, stages: int) -> Any:
    for _ in range(stages):
        x = hm.gaussian_blur(x, kernel_size=3) * 0.5 + x
    return x


def _scipy_pipeline(image: np.ndarray, stages: int) -> np.ndarray:
    g = hm.image.gaussian_kernel(3)
    x = image.astype(np.float64)
    for _ in range(stages):
        blur = ndimage.correlate1d(ndimage.correlate1d(x, g, axis=-2, mode="mirror"), g,
                                   axis=-1, mode="mirror")
        x = blur * 0.5 + x
    return x


def _chain(y: Any, n: int) -> Any:
    """``n`` ops alternating a subtraction with a multiply-add (NumPy float32 scalars)."""
    ops = 0
    while ops < n:
        if ops % 3 == 0:
            y = y - np.float32(0.0002)
            ops += 1
        else:
            y = y * np.float32(1.0001) + np.float32(0.0001)
            ops += 2
    return y


def test_ten_stage_stencil_is_split_and_matches_scipy(device: Any, jit_everywhere: None,
                                                      sample: Any) -> None:
    image = sample((70, 90), "float32", low=0.0, high=1.0)
    with hm.device(device.id):
        out = _pipeline(hm.asarray(image), STAGES)
    stencils = [k for k in out.explain().kernels if "conv2d" in k.ops]
    assert len(stencils) > 1
    assert sum(k.ops.count("conv2d") for k in stencils) == STAGES
    got = out.numpy()
    ref = _scipy_pipeline(image, STAGES)
    assert got.dtype == np.float32 and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * float(np.abs(ref).max()))


def test_stencil_parts_stay_within_budget() -> None:
    image = np.zeros((32, 32), np.float32)
    out = _pipeline(hm.asarray(image), 23)
    graph = optimize([out.node])
    stencils = [n.attrs["stencil"] for n in toposort(graph) if n.op == "fused_stencil"]
    per_stage = 50  # a 3x3 blur (48) and its multiply-add (2)
    assert len(stencils) >= -(-23 * per_stage // fuse_stencil.STENCIL_BUDGET)
    assert sum(sum(isinstance(s, ConvStage) for s in st.stages) for st in stencils) == 23
    for st in stencils:
        convs = sum(isinstance(s, ConvStage) for s in st.stages)
        assert convs * per_stage <= fuse_stencil.STENCIL_BUDGET


def test_short_pipeline_stays_one_kernel() -> None:
    image = np.zeros((32, 32), np.float32)
    out = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(
        hm.asarray(image))
    graph = optimize([out.node])
    assert [n.op for n in toposort(graph) if n.op.startswith("fused")] == ["fused_stencil"]


def test_long_elementwise_chain_is_split_and_matches_numpy(device: Any, jit_everywhere: None,
                                                           sample: Any, assert_close: Any
                                                           ) -> None:
    a = sample(((1 << 17) + 7,), "float32", low=0.0, high=1.0)  # sliced over threads
    with hm.device(device.id):
        out = _chain(hm.asarray(a), CHAIN)
    kernels = [k for k in out.explain().kernels if k.ops]
    assert len(kernels) >= CHAIN // fuse.ELEMENTWISE_BUDGET + 1
    assert all(len(k.ops) <= fuse.ELEMENTWISE_BUDGET for k in kernels)
    assert_close(out.numpy(), _chain(a, CHAIN), loose=True)


def test_kernel_cache_drops_least_recently_used() -> None:
    cache = numba_support.KernelCache(capacity=3)
    builds: list[str] = []

    def build(key: str) -> Any:
        def make() -> str:
            builds.append(key)
            return f"kernel {key}"
        return make

    for key in "abc":
        cache.get_or_build(key, build(key))
    assert cache.get("a") == "kernel a"  # now the most recently used
    for key in "de":
        cache.get_or_build(key, build(key))
    assert len(cache) == 3
    assert cache.get("a") == "kernel a" and cache.get("b") is None and cache.get("c") is None
    assert cache.get_or_build("b", build("b")) == "kernel b"
    assert builds == ["a", "b", "c", "d", "e", "b"] and len(cache) == 3


def test_cpu_kernel_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch, jit_everywhere: None
                                        ) -> None:
    from hermes_nb.codegen import numba_cpu

    monkeypatch.setattr(numba_cpu._KERNELS, "capacity", 2)
    x = np.arange(1000, dtype=np.float64)
    # scalars are kernel arguments: kernels new to this process differ in their structure,
    # a chain of multiply-adds whose length no earlier test used
    first = 24 + time.time_ns() % 64
    for length in range(first, first + 4):
        lazy, expected = hm.asarray(x, device="cpu:0"), x
        for _ in range(length):
            lazy, expected = lazy * 0.5 + 1.0, expected * 0.5 + 1.0
        np.testing.assert_array_equal(lazy.numpy(), expected)
        assert len(numba_cpu._KERNELS) <= 2


def _entry(folder: Path, stem: str, size: int, mtime: float) -> None:
    (folder / "__pycache__").mkdir(parents=True, exist_ok=True)
    for path in (folder / f"{stem}.py", folder / "__pycache__" / f"{stem}.kernel-1.py311.nbi"):
        path.write_bytes(b"x" * size)
        os.utime(path, (mtime, mtime))


def test_disk_cache_trimmed_least_recently_used_first(tmp_path: Path) -> None:
    now = time.time()
    for k in range(5):
        _entry(tmp_path, f"k_{k}", 100, now - 100 + k)  # k_0 the oldest
    (tmp_path / "other.txt").write_text("not a kernel")
    assert numba_support.trim_disk_cache(tmp_path, max_entries=3) == 2
    left = sorted(p.name.split(".")[0] for p in tmp_path.glob("k_*.py"))
    assert left == ["k_2", "k_3", "k_4"]
    assert not list((tmp_path / "__pycache__").glob("k_0.*"))
    assert (tmp_path / "other.txt").exists()
    # by size: 200 bytes an entry, the newest (k_4) kept whatever its age
    os.utime(tmp_path / "k_4.py", (now - 1000, now - 1000))
    os.utime(tmp_path / "__pycache__" / "k_4.kernel-1.py311.nbi", (now - 1000, now - 1000))
    removed = numba_support.trim_disk_cache(tmp_path, max_bytes=450, keep=frozenset({"k_4"}))
    assert removed == 1
    assert sorted(p.name.split(".")[0] for p in tmp_path.glob("k_*.py")) == ["k_3", "k_4"]


def test_long_build_logs_progress(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="hermes_nb"):
        with building("fused_stencil kernel for test:0", after=0.05):
            time.sleep(0.3)
        with building("quick kernel", after=5.0):
            pass
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert any(m.startswith("building fused_stencil kernel for test:0") for m in lines)
    assert any(m.startswith("built fused_stencil kernel for test:0 in") for m in lines)
    assert not any("quick kernel" in m for m in lines)
    assert all(r.name.startswith("hermes_nb") for r in caplog.records)
