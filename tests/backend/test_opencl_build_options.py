"""OpenCL programs are built with only Hermes's own options, so PoCL's program cache,
keyed by source and options, holds across virtual environments (a new venv moves
PyOpenCL's include folder, which ``pyopencl.Program.build`` adds to every build)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_nb.backends.opencl import device as opencl

pytestmark = pytest.mark.opencl

DEVICES = opencl.discover()
if not DEVICES:
    pytest.skip("no OpenCL device (pyopencl and a platform such as PoCL)", allow_module_level=True)

SOURCE = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }"

# One process: build SOURCE the way Hermes does, with PyOpenCL's include folder moved
# where a virtual environment elsewhere would have it.
BUILD = textwrap.dedent("""
    import sys
    import pyopencl as cl
    from hermes_nb.backends.opencl.build import build_program

    cl._DEFAULT_INCLUDE_OPTIONS[:] = ["-I", sys.argv[3]]
    device = cl.get_platforms()[int(sys.argv[1])].get_devices()[int(sys.argv[2])]
    build_program(cl, cl.Context([device]), {source!r})
""").format(source=SOURCE)


def _programs_cached(cache: Path) -> int:
    return sum(1 for _ in cache.rglob("program.bc"))


@pytest.mark.parametrize("dev", DEVICES, ids=[str(d.id) for d in DEVICES])
def test_a_program_builds_with_only_its_own_options(dev):
    import pyopencl as cl

    from hermes_nb.backends.opencl.build import build_program

    program = build_program(cl, dev.context, SOURCE)
    for cl_device in program.devices:
        assert program.get_build_info(cl_device, cl.program_build_info.OPTIONS).strip() == ""
    assert program.twice.function_name == "twice"


@pytest.mark.parametrize("dev", DEVICES, ids=[str(d.id) for d in DEVICES])
def test_a_venv_elsewhere_reuses_the_built_program(dev, tmp_path):
    cache = tmp_path / "pocl-cache"
    env = {**os.environ, "POCL_CACHE_DIR": str(cache)}
    platform, index, _ = dev.candidate.ref
    for venv in ("/venv-one/site-packages/pyopencl/cl", "/venv-two/site-packages/pyopencl/cl"):
        subprocess.run([sys.executable, "-c", BUILD, str(platform), str(index), venv],
                       env=env, check=True, timeout=300)
        if venv.startswith("/venv-one"):
            first = _programs_cached(cache)
    assert first >= 1, "the driver cached no program: this test cannot see a rebuild"
    assert _programs_cached(cache) == first, "the second venv rebuilt the program"


@pytest.mark.parametrize("dev", DEVICES, ids=[str(d.id) for d in DEVICES])
def test_a_failed_build_still_carries_the_compilers_log(dev):
    import pyopencl as cl

    from hermes_nb.backends.opencl.build import build_program

    with pytest.raises(cl.RuntimeError, match="error:"):
        build_program(cl, dev.context, "__kernel void broken(__global float *x) { x[0] = y; }")
