"""Views that outlive the page and the kernel, in a real JupyterLab driven in headless Chromium.

- After a page reload, and in a second tab, a view is the live widget again (BokehJS comes with the Hermes lab
  extension, not with a kernel's first output).
- A saved notebook reopened after its kernel was shut down shows each view's saved picture,
  drawn by the lab extension from the output's static copy, without "model not found".

Neither may log a console error or fetch anything from outside 127.0.0.1.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from lab_harness import (
    LabPage,
    LabServer,
    assert_canvas_drawn,
    open_notebook,
    run_notebook,
    save_notebook,
    stderr_outputs,
    unexpected_console_errors,
    wait_all_cells_run,
    wait_kernel_idle,
    widget_errors,
)

nbformat = pytest.importorskip("nbformat", reason="the browser tests need nbformat (test extra)")

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext hermes_nb\nimport numpy as np\nimport hermes_nb as hm\n"
    "a = np.random.default_rng(0).random(100_000, dtype=np.float32)",
    "%%hermes --device cpu:0 --timeline --placement\ns = (hm.asarray(a) * 2 + 1).sum()",
    # a run's progress bar is an output too: it must not leave a dead widget in the notebook
    "with hm.options(progress=True):\n    m = (hm.asarray(a) - 3).max().compute()",
    # the pipeline builder is no Bokeh plot: it saves a picture of itself in HTML
    "hm.PipelineBuilder(pipeline=[hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection()])",
]
VIEWS = (".hermes-timeline", ".hermes-placement")


def assert_quiet(lab: LabPage) -> None:
    assert widget_errors(lab.page) == []
    assert stderr_outputs(lab.page) == []
    assert "model not found" not in lab.page.locator(".jp-NotebookPanel").first.inner_text()
    assert unexpected_console_errors(lab) == []
    assert lab.external_requests == []


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect (to the login page) is the answer itself


def _fetch(server: LabServer, path: str, token: bool) -> tuple[int, bytes]:
    req = urllib.request.Request(server.url + path)
    if token:
        req.add_header("Authorization", f"token {server.token}")
    try:
        with urllib.request.build_opener(_NoRedirect).open(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, b""


def test_bokehjs_is_served_only_with_the_token(lab_server: LabServer):
    from bokeh import __version__

    for name in ("bokeh", "bokeh-gl", "bokeh-widgets", "bokeh-tables"):
        path = f"hermes/bokeh/js/{name}.min.js"
        assert _fetch(lab_server, path, token=False)[0] in (302, 403), path  # to the login page
        status, body = _fetch(lab_server, path, token=True)
        assert status == 200 and len(body) > 10_000, path
    assert __version__.encode() in _fetch(lab_server, "hermes/bokeh/js/bokeh.min.js", token=True)[1]
    for other in ("hermes/bokeh/js/bokeh.js", "hermes/bokeh/js/../../__init__.py", "hermes/bokeh/"):
        assert _fetch(lab_server, other, token=True)[0] in (302, 404), other  # nothing else is served


def test_views_render_live_after_a_reload(lab_page: LabPage):
    page = lab_page.page
    run_notebook(lab_page, "reload.ipynb", CELLS)
    wait_all_cells_run(page, 180_000)
    for view in VIEWS:
        assert_canvas_drawn(lab_page, view)
    save_notebook(page)  # what the reloaded page reads (JupyterLab also saves every 2 minutes)
    page.reload()
    page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(timeout=90_000)
    wait_kernel_idle(page, 90_000)
    for view in VIEWS:
        assert_canvas_drawn(lab_page, view)
    assert page.locator(".hermes-static-view").count() == 0, "the reloaded page shows copies, not the views"
    lab_page.screenshot("reloaded")
    assert_quiet(lab_page)

    # a second tab on the same notebook joins its kernel and shows the live views too
    tab = LabPage(page.context.new_page(), lab_page.server, lab_page.screenshots, lab_page.prefix + "-tab",
                  console_errors=lab_page.console_errors, external_requests=lab_page.external_requests)
    tab.page.on("console", lab_page._on_console)
    tab.page.on("pageerror", lambda err: lab_page.console_errors.append(f"pageerror: {err}"))
    open_notebook(tab.page, tab.server, "reload.ipynb")
    for view in VIEWS:
        assert_canvas_drawn(tab, view)
    assert tab.page.locator(".hermes-static-view").count() == 0
    tab.screenshot("new-tab")
    assert_quiet(tab)


def test_a_reopened_notebook_shows_the_saved_pictures(lab_page: LabPage):
    page, server = lab_page.page, lab_page.server
    run_notebook(lab_page, "saved.ipynb", CELLS)
    wait_all_cells_run(page, 180_000)
    for view in VIEWS:
        assert_canvas_drawn(lab_page, view)
    save_notebook(page)
    page.goto("about:blank")  # leave before the kernel goes, as a user closing the tab
    for kernel in server.request("api/kernels")[1]:
        assert server.request(f"api/kernels/{kernel['id']}", method="DELETE")[0] == 204

    saved = nbformat.read(server.root / "saved.ipynb", as_version=4)
    outputs = [o for o in saved.cells[1].outputs
               if "application/vnd.hermes.view.v1+json" in o.get("data", {})]
    assert len(outputs) == 2
    texts = sorted(o["data"]["text/plain"] for o in outputs)
    assert texts == ["Hermes placement: 1 kernel on cpu:0", "Hermes timeline: 1 kernel on cpu:0"]
    for o in outputs:
        assert "/hermes/bokeh/js/bokeh.min.js" in o["data"]["text/html"]
        assert "cdn." not in o["data"]["text/html"]
    widgets = [o for cell in saved.cells for o in cell.outputs
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert all("application/vnd.hermes.view.v1+json" in o["data"] for o in widgets), \
        "a widget without a saved picture is in the notebook"
    (builder,) = [o for o in saved.cells[3].outputs if o in widgets]
    assert builder["data"]["text/plain"] == ("Hermes pipeline builder: 2 stage(s): "
                                             "gaussian_blur → sobel_edge_detection")
    assert builder["data"]["text/html"].count("data:image/png;base64,") == 2

    open_notebook(page, server, "saved.ipynb")  # a new kernel, without the views' widgets
    for view in VIEWS:
        assert_canvas_drawn(lab_page, f".hermes-static-view{view}")
    snapshot = page.locator(".hermes-static-view.hermes-builder img[alt='after']")
    snapshot.wait_for(timeout=60_000)
    assert snapshot.evaluate("img => img.complete && img.naturalWidth > 0")
    # drawn by the lab extension's renderer, with its caption first
    drawn = page.locator(".hermes-view-output.hermes-builder").first
    assert drawn.locator(":scope > *").first.inner_text() == (
        "saved picture: run the cell for a live widget")
    lab_page.screenshot("reopened")
    assert_quiet(lab_page)
