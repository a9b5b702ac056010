"""The pipeline builder: stages, parameter ranges, preview worker, exported code, devices."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("ipywidgets", reason="the pipeline builder needs ipywidgets (notebook extra)")
pytest.importorskip("PIL", reason="the pipeline builder's preview needs Pillow (notebook extra)")
pytest.importorskip("cv2", reason="OpenCV is the reference (test extra)")

import cv2
import ipywidgets as w

import hermes_nb as hm
from hermes_nb.data import sample_image
from hermes_nb.ir.node import toposort
from hermes_nb.widgets.builder_catalogue import CATALOGUE, UNARY

ATOL = 1e-4  # float32 stencils: summation order differs from OpenCV's


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.ascontiguousarray(sample_image()[::8, ::8])  # 128×128: the sample, smaller


@pytest.fixture
def builder(image):
    b = hm.PipelineBuilder(image, device="cpu:0")
    yield b
    b.close()


def _run(code: str) -> hm.Pipeline:
    namespace: dict = {}
    exec(code, namespace)  # the exported snippet, in a fresh namespace (test only)
    return namespace["pipeline"]


def _graph(pipeline: hm.Pipeline) -> list[tuple]:
    """The op graph ``pipeline`` builds, by structure: equal graphs compute equal results."""
    with hm.device("cpu:0"):
        out = pipeline(hm.asarray(np.zeros((8, 8), np.float32)))
    nodes = toposort([out.node])
    index = {id(n): i for i, n in enumerate(nodes)}

    def attrs(n):
        return sorted((k, np.asarray(v).tolist() if isinstance(v, np.ndarray) else v)
                      for k, v in n.attrs.items())

    return [(n.op, n.shape, n.dtype.name, repr(attrs(n)), tuple(index[id(i)] for i in n.inputs))
            for n in nodes]


def _classes(widget) -> set[str]:
    found = set(getattr(widget, "_dom_classes", ()))
    for child in getattr(widget, "children", ()):
        found |= _classes(child)
    return found


def _reference_edges(img: np.ndarray, k: int) -> np.ndarray:
    blur = cv2.GaussianBlur(img, (k, k), 0)
    gx = cv2.Sobel(blur, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(blur, cv2.CV_32F, 0, 1, ksize=3)
    return np.hypot(gx, gy)


# ---- construction ----------------------------------------------------------------------------
def test_import_hermes_does_not_import_ipywidgets():
    code = "import sys, hermes_nb; assert 'ipywidgets' not in sys.modules; hermes_nb.PipelineBuilder"
    done = subprocess.run([sys.executable, "-c", code + "; assert 'ipywidgets' in sys.modules"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_default_image_is_the_packaged_sample():
    b = hm.PipelineBuilder()
    try:
        assert b.image.shape == (1024, 1024) and b.image.dtype == np.float32
        assert 0.0 <= b.image.min() < 0.1 and 0.9 < b.image.max() <= 1.0
        b.wait()
        np.testing.assert_array_equal(b.result, b.image)  # no stages: the identity
        assert b.error is None
    finally:
        b.close()


def test_integer_images_are_scaled_to_unit_range():
    pixels = np.array([[0, 128], [255, 64]], np.uint8)
    b = hm.PipelineBuilder(pixels)
    try:
        np.testing.assert_allclose(b.image, pixels / 255.0, rtol=1e-6)
        assert b.image.dtype == np.float32
    finally:
        b.close()
    with pytest.raises(ValueError, match=r"expected an image \(H, W\)"):
        hm.PipelineBuilder(np.zeros(5, np.float32))


def test_parts_carry_stable_css_classes(builder):
    builder.add("gaussian_blur")
    classes = _classes(builder)
    for part in ("", "-preview", "-code", "-plan", "-palette", "-add", "-device", "-policy",
                 "-stages", "-stage", "-stage-gaussian_blur", "-before", "-after", "-status",
                 "-error", "-up", "-down", "-remove", "-param-kernel_size"):
        assert f"hermes-builder{part}" in classes, part


# ---- stages: add, remove, reorder ------------------------------------------------------------
def test_add_remove_and_reorder(builder):
    builder.add("gaussian_blur", kernel_size=7).add(hm.sobel(axis=-2))
    builder.add(hm.compose(hm.sobel_edge_detection(), hm.conv2d(kernel=[[1.0]])))
    assert [s.name for s in builder.stages] == ["gaussian_blur", "sobel", "sobel_edge_detection",
                                                "conv2d"]
    assert builder.stages[0].params["kernel_size"] == 7
    builder.move(3, 0)
    assert [s.name for s in builder.stages] == ["conv2d", "gaussian_blur", "sobel",
                                                "sobel_edge_detection"]
    builder.remove(-1).remove(1)
    assert [s.name for s in builder.stages] == ["conv2d", "sobel"]
    titles = [box.children[0].children[0].value for box in builder._stages.children]
    assert "1. conv2d" in titles[0] and "2. sobel" in titles[1]
    with pytest.raises(IndexError, match="stage index 5 is out of range for 2 stage"):
        builder.remove(5)
    assert isinstance(builder.pipeline, hm.Pipeline)
    assert builder.pipeline.stages == builder.stages


@pytest.mark.parametrize("bad", ["1", None, [1], 1.0, True])
def test_bad_positions_raise_and_change_nothing(builder, bad):
    builder.add("gaussian_blur", kernel_size=5).add(hm.sobel(axis=-2)).add("gain_offset")
    before = tuple(builder.stages)
    code = builder.to_code()
    with pytest.raises(TypeError, match="to must be an integer"):
        builder.move(0, bad)
    with pytest.raises(TypeError, match="stage index must be an integer"):
        builder.move(bad, 0)
    with pytest.raises(TypeError, match="stage index must be an integer"):
        builder.remove(bad)
    with pytest.raises(TypeError, match="stage index must be an integer"):
        builder.set(bad, kernel_size=3)
    assert builder.stages == before and builder.to_code() == code
    builder.move(np.int64(2), 0)  # NumPy integers are positions too
    assert [s.name for s in builder.stages] == [before[2].name, before[0].name, before[1].name]


def test_buttons_move_and_remove(builder):
    builder.add("gaussian_blur").add("clip").add("gamma")

    def click(stage: int, cls: str) -> None:
        box = builder._stages.children[stage]
        (button,) = [b for b in box.children[0].children if f"hermes-builder-{cls}" in b._dom_classes]
        button.click()

    click(0, "down")
    assert [s.name for s in builder.stages] == ["clip", "gaussian_blur", "gamma"]
    click(0, "up")  # already first: nothing moves
    click(2, "up")
    assert [s.name for s in builder.stages] == ["clip", "gamma", "gaussian_blur"]
    click(1, "remove")
    assert [s.name for s in builder.stages] == ["clip", "gaussian_blur"]


def test_palette_add_button_adds_the_selected_stage(builder):
    palette = next(c for c in builder.children[0].children if "hermes-builder-palette" in c._dom_classes)
    add = next(c for c in builder.children[0].children if "hermes-builder-add" in c._dom_classes)
    assert {v for _, v in palette.options} == set(CATALOGUE)
    palette.value = "threshold"
    add.click()
    assert [s.name for s in builder.stages] == ["threshold"]
    assert builder.stages[0].params == {"thresh": 0.5, "maxval": 1.0, "mode": "binary"}


# ---- parameters: controls and ranges ---------------------------------------------------------
@pytest.mark.parametrize(("name", "params", "message"), [
    ("gaussian_blur", {"kernel_size": 4},
     "kernel_size=4 is out of range; allowed: odd integers from 1 to 31"),
    ("gaussian_blur", {"kernel_size": 33},
     "kernel_size=33 is out of range; allowed: odd integers from 1 to 31"),
    ("gaussian_blur", {"sigma": -1.0},
     "sigma=-1.0 is out of range; allowed: numbers from 0.0 to 20.0 or None"),
    ("gain_offset", {"gain": 100.0}, "gain=100.0 is out of range; allowed: numbers from -20.0 to 20.0"),
    ("gain_offset", {"offset": float("nan")}, "offset=nan is out of range"),
    ("threshold", {"mode": "otsu"}, "mode='otsu' is not allowed; allowed: one of 'binary', 'binary_inv'"),
    ("sobel", {"axis": 0}, "axis=0 is not allowed; allowed: one of -1, -2"),
    ("sobel", {"border": "wrap"}, "border='wrap' is not allowed; allowed: one of 'reflect101'"),
    ("conv2d", {"kernel": [[1.0, 2.0]]}, r"kernel of shape \(1, 2\) is out of range; allowed: a 2-D "
                                         "matrix with odd sizes from 1 to 15"),
    ("conv2d", {"kernel": np.ones((17, 17))}, r"kernel of shape \(17, 17\) is out of range"),
    ("clip", {"min": 2.0, "max": 1.0}, "min=2.0 is above max=1.0"),
    ("gamma", {"gamma": 0.0}, "gamma=0.0 is out of range; allowed: numbers from 0.05 to 10.0"),
    ("unary", {"fn": "eval"}, "fn='eval' is not allowed"),
    ("clip", {"low": 0.0}, r"unknown parameter\(s\) \['low'\]; allowed: min, max"),
])
def test_out_of_range_parameters_raise_value_error(builder, name, params, message):
    with pytest.raises(ValueError, match=rf"^{name}: {message}"):
        builder.add(name, **params)
    assert builder.stages == ()


def test_wrong_types_and_unknown_stages(builder):
    with pytest.raises(TypeError, match=r"gaussian_blur: kernel_size must be an int, got 5\.0"):
        builder.add("gaussian_blur", kernel_size=5.0)
    with pytest.raises(ValueError, match="unknown stage 'median'; choose one of gaussian_blur"):
        builder.add("median")
    with pytest.raises(TypeError, match="add: expected a stage name, Stage or Pipeline"):
        builder.add(42)


def test_set_validates_and_keeps_the_old_value(builder):
    builder.add("gaussian_blur", kernel_size=5)
    with pytest.raises(ValueError, match="gaussian_blur: kernel_size=6 is out of range"):
        builder.set(0, kernel_size=6)
    assert builder.stages[0].params["kernel_size"] == 5
    builder.set(0, kernel_size=9, border="replicate")
    assert builder.stages[0].params == {"kernel_size": 9, "sigma": None, "border": "replicate"}
    slider = builder._entries[0].controls["kernel_size"]
    assert slider.value == 9  # the control follows a change made in code


def test_controls_are_bounded_widgets(builder):
    builder.add("gaussian_blur").add("gain_offset").add("sobel").add("conv2d")
    ks = builder._entries[0].controls["kernel_size"]
    assert isinstance(ks, w.IntSlider) and (ks.min, ks.max, ks.step) == (1, 31, 2)
    sigma = builder._entries[0].controls["sigma"]
    assert isinstance(sigma, w.FloatSlider) and (sigma.min, sigma.max) == (0.0, 20.0)
    gain = builder._entries[1].controls["gain"]
    assert isinstance(gain, w.FloatSlider) and (gain.min, gain.max, gain.value) == (-20.0, 20.0, 1.0)
    gain.value = 1e9  # the slider itself clamps
    assert builder.stages[1].params["gain"] == 20.0
    axis = builder._entries[2].controls["axis"]
    assert isinstance(axis, w.Dropdown) and [v for _, v in axis.options] == [-1, -2]
    assert isinstance(builder._entries[3].controls["kernel"], w.Textarea)


def test_an_even_kernel_size_from_the_widget_is_refused_and_reverted(builder):
    builder.add("gaussian_blur", kernel_size=5)
    entry = builder._entries[0]
    entry.controls["kernel_size"].value = 4  # the browser's step=2 never sends this; code might
    assert builder.stages[0].params["kernel_size"] == 5
    assert entry.controls["kernel_size"].value == 5
    assert "kernel_size=4 is out of range" in entry.error.value
    entry.controls["kernel_size"].value = 7
    assert builder.stages[0].params["kernel_size"] == 7 and entry.error.value == ""


def test_sigma_slider_at_zero_means_automatic(builder):
    builder.add("gaussian_blur", sigma=1.5)
    sigma = builder._entries[0].controls["sigma"]
    assert sigma.value == 1.5
    sigma.value = 0.0
    assert builder.stages[0].params["sigma"] is None


def test_kernel_text_is_parsed_not_evaluated(builder):
    builder.add("conv2d")
    entry = builder._entries[0]
    text = entry.controls["kernel"]
    text.value = "1, 2, 1; 2 4 2\n1 2 1"
    assert builder.stages[0].params["kernel"] == [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    text.value = "__import__('os').getcwd()"
    assert "could not convert string to float" in entry.error.value
    text.value = "1 2; 3 4"
    assert r"kernel of shape (2, 2) is out of range" in entry.error.value
    assert builder.stages[0].params["kernel"][1] == [2.0, 4.0, 2.0]  # the last good kernel stays
    assert text.value == "1 2 1\n2 4 2\n1 2 1"


# ---- exported code ---------------------------------------------------------------------------
def test_to_code_runs_and_matches_builder_and_opencv(builder, image):
    builder.add("gaussian_blur", kernel_size=5).add("sobel_edge_detection")
    code = builder.to_code()
    assert code.startswith("import hermes_nb as hm\n") and "eval" not in code
    pipeline = _run(code)
    assert pipeline.stages == builder.pipeline.stages
    with hm.device("cpu:0"):
        ours = builder.pipeline(image).numpy()
        exported = pipeline(image).numpy()
    np.testing.assert_array_equal(exported, ours)
    np.testing.assert_allclose(ours, _reference_edges(image, 5), atol=ATOL)
    builder.wait()
    np.testing.assert_array_equal(builder.result, ours)  # the preview shows the same thing


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_exported_code_builds_the_same_graph_for_every_stage(builder, name):
    options = {
        "threshold": [{"mode": m, "thresh": 0.25, "maxval": 2.0} for m in
                      ("binary", "binary_inv", "trunc", "tozero", "tozero_inv")],
        "unary": [{"fn": f} for f in UNARY],
        "gaussian_blur": [{"kernel_size": 7, "sigma": 1.25, "border": "constant"}],
        "conv2d": [{"kernel": [[0, 1, 0], [1, -4, 1], [0, 1, 0]], "border": "reflect"}],
    }.get(name, [{}])
    for params in options:
        builder.clear().add(name, **params)
        exported = _run(builder.to_code())
        assert exported.stages == builder.pipeline.stages
        assert _graph(exported) == _graph(builder.pipeline), params


def test_elementwise_stages_match_numpy_and_opencv(builder, image):
    builder.add("gaussian_blur", kernel_size=3).add("gain_offset", gain=3.0, offset=-0.25)
    builder.add("clip", min=0.0, max=1.0).add("gamma", gamma=0.5)
    builder.add("threshold", thresh=0.4, maxval=1.0, mode="tozero").add("unary", fn="tanh")
    with hm.device("cpu:0"):
        ours = _run(builder.to_code())(image).numpy()
    x = cv2.GaussianBlur(image, (3, 3), 0) * np.float32(3.0) - np.float32(0.25)
    x = np.clip(x, 0.0, 1.0) ** np.float32(0.5)
    _, x = cv2.threshold(x, 0.4, 1.0, cv2.THRESH_TOZERO)
    np.testing.assert_allclose(ours, np.tanh(x), atol=ATOL)
    for mode, cv_mode in (("binary", cv2.THRESH_BINARY), ("binary_inv", cv2.THRESH_BINARY_INV),
                          ("trunc", cv2.THRESH_TRUNC)):
        builder.clear().add("threshold", thresh=0.5, maxval=0.75, mode=mode).add("normalize")
        with hm.device("cpu:0"):
            ours = builder.pipeline(image).numpy()
        _, ref = cv2.threshold(image, 0.5, 0.75, cv_mode)
        np.testing.assert_allclose(ours, (ref - ref.min()) / (ref.max() - ref.min()), atol=1e-6)
        assert ours.dtype == np.float32


def test_empty_pipeline_exports_the_identity(builder, image):
    code = builder.to_code()
    pipeline = _run(code)
    assert isinstance(pipeline, hm.Pipeline) and pipeline.stages == ()
    np.testing.assert_array_equal(pipeline(image).numpy(), image)


def test_round_trip_through_compose(image):
    p = hm.compose(hm.gaussian_blur(kernel_size=7, sigma=1.5, border="reflect"), hm.sobel(axis=-2),
                   hm.conv2d(kernel=np.eye(3)), hm.sobel_edge_detection(border="constant"))
    b = hm.PipelineBuilder(image, pipeline=p)
    try:
        assert b.pipeline.stages == p.stages
        assert _run(b.to_code()).stages == p.stages
        assert b._entries[0].controls["sigma"].value == 1.5
        assert b._entries[1].controls["axis"].value == -2
        again = hm.PipelineBuilder(image, pipeline=_run(b.to_code()))
        assert again.pipeline.stages == p.stages
        again.close()
        listed = hm.PipelineBuilder(image, pipeline=list(p.stages))
        assert listed.pipeline.stages == p.stages
        listed.close()
        with pytest.raises(TypeError, match="compose: expected stages"):
            hm.PipelineBuilder(image, pipeline=["gaussian_blur"])
    finally:
        b.close()


def test_custom_stages_run_but_cannot_be_exported(builder, image):
    double = hm.Stage("double", {}, lambda img: img * 2.0)
    builder.add("gain_offset", offset=1.0).add(double)
    assert "custom stage" in builder._entries[1].title.value
    with pytest.raises(ValueError, match=r"to_code: stage\(s\) \[2\] are custom Stage objects"):
        builder.to_code()
    with pytest.raises(ValueError, match="custom Stage with no parameters"):
        builder.set(1, gain=1.0)
    builder.wait()
    np.testing.assert_allclose(builder.result, (image + 1.0) * 2.0, rtol=1e-6)


# ---- the preview worker ----------------------------------------------------------------------
def test_a_newer_change_supersedes_a_slow_one(builder, image):
    builder.wait()
    started, release = threading.Event(), threading.Event()

    def slow(img):
        started.set()
        release.wait(10)
        return img * 3.0

    builder.add(hm.Stage("slow", {}, slow))
    assert started.wait(10), "the slow preview never started"
    builder.clear().add("gain_offset", gain=2.0)  # while the slow one is still running
    release.set()
    builder.wait()
    np.testing.assert_array_equal(builder.result, image * np.float32(2.0))
    assert builder.worker.dropped == 1  # the slow result arrived late and was thrown away
    assert builder.worker.skipped >= 1  # the clear() request never ran
    assert builder.error is None
    assert f"preview {builder.worker.generation}:" in builder._status.value


def test_a_failing_stage_shows_its_error_and_keeps_the_last_good_preview(builder, image):
    builder.add("gain_offset", gain=0.5).wait()
    good, good_png = builder.result.copy(), builder._after.value

    def broken(img):
        raise RuntimeError("sensor unplugged")

    builder.add(hm.Stage("broken", {}, broken)).wait()
    assert builder.error == "stage 2 (broken): RuntimeError: sensor unplugged"
    assert "sensor unplugged" in builder._error_label.value
    np.testing.assert_array_equal(builder.result, good)
    assert builder._after.value == good_png
    builder.remove(1).wait()
    assert builder.error is None and builder._error_label.value == ""


def test_preview_shows_plan_and_png(builder, image):
    builder.add("gaussian_blur").add("sobel_edge_detection").add("normalize").wait()
    png = bytes(builder._after.value)
    assert png.startswith(b"\x89PNG") and png != bytes(builder._before.value)
    plan = builder._plan.value
    assert "3 stage(s) →" in plan and "1. gaussian_blur, 2. sobel_edge_detection" in plan
    assert len(builder.plan.kernels) >= 2  # the normalize reductions cannot join the stencil
    assert "4. normalize" not in plan and "3. normalize" in plan
    # the plan is the one that ran: every kernel has its measured time and device
    assert "<td>—</td></tr>" not in plan
    assert [k.name for k in builder.plan.kernels] == [k.name for k in builder.profile.plan.kernels]


def test_a_new_image_is_previewed(builder, image):
    builder.add("gain_offset", gain=-1.0, offset=1.0).wait()
    before = bytes(builder._before.value)
    builder.image = image.T.copy()
    builder.wait()
    assert bytes(builder._before.value) != before
    np.testing.assert_array_equal(builder.result, np.float32(1.0) - image.T)
    assert builder.preview_png == bytes(builder._after.value)


def test_device_selector_decides_where_it_runs(builder, image, device):
    builder.add("gaussian_blur", kernel_size=5).add("sobel_edge_detection")
    builder.device = str(device.id)
    builder.wait()
    assert {k.device for k in builder.plan.kernels} == {device.id}
    assert {k.device for k in builder.profile.kernels} == {device.id}
    assert device.id in builder._status.value
    np.testing.assert_allclose(builder.result, _reference_edges(image, 5), atol=ATOL)
    assert f"hm.device('{device.id}')" in builder.to_code()


def test_policy_selector_and_bad_choices(builder):
    builder.add("gain_offset", gain=2.0)
    builder.device, builder.policy = "auto", "cpu"
    builder.wait()
    assert {k.device for k in builder.profile.kernels} == {"cpu:0"}
    with pytest.raises(ValueError, match="device='tpu:0' is not available; choose one of"):
        builder.device = "tpu:0"
    with pytest.raises(ValueError, match="policy='fast' is unknown; choose one of auto, fastest"):
        builder.policy = "fast"


def test_a_quick_host_preview_comes_before_a_slow_real_run(builder, image, monkeypatch):
    from hermes_nb.widgets import builder as builder_module

    builder.add("gaussian_blur", kernel_size=3).add("sobel_edge_detection").wait()
    run, show = builder_module.run_preview, builder.worker._deliver_early
    compiled = threading.Event()

    def compiling(*args, **kwargs):  # a run whose kernel compiles: slower than the host's
        compiled.wait(timeout=10)
        return run(*args, **kwargs)

    def shown(gen, quick):
        show(gen, quick)
        compiled.set()  # the host's picture is up: the "compile" ends

    monkeypatch.setattr(builder_module, "run_preview", compiling)
    monkeypatch.setattr(builder.worker, "_deliver_early", shown)
    builder.set(0, kernel_size=5).wait()
    assert compiled.is_set()
    assert builder.worker.early >= 1  # shown before the fused run finished
    quick = builder._quick
    assert quick is not None and quick.png.startswith(b"\x89PNG")
    np.testing.assert_allclose(quick.image, builder.result, rtol=1e-4, atol=ATOL)
    np.testing.assert_allclose(quick.image, _reference_edges(image, 5), rtol=1e-4, atol=ATOL)


def test_a_warm_real_run_does_not_wait_for_the_host_preview(builder, image):
    builder.add("gaussian_blur", kernel_size=5).add("gain_offset", gain=1.5).wait()
    early = builder.worker.early
    builder.worker.early_after_s = 1.0  # far beyond a run that compiles nothing (~10 ms)
    builder.set(1, gain=2.5).wait()  # a scalar: a kernel argument, nothing compiles
    assert builder.profile.compile_s == 0 and builder.error is None
    assert builder.worker.early == early  # no host evaluation was shown, nor waited for
    np.testing.assert_allclose(builder.result, cv2.GaussianBlur(image, (5, 5), 0) * 2.5,
                               rtol=1e-4, atol=ATOL)


# ---- the picture a saved notebook keeps ---------------------------------------------------------
def test_shown_builder_leaves_a_picture_of_its_preview(image):
    import base64
    import io
    import re

    from PIL import Image

    b = hm.PipelineBuilder(image, device="cpu:0").add("gaussian_blur", kernel_size=5)
    try:
        bundle = b._repr_mimebundle_()
        snapshot = bundle["text/html"]
        assert bundle["text/plain"] == "Hermes pipeline builder: 1 stage(s): gaussian_blur"
        assert bundle["application/vnd.hermes.view.v1+json"]["model_id"] == b.model_id
        assert "root_id" not in bundle["application/vnd.hermes.view.v1+json"]
        pictures = dict(re.findall(r"alt='(\w+)'[^>]*base64,([A-Za-z0-9+/=]+)", snapshot))
        after = np.asarray(Image.open(io.BytesIO(base64.b64decode(pictures["after"]))))
        shown = np.asarray(Image.open(io.BytesIO(b.preview_png)))  # the finished preview
        assert after.shape == shown.shape  # 128² fits the thumbnail as it is
        np.testing.assert_array_equal(after, shown)
        assert "hm.gaussian_blur(kernel_size=5" in snapshot  # the code, escaped
    finally:
        b.close()
