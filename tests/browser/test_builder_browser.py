"""The pipeline builder in a real JupyterLab: add stages, move a slider, see the preview change."""

from __future__ import annotations

import time

import nbformat
import pytest
from lab_harness import (
    LabPage,
    LabServer,
    open_notebook,
    run_all_cells,
    stderr_outputs,
    wait_all_cells_run,
)

pytestmark = pytest.mark.browser

CELLS = [
    "import hermes_nb as hm\n"
    "builder = hm.PipelineBuilder(device='cpu:0')\n"
    "builder",
]

# the preview <img>'s bytes: ipywidgets shows them through a blob: URL
_IMG_DIGEST = """async (img) => {
  const buf = await (await fetch(img.src)).arrayBuffer();
  const digest = await crypto.subtle.digest('SHA-256', buf);
  const hex = [...new Uint8Array(digest)].map(b => b.toString(16).padStart(2, '0')).join('');
  return [img.src, hex, buf.byteLength];
}"""


def _write(server: LabServer, name: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(s) for s in CELLS]
    nbformat.write(nb, server.root / name)


def _after(page) -> tuple[str, str, int]:
    return page.locator(".hermes-builder-after").first.evaluate(_IMG_DIGEST)


def _wait_status(page, text: str, timeout_ms: float = 120_000) -> None:
    page.wait_for_function(
        """(t) => {
          const s = document.querySelector('.hermes-builder-status');
          return s !== null && s.textContent.includes(t);
        }""", arg=text, timeout=timeout_ms)


def _add(page, label: str) -> None:
    page.locator(".hermes-builder-palette select").select_option(label=label)
    page.locator(".hermes-builder-add").click()


def test_builder_add_stages_move_slider_and_read_code(lab_page: LabPage):
    _write(lab_page.server, "builder.ipynb")
    page = lab_page.page
    open_notebook(page, lab_page.server, "builder.ipynb")
    run_all_cells(page)
    wait_all_cells_run(page, 120_000)
    root = page.locator(".hermes-builder").first
    root.wait_for()
    _wait_status(page, "preview 1:")  # the identity preview of the sample image
    start = _after(page)

    _add(page, "Gaussian blur (gaussian_blur)")
    _add(page, "Sobel magnitude (edges) (sobel_edge_detection)")
    stages = page.locator(".hermes-builder-stage")
    stages.nth(1).wait_for()
    assert stages.count() == 2
    _wait_status(page, "preview 3:")
    edges = _after(page)
    assert edges[1] != start[1], "the preview did not change when stages were added"
    lab_page.screenshot("two-stages", root)

    # the kernel-size slider: one step right is 5 → 7 (its step is 2: only odd sizes)
    handle = page.locator(".hermes-builder-param-kernel_size .noUi-handle").first
    handle.focus()
    started = time.monotonic()
    page.keyboard.press("ArrowRight")
    readout = page.locator(".hermes-builder-param-kernel_size .widget-readout").first
    assert readout.text_content().strip() == "7"
    page.wait_for_function("(src) => document.querySelector('.hermes-builder-after').src !== src",
                           arg=edges[0], timeout=120_000)
    print(f"slider → new preview in {time.monotonic() - started:.2f} s")
    _wait_status(page, "preview 4:")
    blurrier = _after(page)
    assert blurrier[0] != edges[0] and blurrier[1] != edges[1], "the slider left the preview as it was"

    code = page.locator(".hermes-builder-code pre").first.inner_text()
    assert "hm.gaussian_blur(kernel_size=7, sigma=None, border='reflect101')" in code
    assert "hm.sobel_edge_detection(border='reflect101')" in code
    assert "pipeline = hm.compose(" in code
    plan = page.locator(".hermes-builder-plan").first.inner_text()
    assert "2 stage(s) → 1 kernel(s)" in plan and "cpu:0" in plan
    assert page.locator(".hermes-builder-error").first.inner_text().strip() == ""
    lab_page.screenshot("slider-moved", root)
    lab_page.screenshot("page")

    assert not stderr_outputs(page)
    assert not lab_page.console_errors, lab_page.console_errors
    assert not lab_page.external_requests, lab_page.external_requests
    assert min(start[2], edges[2], blurrier[2]) > 10_000  # whole 1024² PNGs, not empty ones
