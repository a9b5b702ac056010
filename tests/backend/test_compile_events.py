"""Compiles are their own events: a kernel's first run on a device records each build with
its duration apart from the run, the second run records none, the scheduler learns the run
time without the compile, Chrome traces show the builds, and a new kernel under ``auto``
compiles on one device only."""

from __future__ import annotations

import json
import random
import time

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.compiler import optimize
from hermes_nb.runtime import explore, last_profile
from hermes_nb.runtime.trace import chrome_trace
from hermes_nb.scheduler import Scheduler, kernel_info_of, policies

SIZE = 1 << 17  # above cpu:0's JIT size: Numba builds the kernel
_UNARY = {
    "exp": (lambda t: hm.exp(t * 0.1), lambda a: np.exp(a * np.float32(0.1))),
    "sin": (hm.sin, np.sin),
    "cos": (hm.cos, np.cos),
    "tanh": (hm.tanh, np.tanh),
    "abs": (hm.abs, np.abs),
    "square": (lambda t: t * t, lambda a: a * a),
}


def _new_chain() -> list[str]:
    """Ops in an order no other test compiled: a kernel signature that is new here (the
    values of scalars may not be part of a signature, so a new constant is not enough)."""
    rng = random.Random()
    return [rng.choice(sorted(_UNARY)) for _ in range(10)]


def _apply(chain: list[str], x, numpy: bool = False):
    for name in chain:
        x = _UNARY[name][1 if numpy else 0](x)
    return x


@pytest.fixture
def fresh_scheduler(monkeypatch):
    """An empty, in-memory scheduler that, like the runtime's, runs new kernels on one device
    (and times them on the other devices in the background)."""
    scheduler = Scheduler(None, explore_new_kernels=False)
    monkeypatch.setattr(policies, "_default", scheduler)
    yield scheduler
    assert explore.wait(120), "background calibration still running"


def _compiling(device) -> None:
    if device.kind not in ("cpu", "opencl", "cuda"):
        pytest.skip(f"{device.id} builds no kernels")
    if device.kind == "cpu":
        pytest.importorskip("numba")


def _input() -> np.ndarray:
    return np.linspace(-1.0, 1.0, SIZE, dtype=np.float32)


def test_first_run_records_compiles_and_the_second_none(device, fresh_scheduler):
    _compiling(device)
    chain, x = _new_chain(), _input()
    with hm.device(device.id):
        first = _apply(chain, hm.asarray(x))
    np.testing.assert_allclose(first.numpy(), _apply(chain, x, numpy=True), rtol=2e-5, atol=2e-6)
    profile = last_profile()
    (kernel,) = profile.kernels
    assert profile.compiles, "a new kernel's first run records its build"
    assert {c.key for c in profile.compiles} == {kernel.key}
    assert all(c.device == device.id and c.seconds > 0 for c in profile.compiles)
    assert kernel.compile_s == pytest.approx(sum(c.seconds for c in profile.compiles))
    assert kernel.start <= min(c.start for c in profile.compiles)
    assert max(c.end for c in profile.compiles) <= kernel.end
    assert kernel.seconds == pytest.approx(kernel.wall_s - kernel.compile_s)
    assert f"compiling {kernel.op} on {device.id}" in {c.label for c in profile.compiles}
    assert "compiling" in str(profile) and "compile ms" in profile._repr_html_()

    with hm.device(device.id):
        again = _apply(chain, hm.asarray(x))
    again.numpy()
    profile = last_profile()
    assert profile.compiles == [] and profile.kernels[0].compile_s == 0.0


def test_the_history_learns_the_run_time_without_the_compile(device, fresh_scheduler):
    _compiling(device)
    chain = _new_chain()
    with hm.device(device.id):
        y = _apply(chain, hm.asarray(_input()))
    (root,) = optimize([y.node])
    y.numpy()
    (kernel,) = last_profile().kernels
    assert kernel.compile_s > 0
    estimate = fresh_scheduler.model.estimate(kernel_info_of(root), device.id)
    assert estimate.runs == 1
    assert estimate.seconds == pytest.approx(kernel.seconds)
    assert estimate.seconds < kernel.wall_s - 0.5 * kernel.compile_s


def test_chrome_trace_shows_each_compile_inside_its_kernel(device, fresh_scheduler, tmp_path):
    _compiling(device)
    chain = _new_chain()
    with hm.device(device.id):
        y = _apply(chain, hm.asarray(_input()))
    y.numpy()
    profile = last_profile()
    path = tmp_path / "run.json"
    hm.runtime.trace.write_trace(profile, path)
    events = json.loads(path.read_text())["traceEvents"]
    lanes = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    (kernel,) = [e for e in events if e.get("cat") == "kernel"]
    compiles = [e for e in events if e.get("cat") == "compile"]
    assert compiles and len(compiles) == len(profile.compiles)
    for e in compiles:
        assert e["ph"] == "X" and e["tid"] == lanes[device.id] == kernel["tid"] and e["dur"] > 0
        assert e["name"].startswith(("compiling ", "self-testing ")) and e["args"]["key"]
        # nested in the kernel's event (a compile happens inside its kernel's launch)
        assert kernel["ts"] <= e["ts"] and e["ts"] + e["dur"] <= kernel["ts"] + kernel["dur"] + 1
    assert kernel["args"]["compile_ms"] > 0
    assert kernel["args"]["run_ms"] == pytest.approx(profile.kernels[0].seconds * 1e3)
    assert chrome_trace(profile)["otherData"]["compile_ms"] > 0


def test_a_new_kernel_under_auto_compiles_on_one_device_only(fresh_scheduler):
    capable = [d for d in hm.devices() if d.kind in ("cpu", "opencl", "cuda")]
    if len(capable) < 2:
        pytest.skip("needs two devices that build kernels")
    pytest.importorskip("numba")
    chain = _new_chain()
    xs = [_input(), _input()[::-1].copy(), np.cos(_input())]
    with hm.policy("auto"):
        outs = [_apply(chain, hm.asarray(x)) for x in xs]  # one kernel three times
        hm.compute(*outs)
    profile = last_profile()
    assert len(profile.kernels) == 3 and profile.compiles
    assert len({c.device for c in profile.compiles}) == 1, [c.label for c in profile.compiles]
    assert {k.device for k in profile.kernels} == {profile.compiles[0].device}
    assert all("runs this new kernel first" in k.reason for k in profile.kernels)
    for out, x in zip(outs, xs, strict=True):
        np.testing.assert_allclose(out.numpy(), _apply(chain, x, numpy=True), rtol=2e-5, atol=2e-6)

    # meanwhile the other devices compile and time it in the background, on idle devices
    first = profile.compiles[0].device
    assert explore.wait(120)
    (root,) = optimize([outs[0].node])
    kernel = kernel_info_of(root)
    timed = {d.id: fresh_scheduler.model.runs(kernel.signature, d.id) for d in capable}
    assert all(runs >= 1 for runs in timed.values()), timed
    with hm.policy("auto"):
        again = [_apply(chain, hm.asarray(x)) for x in xs]
        hm.compute(*again)
    assert last_profile().compiles == []  # no compile in the foreground on a later run
    assert first in timed


def test_background_calibration_waits_while_the_process_is_busy(fresh_scheduler):
    """The user's own work between runs (NumPy here) keeps the explorer off the cores."""
    capable = [d for d in hm.devices() if d.kind in ("cpu", "opencl", "cuda")]
    if len(capable) < 2:
        pytest.skip("needs two devices that build kernels")
    chain = _new_chain()
    with hm.policy("auto"):
        _apply(chain, hm.asarray(_input())).numpy()
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:  # a busy caller: pure Python keeps a core occupied
        sum(i * i for i in range(20000))
        assert explore.busy(), "calibration finished while the process was busy"
    assert explore.wait(120)  # idle again: it runs and completes


@pytest.mark.skipif(len(hm.devices()) < 2, reason="co-execution needs two devices")
def test_coexecuted_tiles_record_their_compiles(fresh_scheduler):
    chain = _new_chain()
    x = np.linspace(-1.0, 1.0, 2 * SIZE, dtype=np.float32)  # each tile above the JIT size
    with hm.options(coexec="always"):
        result = _apply(chain, hm.asarray(x)).numpy()
    np.testing.assert_allclose(result, _apply(chain, x, numpy=True), rtol=2e-5, atol=2e-6)
    profile = last_profile()
    tiles = {k.key: k for k in profile.kernels if k.reason == "co-execution tile"}
    assert len(tiles) == len(hm.devices()), profile.kernels
    assert profile.compiles and {c.key for c in profile.compiles} <= set(tiles)
    for key, tile in tiles.items():  # each tile's run time leaves out its own builds
        builds = sum(c.seconds for c in profile.compiles if c.key == key)
        assert tile.compile_s == pytest.approx(builds)
