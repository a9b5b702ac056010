"""The Bokeh notebook views: data sources, lanes, DAG edges, hovers, empty inputs, offline HTML."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("bokeh", reason="the notebook views need bokeh (pip install bokeh)")

import numpy as np
from bokeh.models import Div, HoverTool
from view_models import find_source

import hermes_nb as hm
from hermes_nb import widgets
from hermes_nb.api.plan import Plan, fusion_plans
from hermes_nb.runtime.profile import KernelRun, Profile


def _tooltip_fields(model) -> set[str]:
    return {label for tool in model.select({"type": HoverTool}) for label, _ in tool.tooltips}


def _tensor() -> hm.Tensor:
    a = hm.asarray(np.arange(12.0).reshape(3, 4))
    return (a * 2 + 1).sum(axis=0) + hm.ones(4)


@pytest.fixture
def plans() -> tuple[Plan, Plan]:
    t = _tensor()
    with hm.options(fuse=False):
        unfused = t.explain()
    return unfused, t.explain()


@pytest.fixture
def profile() -> Profile:
    _tensor().compute()
    profile = hm.runtime.last_profile()
    assert profile is not None
    return profile


def _has_opencl() -> bool:
    return any(d.id == "opencl:0" for d in hm.devices())


# ---- timeline ------------------------------------------------------------------------------

def test_timeline_one_bar_per_kernel(profile: Profile) -> None:
    fig = widgets.timeline(profile)
    data = find_source(fig, "kernels").data
    assert list(data["key"]) == [k.key for k in profile.kernels]
    assert list(data["device"]) == [k.device for k in profile.kernels]
    assert list(data["lane"]) == [k.device for k in profile.kernels]
    for k, start, end in zip(profile.kernels, data["start_ms"], data["end_ms"], strict=True):
        # a kernel's bar starts where its run does: a build in this run has a bar of its own
        assert start == pytest.approx((k.run_start - profile.started) * 1e3)
        assert end == pytest.approx((k.end - profile.started) * 1e3)
        assert 0 <= start <= end
    assert set(fig.y_range.factors) == {k.device for k in profile.kernels}
    assert {"kernel", "op", "device", "time", "estimate", "why", "failed first on"} <= (
        _tooltip_fields(fig))


def test_timeline_lanes_and_colours_per_device() -> None:
    profile = Profile(started=10.0)
    profile.add(KernelRun("a-1", "add", "cpu:0", 10.001, 10.003, 0.002, "fastest"))
    profile.add(KernelRun("b-2", "sum", "opencl:0", 10.002, 10.010, None, "pinned",
                          failures=("cuda:0: out of memory",)))
    profile.add(KernelRun("c-3", "mul", "cpu:0", 10.004, 10.005, None, "fastest"))
    fig = widgets.timeline(profile)
    data = find_source(fig, "kernels").data
    assert list(data["lane"]) == ["cpu:0", "opencl:0", "cpu:0"]
    assert sorted(fig.y_range.factors) == ["cpu:0", "opencl:0"]
    assert data["start_ms"][1] == pytest.approx(2.0)
    assert data["end_ms"][1] == pytest.approx(10.0)
    assert data["color"][0] == data["color"][2] != data["color"][1]
    assert data["estimate"][0] == "2.000 ms" and data["estimate"][1] == "—"
    assert data["failures"][1] == "cuda:0: out of memory"
    assert data["failures"][0] == "—"


@pytest.mark.skipif(not _has_opencl(), reason="needs the opencl:0 device")
def test_timeline_real_profile_on_two_devices() -> None:
    with hm.device("opencl:0"):
        pinned = hm.ones((4,)) * 3
    (pinned + _tensor()).compute()
    profile = hm.runtime.last_profile()
    assert profile is not None
    data = find_source(widgets.timeline(profile), "kernels").data
    assert len(data["key"]) == len(profile.kernels)
    assert "opencl:0" in set(data["lane"])
    assert list(data["lane"]) == [k.device for k in profile.kernels]


# ---- placement DAG -------------------------------------------------------------------------

def test_placement_boxes_edges_and_depths(plans: tuple[Plan, Plan]) -> None:
    unfused, _ = plans
    fig = widgets.placement(unfused)
    boxes = find_source(fig, "kernels").data
    names = [k.name for k in unfused.kernels]
    assert list(boxes["name"]) == names
    assert list(boxes["device"]) == [k.device for k in unfused.kernels]
    expected = {(i, k.name) for k in unfused.kernels for i in k.inputs if i in names}
    assert expected, "the unfused plan should have kernel-to-kernel edges"
    edges = find_source(fig, "edges").data
    assert set(zip(edges["start"], edges["end"], strict=True)) == expected
    assert len(edges["start"]) == len(expected)
    x = dict(zip(boxes["name"], boxes["x"], strict=True))
    for a, b in expected:  # left to right: every edge goes to a deeper column
        assert x[b] >= x[a] + 1
    for k in unfused.kernels:
        kernel_inputs = [i for i in k.inputs if i in names]
        assert x[k.name] == (1 + max(x[i] for i in kernel_inputs) if kernel_inputs else 0)
    assert {"ops", "output", "traffic", "device", "why", "estimated", "measured",
            "all estimates"} <= _tooltip_fields(fig)


def test_placement_hover_values(plans: tuple[Plan, Plan]) -> None:
    _, fused = plans
    boxes = find_source(widgets.placement(fused), "kernels").data
    for i, k in enumerate(fused.kernels):
        assert boxes["ops"][i] == " + ".join(k.ops)
        assert boxes["shape"][i] == str(list(k.shape))
        assert boxes["dtype"][i] == k.dtype
        assert boxes["reason"][i] == k.reason
        for dev in k.estimates:
            assert dev in boxes["estimates"][i]


def test_depths_of_a_diamond() -> None:
    from hermes_nb.api.plan import Kernel
    from hermes_nb.widgets.dag import depths

    def kernel(name: str, *inputs: str) -> Kernel:
        return Kernel(name, ("add",), "cpu:0", "", inputs, (1,), "float64", 8)

    plan = [kernel("a", "src"), kernel("b", "a"), kernel("c", "a", "b"), kernel("d", "src")]
    assert depths(plan) == {"a": 0, "b": 1, "c": 2, "d": 0}


# ---- load ----------------------------------------------------------------------------------

def test_load_figure_sources_per_device_and_stream() -> None:
    sampler = hm.LoadSampler(interval_s=0.01, history_s=1.0)
    sampler.sample()
    sampler.sample()
    layout = widgets.load_figure(sampler)
    assert not isinstance(layout, Div)
    for dev, snaps in sampler.history.items():
        data = find_source(layout, f"load:{dev}").data
        assert len(data["time"]) == len(snaps) == 2
        assert list(data["busy"]) == [s.busy_fraction for s in snaps]
        assert list(data["memory_mb"]) == [s.memory_in_use / 1e6 for s in snaps]
    queue = find_source(layout, "queue").data
    assert list(queue["device"]) == list(sampler.history)
    sampler.sample()
    assert widgets.stream_load(layout, sampler) == len(sampler.history)
    for dev in sampler.history:
        assert len(find_source(layout, f"load:{dev}").data["time"]) == 3
    assert widgets.stream_load(layout, sampler) == 0  # nothing newer


# ---- fusion --------------------------------------------------------------------------------

def test_fusion_diagram_boxes_each_kernel_around_its_ops() -> None:
    image = hm.asarray(np.random.default_rng(0).random((64, 64), dtype=np.float32))
    edges = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(image)
    t = (edges * 2 + 1).sum()
    unfused, fused = fusion_plans(t)
    layout = widgets.fusion_diagram(unfused, fused)
    ops = find_source(layout, "unfused").data
    kernels = find_source(layout, "fused").data
    assert list(kernels["name"]) == [k.name for k in fused.kernels]
    assert len(fused.kernels) < len(unfused.kernels)
    # provenance: the stencil kernel holds the three convolutions, the hypot and the gain
    stencil = next(k for k in fused.kernels if k.ops[0] == "conv2d")
    held = {u.name: u.ops[0] for u in unfused.kernels if u.name in stencil.members}
    assert sorted(held.values()) == ["add", "conv2d", "conv2d", "conv2d", "hypot", "multiply"]
    # every unfused op is drawn inside the box of the kernel holding it
    box = {n: (x, y, h) for n, x, y, h in zip(kernels["name"], kernels["x"], kernels["y"],
                                                kernels["h"], strict=True)}
    for name, x, y, kernel in zip(ops["name"], ops["x"], ops["y"], ops["kernel"], strict=True):
        bx, by, bh = box[kernel]
        assert name in next(k.members for k in fused.kernels if k.name == kernel)
        assert abs(x - bx) < 1e-9 and by - bh / 2 < y < by + bh / 2
    assert set(ops["name"]) == {k.name for k in unfused.kernels}
    # the op graph's edges: each unfused kernel-to-kernel input
    names = {k.name for k in unfused.kernels}
    expected = {(i, k.name) for k in unfused.kernels for i in k.inputs if i in names}
    links = find_source(layout, "links").data
    assert set(zip(links["start"], links["end"], strict=True)) == expected


def test_fusion_diagram_shows_the_selected_kernels_source() -> None:
    from bokeh.models import CustomJS, PreText, TapTool

    # above cpu:0's JIT size, so the fused stencil is generated code there
    image = hm.asarray(np.random.default_rng(0).random((320, 320), dtype=np.float32))
    t = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(image)
    unfused, fused = fusion_plans(t)
    layout = widgets.fusion_diagram(unfused, fused)
    kernels = find_source(layout, "fused")
    assert list(kernels.data["source"]) == [
        k.source or f"{k.name} runs as a library call on {k.device}: no generated source"
        for k in fused.kernels]
    assert any("conv" in s or "def " in s or "__kernel" in s for s in kernels.data["source"])
    assert layout.select_one({"type": TapTool}) is not None
    code = layout.select_one({"name": "source", "type": PreText})
    (callback,) = kernels.selected.js_property_callbacks["change:indices"]
    assert isinstance(callback, CustomJS) and callback.args["code"] is code
    assert "source.data.source[i]" in callback.code


def test_fusion_diagram_of_separate_plans_matches_ops_by_name(plans: tuple[Plan, Plan]) -> None:
    unfused, fused = plans  # explained separately: their keys differ
    layout = widgets.fusion_diagram(unfused, fused)
    ops = find_source(layout, "unfused").data
    fused_ops = {k.name: set(k.ops) for k in fused.kernels}
    for op, kernel in zip(ops["op"], ops["kernel"], strict=True):
        if kernel != "—":
            assert op in fused_ops[kernel]
    assert set(ops["name"]) == {k.name for k in unfused.kernels}


# ---- empty inputs --------------------------------------------------------------------------

@pytest.mark.parametrize(("view", "arg", "words"), [
    (widgets.timeline, None, "nothing has run yet"),
    (widgets.timeline, Profile(), "nothing has run yet"),
    (widgets.timeline, "nonsense", "expected a hermes Profile"),
    (widgets.placement, None, "nothing to place"),
    (widgets.placement, Plan([]), "no kernels"),
    (widgets.placement, 3, "expected a hermes Plan"),
    (widgets.load_figure, None, "no load samples yet"),
])
def test_views_of_nothing_say_so(view, arg, words: str) -> None:
    shown = view(arg)
    assert isinstance(shown, Div)
    assert words in shown.text


def test_load_figure_of_an_unsampled_sampler() -> None:
    shown = widgets.load_figure(hm.LoadSampler())
    assert isinstance(shown, Div) and "no load samples yet" in shown.text


def test_fusion_diagram_of_nothing(plans: tuple[Plan, Plan]) -> None:
    assert isinstance(widgets.fusion_diagram(None, None), Div)
    assert isinstance(widgets.fusion_diagram(plans[0], Plan([])), Div)


# ---- HTML ----------------------------------------------------------------------------------

def test_to_html_is_offline(profile: Profile, plans: tuple[Plan, Plan]) -> None:
    from bokeh import __version__

    for obj in (widgets.timeline(profile), profile, plans[0],
                widgets.fusion_diagram(*plans), None):
        page = widgets.to_html(obj)
        assert "cdn.bokeh.org" not in page
        assert "<script" in page and "Bokeh" in page
        assert f'version = "{__version__}"' in page or __version__ in page
        assert len(page) > 500_000  # BokehJS itself is in the page
        assert not re.search(r"<(script|link)[^>]*(src|href)=[\"']?(https?:)?//", page)
