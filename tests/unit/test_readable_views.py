"""The views a profiling user reads: one colour per device and a device legend everywhere,
kernels named after the user's stages and variables (the same name in every view and the
trace), a task stream across runs, the monitor's units and breaks, one memory figure."""

from __future__ import annotations

import itertools
import math
import re

import pytest

pytest.importorskip("bokeh", reason="the notebook views need bokeh (pip install bokeh)")

import numpy as np
from bokeh.models import Legend, Span
from view_models import find_source

import hermes_nb as hm
from hermes_nb import widgets
from hermes_nb.api.plan import fusion_plans
from hermes_nb.backends.load import LoadSnapshot
from hermes_nb.runtime import profile as profiles
from hermes_nb.runtime.plan import Kernel, Plan
from hermes_nb.runtime.profile import CompileRun, KernelRun, Profile
from hermes_nb.runtime.trace import chrome_trace
from hermes_nb.widgets import load as load_view
from hermes_nb.widgets import palette


def _legend(model) -> list[str]:
    legend = model.select_one({"name": "devices", "type": Legend})
    assert legend is not None, "no device legend"
    return [item.label["value"] for item in legend.items]


def _kernel(key: str, device: str, ops: tuple[str, ...], members: tuple[str, ...] = (),
            inputs: tuple[str, ...] = (), names: tuple[str, ...] = ()) -> Kernel:
    return Kernel(key, ops, device, "test", inputs, (4,), "float32", 16, members=members,
                  names=names)


def _profile(t0: float, lanes: list[str], *, variables: dict[str, str] | None = None) -> Profile:
    """A synthetic run: one kernel per device in ``lanes`` (in that order), back to back,
    the first after a compile."""
    kernels = [_kernel(f"hermes-k{i}-{t0}", dev, ("multiply", "pow", "sum"),
                       members=(f"node-{i}",)) for i, dev in enumerate(lanes)]
    p = Profile(plan=Plan(kernels), started=t0, variables=dict(variables or {}))
    p.add(CompileRun(kernels[0].name, "fused_reduce", lanes[0], "kernel", "compile",
                     t0 + 0.001, t0 + 0.004))
    for i, k in enumerate(kernels):
        p.add(KernelRun(k.name, "fused_reduce", k.device, t0 + 0.004 + 0.002 * i,
                        t0 + 0.006 + 0.002 * i, None, "test"))
    p.finished = t0 + 0.01 + 0.002 * len(lanes)
    return p


# ---- palette and legends -----------------------------------------------------------------

def test_palette_is_colour_blind_safe_and_stable_per_device() -> None:
    first = palette.device_colors(["opencl:0", "cpu:0"])
    again = palette.device_colors(["cuda:0", "cpu:0", "opencl:10", "opencl:0", "opencl:2"])
    assert first["cpu:0"] == again["cpu:0"] == palette.OKABE_ITO[0]
    assert first["opencl:0"] == again["opencl:0"]  # the same colour whatever else is shown
    assert len(set(again.values())) == 5 and set(again.values()) <= set(palette.OKABE_ITO)
    assert palette.device_order(["opencl:10", "cuda:0", "opencl:2", "cpu:0"]) == [
        "cpu:0", "opencl:2", "opencl:10", "cuda:0"]
    # one colour per device across views: the views' colours come from this machine's list
    from hermes_nb.widgets._common import device_colors

    assert device_colors(["cpu:0"])["cpu:0"] == device_colors(["opencl:0", "cpu:0"])["cpu:0"] \
        == palette.OKABE_ITO[0]


def test_device_legend_on_timeline_placement_and_fusion() -> None:
    p = _profile(100.0, ["opencl:0", "cpu:0"])
    line = widgets.timeline(p)
    assert _legend(line) == ["cpu:0", "opencl:0"]
    dag = widgets.placement(p)
    assert _legend(dag) == ["cpu:0", "opencl:0"]
    colours = dict(zip(find_source(line, "kernels").data["device"],
                       find_source(line, "kernels").data["color"]))
    assert colours == dict(zip(find_source(dag, "kernels").data["device"],
                               find_source(dag, "kernels").data["color"]))
    image = hm.asarray(np.random.default_rng(0).random((32, 32), dtype=np.float32))
    plans = fusion_plans(hm.sobel_edge_detection(hm.gaussian_blur(image, 5)))
    fused = widgets.fusion_diagram(*plans)
    assert _legend(fused) == palette.device_order(k.device for k in plans[1].kernels)


# ---- names -----------------------------------------------------------------------------

def test_fusion_diagram_names_blur_and_sobel_stages() -> None:
    image = hm.asarray(np.random.default_rng(0).random((32, 32), dtype=np.float32))
    edges = hm.sobel_edge_detection(hm.gaussian_blur(image, kernel_size=5))
    unfused, fused = fusion_plans(edges)
    diagram = widgets.fusion_diagram(unfused, fused)
    ops = find_source(diagram, "unfused").data["op"]
    assert sorted(ops) == ["gaussian_blur", "hypot", "sobel", "sobel"] and "conv2d" not in ops
    kernels = find_source(diagram, "fused").data
    assert kernels["title"] == ["blur5+sobel+hypot"]
    assert kernels["label"][0].startswith("blur5+sobel+hypot · ")
    # a convolution with the user's own weights stays "conv2d"
    plain = hm.conv2d(image, np.ones((3, 3)) / 9)
    assert fusion_plans(plain)[1].kernels[-1].title == "conv2d"


def test_kernel_names_are_stable_across_graphs() -> None:
    image = hm.asarray(np.random.default_rng(0).random((32, 32), dtype=np.float32))
    titles = {k.title for _ in range(2)
              for k in hm.sobel_edge_detection(hm.gaussian_blur(image, 5)).explain().kernels}
    assert titles == {"blur5+sobel+hypot"}
    k = _kernel("x", "cpu:0", ("a", "b", "c", "d", "e", "a"))
    assert k.title == "a+b+c+d+…"


def test_one_name_per_kernel_in_placement_timeline_and_trace() -> None:
    p = _profile(200.0, ["cpu:0", "opencl:0"], variables={"node-0": "edges"})
    names = p.kernel_names()
    assert names == {"hermes-k0-200.0": "edges: multiply+pow+sum",
                     "hermes-k1-200.0": "multiply+pow+sum"}
    dag = find_source(widgets.placement(p), "kernels").data
    line = find_source(widgets.timeline(p), "kernels").data
    trace = {e["args"]["key"]: e["name"] for e in chrome_trace(p)["traceEvents"]
             if e.get("cat") == "kernel"}
    assert dict(zip(dag["name"], dag["title"])) == dict(zip(line["key"], line["name"])) \
        == trace == names
    # boxes carry the name and the measured time
    assert dag["label"][0] == "edges: multiply+pow+sum\n2.00 ms"


# ---- timeline ----------------------------------------------------------------------------

def test_timeline_accumulates_runs_with_separators_and_stable_lanes(monkeypatch) -> None:
    monkeypatch.setattr(profiles, "_recent", [])
    runs = [_profile(300.0 + i, lanes) for i, lanes in enumerate(
        (["opencl:0", "cpu:0"], ["cpu:0"], ["cpu:0", "opencl:0"]))]
    profiles._recent.extend(runs)
    assert profiles.recent_profiles(runs[1]) == runs[:2]
    fig = widgets.timeline(runs[-1], runs=3)
    data = find_source(fig, "kernels").data
    assert sorted(set(data["run"])) == [1, 2, 3] and len(data["key"]) == 5
    assert list(fig.y_range.factors) == ["opencl:0", "cpu:0"]  # top to bottom: device order
    for a, b in itertools.pairwise(runs):  # each run after the one before it, none overlapping
        end_a = max(e for e, r in zip(data["end_ms"], data["run"]) if r == runs.index(a) + 1)
        start_b = min(s for s, r in zip(data["start_ms"], data["run"]) if r == runs.index(b) + 1)
        assert end_a < start_b
    separators = [m for m in fig.renderers + fig.center if isinstance(m, Span)]
    assert len(separators) == 3
    # lanes do not reorder between runs whichever device ran first
    assert list(widgets.timeline(runs[0]).y_range.factors) == ["opencl:0", "cpu:0"]
    # one run alone by default, and a list of profiles is a stream too
    assert set(find_source(widgets.timeline(runs[-1]), "kernels").data["run"]) == {1}
    assert len(find_source(widgets.timeline(runs), "kernels").data["key"]) == 5


def test_timeline_labels_bars_with_room_and_outlines_them() -> None:
    p = _profile(400.0, ["cpu:0"])
    fig = widgets.timeline(p)
    data = find_source(fig, "kernels").data
    assert data["label"] == ["multiply+pow+sum 2.000 ms"]
    bars = next(r for r in fig.renderers if r.name == "kernels")
    assert bars.glyph.line_color == "white"  # back-to-back kernels stay apart
    compiles = find_source(fig, "compiles").data
    assert compiles["text"] == ["compiling 3 ms"]
    # a bar without room keeps its name for the hover only; the last one has the margin
    crowded = Profile(plan=Plan([_kernel(f"k{i}", "cpu:0", ("add",)) for i in range(40)]),
                      started=0.0)
    for i in range(40):
        crowded.add(KernelRun(f"k{i}", "add", "cpu:0", i * 0.001, i * 0.001 + 0.001, None, ""))
    crowded.finished = 0.04
    labels = find_source(widgets.timeline(crowded), "kernels").data["label"]
    assert set(labels[:-1]) == {""} and labels[-1] == "add 1.000 ms"  # the last: the margin


# ---- monitor -----------------------------------------------------------------------------

def _snap(device: str, t: float, busy: float, memory: int = 0) -> LoadSnapshot:
    return LoadSnapshot(device, 1, busy, 0.0, memory, 0, t)


def test_monitor_units_breaks_and_stop() -> None:
    sampler = hm.LoadSampler(interval_s=0.5, history_s=60)
    sampler.history = {"opencl:0": __import__("collections").deque(
        [_snap("opencl:0", 1000.0, 0.25, 3 * 10**9), _snap("opencl:0", 1000.5, 0.5, 3 * 10**9),
         _snap("opencl:0", 1010.0, 1.0, 4 * 10**9)], maxlen=120),
        "cpu:0": __import__("collections").deque(
        [_snap("cpu:0", 1000.0, 0.0), _snap("cpu:0", 1000.5, 0.1)], maxlen=120)}
    layout = widgets.load_figure(sampler)
    gpu = find_source(layout, "load:opencl:0").data
    assert gpu["busy_pct"][:2] == [25.0, 50.0]
    assert math.isnan(gpu["busy_pct"][2]) and gpu["busy_pct"][3] == 100.0  # a 9.5 s gap breaks
    assert gpu["memory"][0] == 3.0  # GB
    figs = [f for f in layout.children if getattr(f, "title", None) is not None]
    assert [f.title.text for f in figs[:2]] == ["cpu:0", "opencl:0"]  # device order
    labels = [ax.axis_label for f in figs[:2] for ax in f.yaxis]
    # cpu:0's axis is this process's RSS, in MB or GB by its size (a full test run passes 1 GB)
    assert "busy %" in labels and "memory GB" in labels
    assert {"process RSS MB", "process RSS GB"} & set(labels), labels
    assert all("date" not in type(ax.formatter).__name__.lower() for f in figs[:2]
               for ax in f.xaxis)
    cpu = find_source(layout, "load:cpu:0").data
    assert cpu["memory"][-1] > 0  # this process's RSS
    # streaming after a pause: a break first, then the sample
    sampler.history["opencl:0"].append(_snap("opencl:0", 1030.0, 0.5, 4 * 10**9))
    assert widgets.stream_load(layout, sampler) == 1
    assert math.isnan(gpu["busy_pct"][-2]) and gpu["busy_pct"][-1] == 50.0
    load_view.stop_load(layout)
    assert set(find_source(layout, "queue").data["queued"]) == {0}
    assert layout.select_one({"name": "queue_figure"}).title.text == load_view.STOPPED


# ---- one memory figure ------------------------------------------------------------------

def test_memory_figure_is_one_across_cli_magic_and_server(capsys) -> None:
    from hermes_nb import cli
    from hermes_nb.backends import devices
    from hermes_nb.backends.memory import memory_text
    from hermes_nb.notebook.reprs import device_table
    from hermes_nb.server.manager import device_rows

    assert cli.main(["devices"]) == 0
    printed = dict(re.findall(r"^(\S+)\s.*?memory=(.+? GiB(?: \(host\))?)", capsys.readouterr().out,
                              re.M))
    magic = {row[0]: row[2] for row in device_table().rows()}
    server = {row["id"]: row["memory"] for row in device_rows()}
    expected = {d.id: memory_text(d) for d in devices()}
    assert printed == magic == server == expected
    assert expected["cpu:0"].endswith("(host)")
