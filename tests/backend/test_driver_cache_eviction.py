"""A real PoCL keeps working when a trim evicts a program it has loaded: later launches
of new geometries and new builds of the same source rebuild it and compute right."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from hermes_nb.backends.opencl import device as opencl

pytestmark = pytest.mark.opencl

DEVICES = opencl.discover()
if not DEVICES:
    pytest.skip("no OpenCL device (pyopencl and a platform such as PoCL)", allow_module_level=True)

CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    import pyopencl as cl
    from hermes_nb.backends.opencl.build import build_program
    from hermes_nb.backends.opencl.cache_trim import trim_driver_caches

    SOURCE = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }"
    device = cl.get_platforms()[int(sys.argv[1])].get_devices()[int(sys.argv[2])]
    ctx = cl.Context([device]); queue = cl.CommandQueue(ctx)

    def twice(program, n):
        x = np.arange(n, dtype=np.float32)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
        cl.Kernel(program, "twice")(queue, (n,), None, buf)
        cl.enqueue_copy(queue, x, buf); queue.finish()
        assert np.array_equal(x, 2 * np.arange(n, dtype=np.float32)), n

    program = build_program(cl, ctx, SOURCE)
    twice(program, 16)
    folder = Path(sys.argv[3])
    report = trim_driver_caches(folder.parent, budget=0, now=time.time() + 3 * 86400)
    assert report.evicted_programs == 1, report
    assert not list(folder.glob("*/*/program.bc"))
    twice(program, 64)  # a new geometry of the loaded program
    twice(build_program(cl, ctx, SOURCE), 16)  # the same source built again
    assert len(list(folder.glob("*/*/program.bc"))) == 1
    print("ok")
""")


@pytest.mark.parametrize("dev", DEVICES, ids=[str(d.id) for d in DEVICES])
def test_a_loaded_program_survives_its_eviction(dev, tmp_path):
    folder = tmp_path / "drivers"
    folder.mkdir()
    (folder / ".hermes-owned").touch()
    platform, index, _ = dev.candidate.ref
    run = subprocess.run([sys.executable, "-c", CHILD, str(platform), str(index), str(folder)],
                         env={**os.environ, "POCL_CACHE_DIR": str(folder)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
