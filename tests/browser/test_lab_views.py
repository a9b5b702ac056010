"""The notebook views in a real JupyterLab, driven in headless Chromium.

A notebook is written into the server's root, opened, and run with Run → Run All Cells; the
test then reads the page: each view draws a Bokeh canvas, the live load monitor changes while
devices work, no cell fails, the browser logs no error and nothing is fetched from outside.
"""

from __future__ import annotations

import time

import pytest
from lab_harness import (
    LabPage,
    LabServer,
    assert_canvas_drawn,
    cell_done,
    run_notebook,
    save_notebook,
    stderr_outputs,
    unexpected_console_errors,
    wait_all_cells_run,
    wait_cell_done,
    wait_view,
    widget_errors,
)

nbformat = pytest.importorskip("nbformat", reason="the browser tests need nbformat (test extra)")

pytestmark = pytest.mark.browser

# the busy column of each load:<device> data source in the page's Bokeh documents
_LOAD_SERIES = """() => {
  const out = {};
  for (const doc of (window.Bokeh ? window.Bokeh.documents : []))
    for (const m of doc.all_models)
      if (typeof m.name === 'string' && m.name.startsWith('load:') && m.data && m.data.busy)
        out[m.name.slice(5)] = Array.from(m.data.busy);
  return out;
}"""

_SELECT_FIRST_KERNEL = """() => {
  for (const doc of (window.Bokeh ? window.Bokeh.documents : []))
    for (const m of doc.all_models)
      if (m.name === 'fused' && m.data && m.data.source) { m.selected.indices = [0]; return true; }
  return false;
}"""

_SOURCE_SHOWN = """() => {
  for (const doc of (window.Bokeh ? window.Bokeh.documents : []))
    for (const m of doc.all_models)
      if (m.name === 'source' && typeof m.text === 'string' && m.text.length > 0) return true;
  return false;
}"""

SETUP = """\
%load_ext hermes_nb
import time
import numpy as np
import hermes_nb as hm
rng = np.random.default_rng(0)
img = rng.random((256, 256), dtype=np.float32)
a = rng.random(100_000, dtype=np.float32)"""

MONITOR = "monitor = hm.load_monitor()\nmonitor"

VIEWS = """\
%%hermes --timeline --placement --fusion
with hm.device("opencl:0"):
    e = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(img)
with hm.device("cpu:0"):
    s = (hm.asarray(a) * 2 + 1).sum()"""

CHECK = """\
assert e.shape == img.shape
np.testing.assert_allclose(float(s.numpy()), float((a.astype(np.float64) * 2 + 1).sum()), rtol=1e-4)"""

# keeps both devices busy for a while, so the monitor has something to show; the short pause
# each round leaves the browser some of the 2 cores to draw with
BUSY = """\
big = rng.random((1024, 1024), dtype=np.float32)
edges = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
end = time.monotonic() + 16
while time.monotonic() < end:
    with hm.device("opencl:0"):
        edges(big).numpy()
    with hm.device("cpu:0"):
        (hm.asarray(big) * 2 + 1).sum().numpy()
    time.sleep(0.05)"""

MONITOR_PATIENCE_S = 10  # within BUSY's 16 s of work

STOP = "monitor.stop()  # stops sampling; the figures stay (close() would remove them)"

CELLS = [SETUP, MONITOR, VIEWS, CHECK, BUSY, STOP]


def saved_errors(server: LabServer, name: str) -> list[str]:
    """The error outputs (exception name and message) in the notebook as saved."""
    nb = nbformat.read(server.root / name, as_version=4)
    return [f"{o['ename']}: {o['evalue']}" for cell in nb.cells if cell.cell_type == "code"
            for o in cell.outputs if o.output_type == "error"]


def load_series(lab: LabPage) -> dict[str, list[float]]:
    """Per device, the busy fractions the browser's copy of the load monitor holds."""
    return lab.page.evaluate(_LOAD_SERIES)


def assert_clean(lab: LabPage, name: str, logged: str | None = None) -> None:
    """No failed widget, console error, outside request or saved error; nothing on stderr
    but, with ``logged``, the one warning holding it that the notebook logged itself."""
    assert widget_errors(lab.page) == []
    stderr = stderr_outputs(lab.page)
    if logged:
        assert [logged in text for text in stderr] == [True]
    else:
        assert stderr == []
    save_notebook(lab.page)
    assert saved_errors(lab.server, name) == []
    assert unexpected_console_errors(lab) == []
    assert lab.external_requests == []


def test_api_needs_the_token(lab_server: LabServer):
    assert lab_server.request("api/kernels", token=False)[0] == 403
    status, kernels = lab_server.request("api/kernels")
    assert status == 200
    assert isinstance(kernels, list)


def test_lab_uses_the_binder_overrides(lab_server: LabServer):
    """The settings from binder/overrides.json (what make lab and Binder install) are in force:
    no news feed, no update check, so nothing is fetched from the internet."""
    status, settings = lab_server.request("lab/api/settings/@jupyterlab/apputils-extension:notification")
    assert status == 200
    defaults = {k: v["default"] for k, v in settings["schema"]["properties"].items()}
    assert defaults["fetchNews"] == "false"
    assert defaults["checkForUpdates"] is False


def test_bokeh_widget_renders_offline(lab_page: LabPage):
    """The ground the views stand on: a jupyter_bokeh widget draws in this JupyterLab, offline."""
    run_notebook(lab_page, "bokeh.ipynb", [
        "import bokeh.io, bokeh.plotting, bokeh.resources, jupyter_bokeh\n"
        "bokeh.io.output_notebook(resources=bokeh.resources.INLINE, hide_banner=True)",
        "fig = bokeh.plotting.figure(width=400, height=250)\nfig.line([1, 2, 3], [3, 1, 2])\n"
        "w = jupyter_bokeh.BokehModel(fig)\nw.add_class('plain-bokeh')\nw",
    ])
    wait_all_cells_run(lab_page.page, 120_000)
    assert_canvas_drawn(lab_page, ".plain-bokeh")
    lab_page.screenshot("page")
    assert_clean(lab_page, "bokeh.ipynb")


def test_views_render_and_monitor_is_live(lab_page: LabPage):
    """%%hermes --timeline --placement --fusion and hm.load_monitor() as a user runs them."""
    page = lab_page.page
    run_notebook(lab_page, "views.ipynb", CELLS)

    # while BUSY runs, the monitor must change on its own: new samples, a new picture
    # (queued cells show [*] too: BUSY runs once the cell before it has its number)
    wait_cell_done(page, CELLS.index(BUSY) - 1, timeout_ms=180_000)
    monitor = wait_view(lab_page, ".hermes-load-monitor", 30_000)
    time.sleep(1.0)
    first_shot = lab_page.screenshot("monitor-1", monitor).read_bytes()
    first = load_series(lab_page)
    # the monitor samples at 2 Hz; on a loaded 2-core machine the browser may take a few
    # seconds to draw what the busy kernel sends, so wait for the change, within a bound
    deadline = time.monotonic() + MONITOR_PATIENCE_S
    while True:
        time.sleep(0.5)
        second = load_series(lab_page)
        changed = {d for d in second if second[d] != first.get(d)}
        if changed >= set(second) or time.monotonic() > deadline:
            break
    second_shot = lab_page.screenshot("monitor-2", monitor).read_bytes()
    assert not cell_done(page, CELLS.index(STOP)), "the work ended before the monitor was read"
    assert {"cpu:0", "opencl:0"} <= set(second)
    for device in second:
        assert second[device] != first[device], f"no new {device} samples in {MONITOR_PATIENCE_S} s"
    assert first_shot != second_shot, "the load monitor looked the same seconds later"

    wait_all_cells_run(page, 180_000)
    busiest = {device: max(busy) for device, busy in load_series(lab_page).items()}
    # the devices BUSY ran on (a second OpenCL driver, when present, stays idle)
    assert all(busiest[d] > 0 for d in ("cpu:0", "opencl:0")), \
        f"the monitor never saw a busy device: {busiest}"
    for kind in ("placement", "timeline", "fusion", "load-monitor"):
        assert_canvas_drawn(lab_page, f".hermes-{kind}")
        lab_page.screenshot(kind, page.locator(f".hermes-{kind}").first)
    # selecting a kernel (what clicking its box does) shows its generated source
    assert page.evaluate(_SELECT_FIRST_KERNEL), "the fusion diagram has no kernels to select"
    source = page.locator(".hermes-fusion pre").first
    source.wait_for()
    page.wait_for_function(_SOURCE_SHOWN, timeout=10_000)
    assert "fused stencil" in source.inner_text() or "__kernel" in source.inner_text()
    lab_page.screenshot("fusion-source", page.locator(".hermes-fusion").first)
    lab_page.screenshot("page")
    assert_clean(lab_page, "views.ipynb")


LOG_MARKER = "log-view-check"
REPORT_CELLS = [
    SETUP,
    # a warning through the logger every Hermes module logs under
    f"import logging\nlogging.getLogger('hermes_nb.runtime').warning('{LOG_MARKER}: on cpu:0')",
    "%%hermes --report --device cpu:0\n"
    "edges = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(img)\n"
    "s = (hm.asarray(a) * 2 + 1).sum()",
    "hm.logs().view()",
]


def test_report_and_log_view(lab_page: LabPage):
    """``%%hermes --report`` shows the hotspot report (the wall time split, kernels under the
    cell's names, suggestions); the log view lists the process's records and its level
    filter hides a warning and shows it again."""
    page = lab_page.page
    run_notebook(lab_page, "report.ipynb", REPORT_CELLS)
    wait_all_cells_run(page, 180_000)
    report = page.locator(".hermes-report").first
    report.wait_for()
    text = report.inner_text()
    for part in ("Hotspot report", "Wall time per device", "Kernels by time", "Suggestions",
                 "What fusion saved", "edges", "cpu:0"):
        assert part in text, f"{part!r} not in the report"
    lab_page.screenshot("report", report)
    view = page.locator(".hermes-log-view").first
    view.wait_for()
    row = view.locator("tr", has_text=LOG_MARKER).first
    row.wait_for(timeout=30_000)
    assert "WARNING" in row.inner_text().upper()
    level = view.locator(".widget-dropdown", has_text="level").locator("select")
    level.select_option("error")
    page.wait_for_function(
        "m => !document.querySelector('.hermes-log-view').textContent.includes(m)",
        arg=LOG_MARKER, timeout=10_000)
    level.select_option("warning")
    row.wait_for(timeout=10_000)
    lab_page.screenshot("log-view", view)
    assert_clean(lab_page, "report.ipynb", logged=LOG_MARKER)
