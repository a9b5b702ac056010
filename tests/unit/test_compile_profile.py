"""Compile events without a device: the build hook reports each outermost build to the
listener of its context, profiles, traces and the timeline show builds apart from runs, the
live monitor names a build in progress, and the runtime's scheduler runs a new kernel on
one device (the prior's best) before exploring others."""

from __future__ import annotations

import threading
import time

import pytest

from hermes_nb.compiler.progress import building, recording
from hermes_nb.runtime.profile import CompileRecorder, CompileRun, KernelRun, Profile, compiling_now
from hermes_nb.runtime.trace import chrome_trace
from hermes_nb.scheduler import KernelInfo, Scheduler


def _build_elsewhere() -> None:
    with building("other thread"):
        pass


def test_building_reports_outermost_builds_of_its_own_context_only() -> None:
    recorder = CompileRecorder("k-1", "fused_stencil", "opencl:0")
    elsewhere: list[str] = []
    with recording(recorder):
        # the inner build is part of the outer one, not an event of its own
        with building("outer kernel"), building("inner cache"):
            pass
        with building("first launch", kind="self-test"):
            pass
        # another thread's build belongs to another kernel
        thread = threading.Thread(target=_build_elsewhere)
        thread.start()
        thread.join()
    with building("after the block"):
        elsewhere.append("not recorded")
    assert [(e.what, e.kind) for e in recorder.events] == [
        ("outer kernel", "compile"), ("first launch", "self-test")]
    assert all(e.end >= e.start and e.key == "k-1" for e in recorder.events)
    assert recorder.seconds == pytest.approx(sum(e.seconds for e in recorder.events))
    assert recorder.events[0].label == "compiling fused_stencil on opencl:0"
    assert recorder.events[1].label == "self-testing fused_stencil on opencl:0"


def test_a_build_in_progress_is_named_for_the_monitor() -> None:
    recorder = CompileRecorder("k-2", "max", "cuda:0")
    with recording(recorder), building("reduction kernel"):
        (now,) = [c for c in compiling_now() if c.key == "k-2"]
        assert now.label == "compiling max on cuda:0"
    assert not [c for c in compiling_now() if c.key == "k-2"]


def _compiled_profile() -> Profile:
    profile = Profile(started=10.0, finished=11.0)
    profile.add(CompileRun("k-1", "fused_stencil", "opencl:0", "OpenCL kernel fused_stencil",
                           "compile", 10.1, 10.6))
    profile.add(KernelRun("k-1", "fused_stencil", "opencl:0", 10.1, 10.7, None, "calibrating",
                          compile_s=0.5))
    profile.add(KernelRun("k-2", "max", "cpu:0", 10.7, 10.8, 0.1, "fastest"))
    return profile


def test_a_kernel_run_time_leaves_its_compile_out() -> None:
    profile = _compiled_profile()
    first, second = profile.kernels
    assert first.seconds == pytest.approx(0.1) and first.wall_s == pytest.approx(0.6)
    assert first.run_start == pytest.approx(10.6)
    assert second.seconds == pytest.approx(0.1) and second.compile_s == 0.0
    assert profile.compile_s == pytest.approx(0.5)
    assert profile.per_kernel()["k-1"][0] == pytest.approx(0.1)
    text = str(profile)
    assert "(500.00 ms compiling)" in text and "+ compile 500.0 ms" in text
    assert "<th>compile ms</th>" in profile._repr_html_()


def test_chrome_trace_nests_compiles_in_their_kernel() -> None:
    trace = chrome_trace(_compiled_profile())
    events = trace["traceEvents"]
    (compiled,) = [e for e in events if e.get("cat") == "compile"]
    kernel = next(e for e in events if e.get("cat") == "kernel" and e["args"]["key"] == "k-1")
    assert compiled["name"] == "compiling fused_stencil on opencl:0"
    assert compiled["tid"] == kernel["tid"]
    assert compiled["ts"] == pytest.approx(1e5) and compiled["dur"] == pytest.approx(5e5)
    assert kernel["dur"] == pytest.approx(6e5)  # the task's span; run_ms leaves the build out
    assert kernel["args"]["run_ms"] == pytest.approx(100) and kernel["args"]["compile_ms"] == 500
    assert trace["otherData"]["compile_ms"] == pytest.approx(500)


def test_timeline_draws_builds_apart_from_runs() -> None:
    pytest.importorskip("bokeh")
    from bokeh.models import ColumnDataSource

    from hermes_nb.widgets.timeline import timeline

    fig = timeline(_compiled_profile())
    compiles = fig.select_one({"name": "compiles", "type": ColumnDataSource}).data
    kernels = fig.select_one({"name": "kernels", "type": ColumnDataSource}).data
    assert list(compiles["label"]) == ["compiling fused_stencil on opencl:0"]
    assert compiles["start_ms"][0] == pytest.approx(100)
    assert compiles["end_ms"][0] == pytest.approx(600)
    assert kernels["start_ms"][0] == pytest.approx(600)  # the run's bar starts after the build
    assert "compiling" in fig.title.text


K = KernelInfo("sig:new", "n=1", nbytes=1 << 20, flops=0.0)
DEVICES = ["cpu:0", "opencl:0", "cuda:0"]


def test_a_new_kernel_runs_on_one_device_then_the_others_are_explored() -> None:
    sched = Scheduler(None, explore_new_kernels=False)
    first = [sched.decide(K, DEVICES, policy="auto") for _ in range(4)]  # all in flight
    assert {d.device for d in first} == {"cpu:0"}
    assert all(d.calibrating and "runs this new kernel first" in d.reason for d in first)
    for d in first:
        sched.record(d, 1e-3)
    later = sched.decide(K, DEVICES, policy="auto")
    assert later.calibrating and later.device == "opencl:0"  # explored on a later run


def test_the_prior_prefers_the_device_fastest_on_other_kernels() -> None:
    sched = Scheduler(None, explore_new_kernels=False)
    other = KernelInfo("sig:other", "n=1", nbytes=1 << 20, flops=0.0)
    for device, seconds in (("cpu:0", 4e-3), ("opencl:0", 2e-3), ("cuda:0", 1e-3)):
        sched.observe(other, device, seconds)
    d = sched.decide(K, DEVICES, policy="auto")
    assert d.device == "cuda:0" and "prior 1 ms" in d.reason
    assert sched.model.prior(K, "cuda:0") == pytest.approx(1e-3)
    assert sched.model.prior(K, "tpu:0") is None


def test_a_simulated_scheduler_still_spreads_a_new_kernel() -> None:
    sched = Scheduler(None)  # simulated devices compile nothing
    assert {sched.decide(K, DEVICES, policy="auto").device for _ in range(3)} == set(DEVICES)


def test_building_without_a_listener_costs_no_event() -> None:
    start = time.perf_counter()
    with building("quick"):
        pass
    assert time.perf_counter() - start < 0.5


def test_a_device_clearly_slower_after_one_run_is_not_calibrated_further() -> None:
    sched = Scheduler(None, explore_new_kernels=False)
    for _ in range(sched.calibration_runs):
        sched.observe(K, "cpu:0", 1e-3)
    sched.observe(K, "opencl:0", 10e-3)  # one run, ten times slower: enough to know
    d = sched.decide(K, ["cpu:0", "opencl:0"], policy="auto")
    assert d.device == "cpu:0" and not d.calibrating, d.reason
    sched.observe(K, "cuda:0", 1.5e-3)  # close to the best: still worth calibrating
    d = sched.decide(K, ["cpu:0", "opencl:0", "cuda:0"], policy="auto")
    assert d.device == "cuda:0" and d.calibrating


def test_the_live_monitor_says_what_is_compiling() -> None:
    pytest.importorskip("ipywidgets")
    pytest.importorskip("jupyter_bokeh")
    import hermes_nb as hm

    monitor = hm.load_monitor(interval_s=0.05)
    try:
        recorder = CompileRecorder("k-3", "fused_stencil", "opencl:0")
        with recording(recorder), building("stencil kernel"):
            deadline = time.monotonic() + 10
            while "compiling fused_stencil on opencl:0" not in monitor.status.value:
                assert time.monotonic() < deadline, monitor.status.value
                time.sleep(0.02)
        deadline = time.monotonic() + 10
        while "compiling" in monitor.status.value:  # gone once the build ends
            assert time.monotonic() < deadline, monitor.status.value
            time.sleep(0.02)
    finally:
        monitor.close()


def test_cupy_kernels_report_their_first_launch_as_the_build() -> None:
    from hermes_nb.backends.cuda.first_launch import FirstLaunchTimed

    launches: list[int] = []
    kernel = FirstLaunchTimed(lambda n: launches.append(n) or n, "CUDA ElementwiseKernel")
    recorder = CompileRecorder("k-4", "fused_elementwise", "cuda:0")
    with recording(recorder):
        assert kernel(1) == 1 and kernel(2) == 2
    assert launches == [1, 2]
    assert [e.what for e in recorder.events] == ["CUDA ElementwiseKernel"]  # the first only


def test_background_builds_say_so() -> None:
    event = CompileRun("k-5@calibration", "max", "opencl:0", "x", "compile", 0.0, 1.0)
    assert event.label == "compiling max on opencl:0 (background calibration)"
