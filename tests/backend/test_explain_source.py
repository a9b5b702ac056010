"""``explain()`` shows byte for byte the source that runs: on every OpenCL device, each fused
kernel kind's source in the plan is the one the device builds (captured at build)."""

from __future__ import annotations

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.devices import opencl_kernels
from hermes_nb.devices.opencl_fused import PASS_SEPARATOR

OPENCL = [d for d in hm.devices() if d.kind == "opencl"]
pytestmark = pytest.mark.opencl

RNG = np.random.default_rng(3)
IMAGE = RNG.random((70, 90), dtype=np.float32)
A = RNG.random((4099,), dtype=np.float32)
M = RNG.random((33, 17), dtype=np.float32)
LONG = RNG.random((3, 50_000), dtype=np.float32)

CASES = {
    "fused_elementwise": lambda: hm.exp(-(hm.asarray(A) * 2.0 + 1.0) ** 2) + hm.asarray(A),
    "fused_elementwise broadcast": lambda: hm.sqrt(hm.asarray(M) + hm.asarray(M[0])) * 3.0,
    "fused_reduce": lambda: (hm.asarray(A) * 3.0 + 1.0).sum(),
    "fused_reduce rows": lambda: hm.exp(hm.asarray(LONG) * 0.5).sum(axis=1) + 1.0,
    "fused_matmul": lambda: hm.relu(hm.asarray(M) @ hm.asarray(M.T) + 0.5),
    "fused_stencil": lambda: hm.compose(hm.gaussian_blur(kernel_size=5),
                                        hm.sobel_edge_detection())(hm.asarray(IMAGE)),
}


@pytest.fixture(params=OPENCL or [None], ids=[d.id for d in OPENCL] or ["none"])
def cl_dev(request):
    if request.param is None:
        pytest.skip("needs an OpenCL device (pyopencl and a driver such as PoCL)")
    return request.param


@pytest.mark.parametrize("case", sorted(CASES))
def test_explained_source_is_the_built_source(cl_dev, case, monkeypatch):
    built: list[str] = []
    original = opencl_kernels.ProgramCache.kernel

    def capture(self, source, name):
        built.append(source)
        return original(self, source, name)

    monkeypatch.setattr(opencl_kernels.ProgramCache, "kernel", capture)
    with hm.device(cl_dev):
        tensor = CASES[case]()
    plan = tensor.explain()
    fused = [k for k in plan.kernels if k.name.split("-")[1].startswith("fused")]
    assert fused, f"{case}: nothing fused in\n{plan}"
    tensor.numpy()
    for kernel in fused:
        assert kernel.source is not None, f"{case}: no source for {kernel.name}"
        for part in kernel.source.split(PASS_SEPARATOR):
            assert part in built, f"{case}: explain() shows a source {cl_dev.id} never built"
