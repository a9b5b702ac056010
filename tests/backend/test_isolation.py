"""Native crashes stay in the isolated build worker: fault injection on every OpenCL device.

The worker's test hooks (``HERMES_TEST_BUILD_FAULT``, ``HERMES_TEST_LAUNCH_FAULT``) make a
build or first launch abort, hang or give a program without kernels. Each time the calling
process survives, the error names the kernel and the device, and results stay right.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.backends import isolation
from hermes_nb.backends.opencl.cache_files import bitcode_complete, elf_complete
from hermes_nb.backends.opencl.device import OpenCLDevice, hidden_devices
from hermes_nb.backends.opencl.guard import Guard, _digest
from hermes_nb.errors import KernelBuildError, KernelCrashError
from hermes_nb.ir.node import OpSpec

OPENCL = [d for d in hm.devices() if d.kind == "opencl"]
pytestmark = pytest.mark.opencl
NO_OPENCL = "needs an OpenCL device (pyopencl and a driver such as PoCL)"


@pytest.fixture(params=OPENCL or [None], ids=[d.id for d in OPENCL] or ["none"])
def cl_dev(request):
    if request.param is None:
        pytest.skip(NO_OPENCL)
    return request.param


def fresh(dev: OpenCLDevice) -> OpenCLDevice:
    """A new device object on the same hardware (its own caches and feature switches)."""
    return OpenCLDevice(90 + dev.index, dev.cl_device, dev.candidate, dev.verdict)


def crashing(dev: OpenCLDevice, folder: Path) -> OpenCLDevice:
    """``fresh(dev)`` whose guard keeps its markers in, and after a crash empties, ``folder``
    (owned by Hermes) instead of the driver cache that the processes running beside this
    test share: emptying that one made every process rebuild its kernels."""
    dev = fresh(dev)
    shared = dev.programs._guard
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".hermes-owned").touch()
    dev.programs._guard = Guard(shared.ref, shared.fingerprint, folder, shared.device_id)
    return dev


def unique_source() -> str:
    """A program no earlier run has built (so it goes through the worker)."""
    tag = uuid.uuid4().hex[:12]  # in the code: PoCL keys its cache on the source less comments
    return (f"__kernel void k(__global float *x) {{ const float one_{tag} = 1.0f; "
            f"x[get_global_id(0)] *= 2.0f * one_{tag}; }}\n")


def test_build_that_aborts_is_an_error_naming_kernel_device_and_signal(cl_dev, monkeypatch, caplog,
                                                                     tmp_path):
    monkeypatch.setenv("HERMES_TEST_BUILD_FAULT", "abort")
    source = unique_source()
    expected = r"kernel 'k'.*crashed the driver \(SIGABRT\)"
    # the first crash may be a damaged cache entry: the cache is emptied and the build retried
    with pytest.raises(KernelCrashError, match=expected) as info:
        crashing(cl_dev, tmp_path / "driver-cache").programs.kernel(source, "k")
    assert "emptied" in caplog.text
    assert "opencl:" in str(info.value) and source not in str(info.value)
    assert Path(info.value.source_path).read_text() == source
    monkeypatch.delenv("HERMES_TEST_BUILD_FAULT")
    x = np.arange(8, dtype=np.float32)
    dev = fresh(cl_dev)
    buf = dev.from_host(x.copy())  # the kernel doubles in place: from_host may wrap x
    dev.programs.kernel(source, "k")(dev.queue, (8,), (8,), buf.data)
    np.testing.assert_array_equal(dev.to_host(buf), 2 * x)  # the worker restarted, all fine


def test_build_that_hangs_times_out(cl_dev, monkeypatch):
    monkeypatch.setenv("HERMES_TEST_BUILD_FAULT", "hang")
    monkeypatch.setenv("HERMES_BUILD_TIMEOUT", "2")
    with pytest.raises(KernelCrashError, match=r"kernel 'k'.*timed out"):
        fresh(cl_dev).programs.kernel(unique_source(), "k")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_worker_killed_from_outside_leaves_the_shared_cache_alone(cl_dev, monkeypatch, caplog,
                                                                  tmp_path, signum):
    """A notebook's kernel shutting down kills its build worker with the process group:
    no sign of a damaged cache, so the folder other processes share is not emptied."""
    folder = tmp_path / "driver-cache"
    dev = crashing(cl_dev, folder)
    kept = folder / "XX" / "ANOTHERPROGRAM" / "program.bc"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"another process's program")
    monkeypatch.setenv("HERMES_TEST_BUILD_FAULT", "hang")
    monkeypatch.setenv("HERMES_BUILD_TIMEOUT", "3")  # the retry hangs too: it times out

    def kill_the_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            proc = isolation.worker()._proc
            if proc is not None and proc.poll() is None and isolation.worker()._lock.locked():
                time.sleep(0.5)  # the job has begun
                os.kill(proc.pid, signum)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    with pytest.raises(KernelCrashError, match=r"kernel 'k'.*timed out"):
        dev.programs.kernel(unique_source(), "k")
    killer.join()
    assert kept.read_bytes() == b"another process's program"
    assert "emptied" not in caplog.text


def test_program_without_the_kernel_is_a_build_error(cl_dev, monkeypatch):
    monkeypatch.setenv("HERMES_TEST_BUILD_FAULT", "nokernels")
    with pytest.raises(KernelBuildError, match=r"without kernel 'k'") as info:
        fresh(cl_dev).programs.kernel(unique_source(), "k")
    assert not isinstance(info.value, KernelCrashError)


def test_vector_kernel_that_crashes_is_retried_scalar(cl_dev, monkeypatch, caplog, tmp_path):
    dev = crashing(cl_dev, tmp_path / "driver-cache")
    if not dev.capabilities.float32_width:
        pytest.skip(f"{cl_dev.id} runs float32 kernels without vectors already")
    monkeypatch.setenv("HERMES_TEST_LAUNCH_FAULT", "abort-vector")
    # the scale is a kernel argument, so the program may have run before (in an earlier
    # test or run sharing the driver cache): only what this device verified counts
    guard = dev.programs._guard
    monkeypatch.setattr(guard, "verified", lambda key: key in guard._verified)
    scale = float(np.float32(1 + uuid.uuid4().int % 1000 / 7919))
    x = np.linspace(-2, 2, 4096, dtype=np.float32)
    spec = OpSpec("multiply", (4096,), np.dtype(np.float32), ((4096,), ()),
                  (np.dtype(np.float32), np.dtype(np.float32)), {}, dev.id)
    out = dev.execute(spec, [dev.from_host(x), dev.from_host(np.float32(scale))])
    assert "crashed the driver" in caplog.text and "retrying with vector width" in caplog.text
    np.testing.assert_allclose(dev.to_host(out), x * np.float32(scale), rtol=1e-6)
    assert dev.capabilities.float32_width == 0
    assert dev.degraded and "vector width" in dev.degraded[0]
    assert "degraded" in dev.info()


def _run_child(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A new process with its own caches (this one's PoCL cache folder is not inherited)."""
    full = {k: v for k, v in os.environ.items() if k != "POCL_CACHE_DIR"}
    return subprocess.run([sys.executable, "-c", code], env={**full, **env},
                          capture_output=True, text=True, timeout=240)


CHILD = """
import numpy as np, hermes_nb as hm
x = np.linspace(0, 1, 5000, dtype=np.float32)
with hm.device("{dev}"):
    y = hm.sqrt(hm.asarray(x) * 3.0 + 1.0).numpy()
assert np.allclose(y, np.sqrt(x * 3 + 1), rtol=1e-6)
print("ok")
"""


DAMAGED = """
import json
import numpy as np, hermes_nb as hm
from hermes_nb.backends.opencl.device import OpenCLDevice
from hermes_nb.backends.opencl.guard import _digest
(base,) = [d for d in hm.devices() if d.id == "{dev}"]
def fresh():  # as a new process would be: nothing verified in memory
    return OpenCLDevice(90 + base.index, base.cl_device, base.candidate, base.verdict)
source = {source!r}
dev = fresh()
dev.programs.kernel(source, "k")
guard = dev.programs._guard
files = json.loads((guard._markers / f"{{_digest('build', source)}}.json").read_text())
assert files, "the driver kept nothing in its disk cache"
for relative in files:  # a new file over the old (this process still maps the old one)
    path = guard.driver_cache / relative
    path.with_name("garbage.tmp").write_bytes(b"garbage")
    path.with_name("garbage.tmp").replace(path)
again = fresh()
knl = again.programs.kernel(source, "k")
x = np.ones(16, np.float32)
buf = again.from_host(x.copy())
knl(again.queue, (16,), (16,), buf.data)
np.testing.assert_array_equal(again.to_host(buf), 2 * x)
print("ok")
"""


def test_damaged_driver_cache_entry_is_dropped_and_rebuilt(cl_dev, tmp_path):
    # in a process with a driver cache of its own: a marker lists what the cache gained
    # meanwhile, so damage done in a shared cache would reach other processes' markers
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path), "HERMES_OPENCL_ALL_DRIVERS": "1"}
    proc = _run_child(DAMAGED.format(dev=cl_dev.id, source=unique_source()), env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")
    assert "dropped a damaged driver cache entry" in proc.stderr


def test_garbage_in_every_driver_cache_file_heals_in_a_new_process(cl_dev, tmp_path):
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path), "HERMES_OPENCL_ALL_DRIVERS": "1"}
    first = _run_child(CHILD.format(dev=cl_dev.id), env)
    assert first.returncode == 0, first.stderr[-2000:]
    pocl = tmp_path / "pocl"
    damaged = 0
    for path in pocl.rglob("*"):
        if path.is_file() and path.name != ".hermes-owned" and "hermes-verified" not in path.parts:
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # half-written
            damaged += 1
    second = _run_child(CHILD.format(dev=cl_dev.id), env)
    assert second.returncode == 0, f"rc={second.returncode}\n{second.stderr[-2000:]}"
    assert second.stdout.strip().endswith("ok")
    assert damaged, "the first process left nothing in the PoCL cache folder"
    assert "damaged driver cache entry" in second.stderr or "emptied" in second.stderr


def test_every_driver_is_used_or_left_out_with_a_reason():
    cl = pytest.importorskip("pyopencl", reason=NO_OPENCL)
    try:
        cl.get_platforms()
    except cl.Error:
        pytest.skip(NO_OPENCL)
    seen = sum(len(p.get_devices()) for p in cl.get_platforms())
    assert len(OPENCL) + len(hidden_devices()) == seen
    assert all(h.reason for h in hidden_devices())
    for dev in OPENCL:
        assert dev.verdict is not None and dev.verdict.healthy
        assert dev.info()["selftest"].startswith("passed")


def test_damaged_pyopencl_cache_database_is_moved_aside(cl_dev, tmp_path):
    xdg = tmp_path / "xdg"
    (xdg / "pytools").mkdir(parents=True)
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path / "hermes"), "XDG_CACHE_HOME": str(xdg),
           "HERMES_OPENCL_ALL_DRIVERS": "1", "PYTHONWARNINGS": "default"}
    first = _run_child(CHILD.format(dev=cl_dev.id), env)  # creates the invoker database
    assert first.returncode == 0, first.stderr[-2000:]
    dbs = list((xdg / "pytools").glob("pdict-*pyopencl*.sqlite"))
    assert dbs, "PyOpenCL keeps no invoker database here"
    for db in dbs:
        db.write_bytes(b"this is not an SQLite database" * 40)
    second = _run_child(CHILD.format(dev=cl_dev.id), env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.strip().endswith("ok")
    assert "was damaged; moved it to" in second.stderr


INTERRUPTED = """
import json, os, threading, time, _thread
import numpy as np, hermes_nb as hm
x = np.linspace(0, 1, 3000, dtype=np.float32)
os.environ["HERMES_TEST_BUILD_FAULT"] = "hang"
threading.Timer(1.0, _thread.interrupt_main).start()
t0 = time.perf_counter()
try:
    with hm.device("{dev}"):
        (hm.asarray(x) * 1.25 + 0.5).numpy()
    raise SystemExit("not interrupted")
except KeyboardInterrupt:
    returned = time.perf_counter() - t0 - 1.0
del os.environ["HERMES_TEST_BUILD_FAULT"]
t0 = time.perf_counter()
with hm.device("{dev}"):
    y = (hm.asarray(x) * 1.25 + 0.5).numpy()
again = time.perf_counter() - t0
assert np.allclose(y, x * 1.25 + 0.5)
print(json.dumps({{"returned": returned, "again": again}}))
"""


def test_interrupt_during_a_build_returns_at_once_and_frees_the_device(cl_dev, tmp_path):
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path), "HERMES_OPENCL_ALL_DRIVERS": "1"}
    warm = _run_child(CHILD.format(dev=cl_dev.id), env)  # self-test and worker start-up
    assert warm.returncode == 0, warm.stderr[-2000:]
    proc = _run_child(INTERRUPTED.format(dev=cl_dev.id), env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["returned"] < 1.0  # control back within a second of the interrupt
    assert figures["again"] < 30.0  # the hung build no longer holds the device


# ---- a cache entry is judged whole by its structure -----------------------------------
# Two builds of one program write different ``program.bc`` bytes (the bitcode names its
# temporary source file): a checksum taken at the first build called the second "damaged"
# and dropped it, a false alarm whenever two notebooks or test workers built one kernel.


def built_files(dev: OpenCLDevice, source: str) -> dict[str, Path]:
    """Build ``source`` on ``dev``; the driver cache files its build marker lists."""
    dev.programs.kernel(source, "k")
    guard = dev.programs._guard
    marker = guard._markers / f"{_digest('build', source)}.json"
    listed = json.loads(marker.read_text())
    return {relative: guard.driver_cache / relative for relative in listed}


BUILD_ELSEWHERE = """
import json, pathlib, shutil
import hermes_nb as hm
from hermes_nb.backends.opencl.guard import _digest
(dev,) = [d for d in hm.devices() if d.id == {dev!r}]
dev.programs.kernel({source!r}, "k")
guard = dev.programs._guard
marker = guard._markers / (_digest("build", {source!r}) + ".json")
copies = {{}}
for relative in json.loads(marker.read_text()):
    copy = pathlib.Path({out!r}) / relative.replace("/", "_")
    shutil.copyfile(guard.driver_cache / relative, copy)
    copies[relative] = str(copy)
print(json.dumps(copies))
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
    env = {"HERMES_NB_CACHE_DIR": str(tmp_path / "cache"), "HERMES_OPENCL_ALL_DRIVERS": "1"}
    out = tmp_path / "built"
    out.mkdir()
    # the other process copies its build's files as soon as it has them: its cache is its
    # own, and what its background work does to it after that is not this test's subject
    proc = _run_child(BUILD_ELSEWHERE.format(dev=cl_dev.id, source=source, out=str(out)), env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    elsewhere = {r: Path(p) for r, p in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    rewritten = 0
    for relative, path in files.items():
        other = elsewhere.get(relative)
        if relative.endswith(".bc") and other and other.read_bytes() != path.read_bytes():
            staged = path.with_name(f"{path.name}.new")
            shutil.copyfile(other, staged)
            staged.replace(path)  # as PoCL writes: a whole new file renamed over the old
            rewritten += 1
    assert rewritten, "two builds of one program gave the same bitcode: nothing to check"
    again = fresh(cl_dev)
    with caplog.at_level(logging.WARNING, logger="hermes_nb.backends"):
        assert again.programs._guard.verified(_digest("build", source))
    assert "damaged" not in caplog.text
    assert all(path.exists() for path in files.values())  # kept, not dropped
