"""A driver cache entry is judged whole by its structure, on every OpenCL driver.

Two builds of one program write different ``program.bc`` bytes (the bitcode names its
temporary source file), so a checksum taken at the first build called the second one
"damaged" and dropped it: a false alarm whenever two notebooks or test workers built the
same kernel at once.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import hermes_nb as hm
from hermes_nb.backends.opencl.cache_files import bitcode_complete, elf_complete
from hermes_nb.backends.opencl.device import OpenCLDevice
from hermes_nb.backends.opencl.guard import _digest

OPENCL = [d for d in hm.devices() if d.kind == "opencl"]
pytestmark = pytest.mark.opencl
NO_OPENCL = "needs an OpenCL device (pyopencl and a driver such as PoCL)"


@pytest.fixture(params=OPENCL or [None], ids=[d.id for d in OPENCL] or ["none"])
def cl_dev(request):
    if request.param is None:
        pytest.skip(NO_OPENCL)
    return request.param


def fresh(dev: OpenCLDevice) -> OpenCLDevice:
    """A new device object on the same hardware, as a new process has: nothing verified."""
    return OpenCLDevice(90 + dev.index, dev.cl_device, dev.candidate, dev.verdict)


def unique_source() -> str:
    tag = uuid.uuid4().hex[:12]
    return (f"__kernel void k(__global float *x) {{ const float one_{tag} = 1.0f; "
            f"x[get_global_id(0)] *= 3.0f * one_{tag}; }}\n")


def built_files(dev: OpenCLDevice, source: str) -> dict[str, Path]:
    """Build ``source`` on ``dev``; the driver cache files its build marker lists."""
    dev.programs.kernel(source, "k")
    guard = dev.programs._guard
    marker = guard._markers / f"{_digest('build', source)}.json"
    listed = json.loads(marker.read_text())
    return {relative: guard.driver_cache / relative for relative in listed}


BUILD_ELSEWHERE = """
import hermes_nb as hm
(dev,) = [d for d in hm.devices() if d.id == {dev!r}]
dev.programs.kernel({source!r}, "k")
print(dev.programs._guard.driver_cache)
"""


def test_cache_files_of_a_build_are_whole_and_truncations_are_not(cl_dev):
    files = built_files(fresh(cl_dev), unique_source())
    bitcode = [p for r, p in files.items() if r.endswith(".bc")]
    assert bitcode, f"the driver's build left no bitcode in its cache: {sorted(files)}"
    for path in bitcode:
        data = path.read_bytes()
        assert bitcode_complete(data)
        for cut in (0, 4, len(data) // 2, len(data) - 4, len(data) - 1):
            assert not bitcode_complete(data[:cut]), f"{path.name} cut to {cut} bytes"
        assert not bitcode_complete(data + b"\0" * 4)  # more than its blocks promise
        assert not elf_complete(data)


def test_an_entry_another_process_rebuilt_is_no_damage(cl_dev, tmp_path, caplog):
    source = unique_source()
    files = built_files(fresh(cl_dev), source)
    # the same program built by another process, in a cache folder of its own
    env = {k: v for k, v in os.environ.items() if k != "POCL_CACHE_DIR"}
    env.update(HERMES_NB_CACHE_DIR=str(tmp_path), HERMES_OPENCL_ALL_DRIVERS="1")
    proc = subprocess.run([sys.executable, "-c", BUILD_ELSEWHERE.format(dev=cl_dev.id,
                                                                          source=source)],
                          env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    elsewhere = Path(proc.stdout.strip().splitlines()[-1])
    rewritten = 0
    for relative, path in files.items():
        other = elsewhere / relative
        if relative.endswith(".bc") and other.read_bytes() != path.read_bytes():
            other.replace(path)  # as PoCL writes: a whole new file renamed over the old
            rewritten += 1
    assert rewritten, "two builds of one program gave the same bitcode: nothing to check"
    again = fresh(cl_dev)
    with caplog.at_level(logging.WARNING, logger="hermes_nb.backends"):
        assert again.programs._guard.verified(_digest("build", source))
    assert "damaged" not in caplog.text
    assert all(path.exists() for path in files.values())  # kept, not dropped
