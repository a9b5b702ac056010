"""What a view leaves in a notebook besides its live widget: a one-line text summary, a static
copy of its plot for the lab extension, and a standalone HTML fragment (BokehJS from the
Jupyter server, never a CDN)."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("jupyter_bokeh", reason="the notebook widgets need jupyter_bokeh")

import numpy as np

import hermes_nb as hm
from hermes_nb import widgets
from hermes_nb.runtime.profile import KernelRun, Profile
from hermes_nb.widgets._common import message
from hermes_nb.widgets.fallback import BOKEHJS_ENV, HERMES_VIEW_MIME, WIDGET_MIME
from hermes_nb.widgets.show import as_widget


def _profile(devices: list[str]) -> Profile:
    profile = Profile()
    for i, device in enumerate(devices):
        profile.kernels.append(KernelRun(f"k{i}", "add", device, i * 0.1, i * 0.1 + 0.05, None, "test"))
    return profile


def test_text_form_is_a_one_line_summary() -> None:
    view = widgets.show(_profile(["cpu:0", "opencl:0", "cpu:0", "opencl:0", "cpu:0"]))
    assert repr(view) == "Hermes timeline: 5 kernels on cpu:0, opencl:0"
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == "Hermes timeline: 5 kernels on cpu:0, opencl:0"
    assert "render_bundle" not in bundle["text/plain"] and "ViewWidget" not in bundle["text/plain"]
    view.close()


@pytest.mark.parametrize(("make", "expected"), [
    (lambda: widgets.show(_profile(["cpu:0"])), "Hermes timeline: 1 kernel on cpu:0"),
    (lambda: widgets.show(None), "Hermes timeline: nothing has run yet"),
    (lambda: widgets.placement_view(_profile(["opencl:0", "cpu:0"])),
     "Hermes placement: 2 kernels on cpu:0, opencl:0"),
    (lambda: widgets.show(hm.LoadSampler()), "Hermes load monitor: load of "),
])
def test_every_view_says_what_it_shows(make, expected: str) -> None:
    view = make()
    assert repr(view).startswith(expected) and "\n" not in repr(view)
    view.close()


def test_placement_of_a_lazy_tensor_counts_planned_kernels() -> None:
    a = hm.asarray(np.arange(1000, dtype=np.float32))
    t = (a * 2 + 1).sum()
    view = widgets.placement_view(t)
    n = len(t.explain())
    assert repr(view).startswith(f"Hermes placement: {n} planned kernel")
    view.close()


def test_bundle_keeps_the_widget_and_adds_a_static_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BOKEHJS_ENV, "/user/ana/hermes/bokeh/")
    view = widgets.show(_profile(["cpu:0", "cpu:0"]))
    bundle = view._repr_mimebundle_()
    assert bundle[WIDGET_MIME]["model_id"] == view.model_id
    saved = bundle[HERMES_VIEW_MIME]
    assert saved["model_id"] == view.model_id
    assert {"hermes-view", "hermes-timeline"} <= set(saved["classes"])
    assert "doc_json" not in saved  # the document is kept once, in the HTML fragment
    page = bundle["text/html"]
    assert '<script src="/user/ana/hermes/bokeh/js/bokeh.min.js"></script>' in page
    assert "cdn" not in page.lower() and "http" not in page
    block = re.search(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S)
    assert block is not None
    doc = json.loads(block.group(2))  # a string in the page: a saved notebook cannot sort it
    assert saved["root_id"] in {root["id"] for root in doc["roots"]}
    assert "Hermes timeline: 2 kernels on cpu:0" in page
    view.close()


def test_bundle_escapes_script_ends_in_the_document() -> None:
    view = as_widget(message("</script><b>x</b>"), "hermes-other", "Hermes <view>")
    page = view._repr_mimebundle_()["text/html"]
    body = page.split('type="application/json"', 1)[1]
    assert body.count("</script>") == 2  # the data block's and the loader's, nothing from the text
    assert "Hermes &lt;view&gt;" in page
    view.close()


def test_with_the_server_extension_no_view_injects_bokehjs(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    show_module = importlib.import_module("hermes_nb.widgets.show")  # the module, not the function

    calls: list[object] = []
    monkeypatch.setattr("bokeh.io.output_notebook", lambda **kw: calls.append(kw))
    monkeypatch.setattr(show_module, "_bokehjs_loaded", False)
    monkeypatch.setenv(BOKEHJS_ENV, "/hermes/bokeh/")
    widgets.show(None).close()
    assert calls == []
    monkeypatch.delenv(BOKEHJS_ENV)
    widgets.show(None).close()
    assert len(calls) == 1


def test_server_serves_bokehjs_authenticated_from_the_bokeh_package() -> None:
    pytest.importorskip("jupyter_server")
    from hermes_nb.server.handlers import AUTH_RESOURCE, BOKEHJS_PATH, BokehJSHandler, static_handlers

    ((pattern, handler, kwargs),) = static_handlers()
    assert handler is BokehJSHandler and handler.auth_resource == AUTH_RESOURCE
    assert handler.get.__wrapped__.__wrapped__ is not None  # @web.authenticated and @authorized
    from pathlib import Path

    root = Path(kwargs["path"])
    for name in ("bokeh.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js", "bokeh-gl.min.js"):
        assert (root / "js" / name).is_file()
        assert re.fullmatch(BOKEHJS_PATH, f"js/{name}")
    for other in ("js/bokeh.js", "../js/bokeh.min.js", "js/lib/x.min.js", "index.html"):
        assert not re.fullmatch(pattern, other)
