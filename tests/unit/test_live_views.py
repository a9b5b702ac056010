"""Notebook widgets without a kernel (ipywidgets' dummy comm): the live load monitor, view
widgets, the fusion view, Chrome traces, copies between devices, and progress bars."""

from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("ipywidgets", reason="the notebook widgets need ipywidgets (notebook extra)")
pytest.importorskip("jupyter_bokeh", reason="the notebook widgets need jupyter_bokeh")

import numpy as np
from bokeh.models import Div
from view_models import find_source

import hermes_nb as hm
from hermes_nb import widgets
from hermes_nb.runtime import last_profile
from hermes_nb.runtime.profile import KernelRun, Profile, TransferRun
from hermes_nb.runtime.trace import chrome_trace, write_trace

OPENCL = [d.id for d in hm.devices() if d.kind == "opencl"]
needs_opencl = pytest.mark.skipif(not OPENCL, reason="needs an OpenCL device (pip install pocl)")


def _wait_for(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# ---- the live load monitor -----------------------------------------------------------------

def test_load_monitor_streams_samples_and_stops_on_close() -> None:
    monitor = hm.load_monitor(interval_s=0.05)
    try:
        assert monitor.running
        assert "hermes-load-monitor" in monitor.view._dom_classes
        busy = find_source(monitor.view.bokeh_model, "load:cpu:0")
        first = len(busy.data["time"])
        _wait_for(lambda: monitor.updates >= 3)
        assert len(busy.data["time"]) >= first + 3  # the shown figure grows
        times = busy.data["time"]
        assert list(times) == sorted(times)
        assert set(monitor.sampler.history) == {d.id for d in hm.devices()}
    finally:
        monitor.close()
    assert not monitor.running
    assert "stopped" in monitor.status.value
    updates = monitor.updates
    time.sleep(0.2)
    assert monitor.updates == updates  # no sampling after close
    monitor.close()  # closing twice is harmless


def test_load_monitor_sees_work_on_a_device() -> None:
    monitor = hm.load_monitor(interval_s=0.02)
    try:
        a = np.random.default_rng(0).random((600, 600), dtype=np.float32)
        stop = threading.Event()

        def work() -> None:
            while not stop.is_set():
                (hm.asarray(a) @ hm.asarray(a)).numpy()

        worker = threading.Thread(target=work)
        worker.start()
        try:
            _wait_for(lambda: any(s.busy_fraction > 0 or s.queued > 0
                                  for s in monitor.sampler.history["cpu:0"]), timeout_s=30)
        finally:
            stop.set()
            worker.join()
        data = find_source(monitor.view.bokeh_model, "load:cpu:0").data
        _wait_for(lambda: max(data["busy"]) > 0 or max(data["queued"]) > 0, timeout_s=5)
    finally:
        monitor.close()


def test_load_monitor_rejects_bad_intervals() -> None:
    with pytest.raises(ValueError, match="interval_s and history_s must be > 0"):
        hm.load_monitor(interval_s=0)
    with pytest.raises(ValueError, match="history_s=-1"):
        hm.load_monitor(history_s=-1)


# ---- view widgets --------------------------------------------------------------------------

def _pipeline_tensor() -> hm.Tensor:
    image = hm.asarray(np.random.default_rng(1).random((64, 64), dtype=np.float32))
    return hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(image)


def test_show_gives_each_kind_of_view_its_class() -> None:
    t = _pipeline_tensor()
    plan = t.explain()
    t.numpy()
    profile = last_profile()
    sampler = hm.LoadSampler()
    sampler.sample()
    for obj, css in ((profile, "hermes-timeline"), (plan, "hermes-placement"),
                     (sampler, "hermes-load-monitor"), (None, "hermes-timeline")):
        widget = widgets.show(obj)
        assert widget._dom_classes == ("hermes-view", css)
        widget.close()
        widget.close()


def test_placement_view_of_a_run_shows_measured_times() -> None:
    t = (_pipeline_tensor() * 3).sum()
    t.numpy()
    profile = last_profile()
    widget = widgets.placement_view(profile)
    data = find_source(widget.bokeh_model, "kernels").data
    assert sorted(data["name"]) == sorted(k.key for k in profile.kernels)
    measured = {k.key: f"{k.seconds * 1e3:.3f} ms" for k in profile.kernels}
    assert dict(zip(data["name"], data["measured"], strict=True)) == measured
    assert dict(zip(data["name"], data["device"], strict=True)) == {
        k.key: k.device for k in profile.kernels}


def test_views_of_tensors_say_what_to_show() -> None:
    lazy = _pipeline_tensor()
    for widget in (widgets.show(lazy), widgets.placement_view(lazy.compute())):
        model = widget.bokeh_model
        assert isinstance(model, Div)
    assert "has not been computed" in widgets.show(lazy).bokeh_model.text
    assert "keeps its values, not its run" in widgets.show(lazy.compute()).bokeh_model.text
    planned = widgets.placement_view(lazy).bokeh_model  # a lazy tensor: where it would run
    assert list(find_source(planned, "kernels").data["ops"]) == [
        " + ".join(k.ops) for k in lazy.explain().kernels]


def test_fusion_view_of_a_pipeline_and_of_bad_input() -> None:
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=3), hm.sobel_edge_detection())
    widget = widgets.fusion_view(pipeline, shape=(32, 32))
    kernels = find_source(widget.bokeh_model, "fused").data
    assert len(kernels["name"]) == 1  # blur + Sobel fuse into one stencil kernel
    # each stage under the user's op name, not the convolution every one of them lowers to
    assert sorted(find_source(widget.bokeh_model, "unfused").data["op"]) == [
        "gaussian_blur", "hypot", "sobel", "sobel"]
    assert kernels["title"] == ["blur3+sobel+hypot"]
    for bad, words in (((), "got nothing"), (("text",), "got str"),
                       ((_pipeline_tensor().compute(),), "already computed")):
        shown = widgets.fusion_view(*bad).bokeh_model
        assert isinstance(shown, Div) and words in shown.text


# ---- copies and Chrome traces --------------------------------------------------------------

@needs_opencl
def test_copies_between_devices_are_profiled_and_traced(tmp_path) -> None:
    x = np.arange(4096, dtype=np.float32)
    with hm.device(OPENCL[0]):
        on_gpu = hm.asarray(x) * 2
    with hm.device("cpu:0"):
        back = on_gpu + 1
    np.testing.assert_array_equal(back.numpy(), x * 2 + 1)
    profile = last_profile()
    (copy,) = profile.transfers
    assert (copy.source, copy.device, copy.nbytes) == (OPENCL[0], "cpu:0", x.nbytes)
    assert copy.seconds >= 0
    trace = json.loads(write_trace(profile, tmp_path / "run.json").read_text())
    events = trace["traceEvents"]
    lanes = {e["args"]["name"]: e["tid"] for e in events if e["name"] == "thread_name"}
    assert set(lanes) == {OPENCL[0], "cpu:0"}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert sorted(e["args"]["key"] for e in kernels) == sorted(k.key for k in profile.kernels)
    (copied,) = [e for e in events if e.get("cat") == "transfer"]
    assert copied["tid"] == lanes["cpu:0"] and copied["args"]["bytes"] == x.nbytes
    for e in (*kernels, copied):
        assert e["ph"] == "X" and e["ts"] >= 0 and e["dur"] >= 0
    timeline = widgets.timeline(profile)
    assert find_source(timeline, "transfers").data["route"] == [f"{OPENCL[0]} → cpu:0"]


def test_chrome_trace_times_are_microseconds_from_the_start() -> None:
    profile = Profile(started=10.0, finished=10.5)
    profile.add(KernelRun("k-1", "add", "cpu:0", 10.1, 10.3, 0.25, "fastest"))
    profile.add(TransferRun("k-1 input 0", "opencl:0", "cpu:0", 10.0, 10.1, 64))
    events = chrome_trace(profile)["traceEvents"]
    (kernel,) = [e for e in events if e.get("cat") == "kernel"]
    assert kernel["ts"] == pytest.approx(1e5) and kernel["dur"] == pytest.approx(2e5)
    assert kernel["args"]["estimate_ms"] == pytest.approx(250)
    (copy,) = [e for e in events if e.get("cat") == "transfer"]
    assert copy["name"] == "copy opencl:0 → cpu:0" and copy["dur"] == pytest.approx(1e5)


def test_trace_errors_name_the_problem(tmp_path) -> None:
    with pytest.raises(TypeError, match="expected a hermes Profile, got str"):
        chrome_trace("nope")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_trace(Profile(), tmp_path / "missing" / "run.json")


# ---- progress bars -------------------------------------------------------------------------

def test_progress_bar_counts_finished_kernels(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hermes_nb.runtime as runtime

    bars = []

    def keep(setting, total):
        bar = runtime.progress.progress_bar(setting, total)
        bars.append(bar)
        return bar

    monkeypatch.setattr(runtime, "progress_bar", keep)
    a = hm.asarray(np.ones((64, 64), np.float32))
    with hm.options(progress=True):
        hm.compute((a * 2).sum(), (a @ a).max())
    kernels = len(last_profile().kernels)
    (bar,) = bars
    assert bar.total == bar.count == kernels > 1
    err = capsys.readouterr().err
    assert f"0/{kernels}" in err and "hermes run" in err  # shown from the start
    assert "hermes:" not in err  # the prefix of Hermes' error lines


def test_auto_progress_stays_quiet_for_short_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (hm.ones((8,)) * 2).numpy()
    with hm.options(progress=False):
        (hm.ones((8,)) * 3).numpy()
    assert capsys.readouterr().err == ""


def test_a_computed_tensor_leaves_the_last_profile_alone() -> None:
    a, _ = hm.compute(hm.ones((256,)) * 2, hm.ones((256,)) * 3)
    profile = last_profile()
    assert len(profile.kernels) > 0
    np.testing.assert_array_equal(a.numpy(), np.full(256, 2.0))
    assert last_profile() is profile


def test_bad_progress_option() -> None:
    with pytest.raises(ValueError, match="progress must be True, False or 'auto', got 'yes'"), \
            hm.options(progress="yes"):
        pass


def test_auto_progress_appears_once_a_run_is_long(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_nb.runtime import progress

    monkeypatch.setattr(progress, "AUTO_DELAY_S", 0.0)  # every run counts as long
    a = hm.asarray(np.ones((64, 64), np.float32))
    hm.compute((a * 2).sum(), (a @ a).max())
    assert "hermes run" in capsys.readouterr().err
