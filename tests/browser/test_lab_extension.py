"""The Hermes JupyterLab extension in a real JupyterLab: its server endpoints answer only with
the token, the status bar item opens a panel listing this machine's devices, and the panel
shows a notebook kernel's log records and names its kernels as the notebook's views do."""

from __future__ import annotations

import re
import secrets

import pytest
from lab_harness import LabPage, LabServer, run_notebook, wait_all_cells_run

import hermes_nb as hm

pytestmark = pytest.mark.browser

ENDPOINTS = ("hermes/api/devices", "hermes/api/history", "hermes/api/load", "hermes/api/logs")


def test_hermes_endpoints_need_the_token(lab_server: LabServer) -> None:
    for path in ENDPOINTS:
        status, body = lab_server.request(path, token=False)
        assert status == 403 and body is None, path
    status, body = lab_server.request("hermes/api/devices")
    assert status == 200
    assert [d["id"] for d in body["devices"]] == [d.id for d in hm.devices()]
    status, body = lab_server.request("hermes/api/history")
    assert status == 200
    assert body["path"].endswith("perf_history.sqlite3") and body["runs"] >= 0
    status, body = lab_server.request("hermes/api/logs?level=warning&limit=5")
    assert status == 200 and len(body["records"]) <= 5
    assert all(r["level"] in ("WARNING", "ERROR", "CRITICAL") for r in body["records"])
    status, _ = lab_server.request("hermes/api/logs?level=loud")
    assert status == 400
    status, _ = lab_server.request("hermes/api/devices", method="POST")
    assert status in (403, 405)  # no write endpoint exists


def test_status_bar_item_opens_the_devices_panel(lab_page: LabPage) -> None:
    page, server = lab_page.page, lab_page.server
    page.goto(f"{server.url}lab?token={server.token}")
    item = page.locator(".hermes-status")
    item.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.hermes-status').textContent.includes('cpu:0')")
    # then each device's live load, polled: "Hermes: cpu:0 0% · opencl:0 0%"
    page.wait_for_function(
        "() => document.querySelector('.hermes-status').textContent.includes('%')")
    assert re.fullmatch("Hermes: " + " · ".join(rf"{re.escape(d.id)} \d+%" for d in hm.devices()),
                        item.inner_text()), item.inner_text()
    item.click()
    panel = page.locator(".hermes-devices-panel[data-loaded='true']")
    panel.wait_for()
    # the live load refreshes by itself while the panel is shown
    page.wait_for_function(
        "() => Number(document.querySelector('.hermes-devices-panel').dataset.loadUpdates) >= 2")
    assert "Live load" in panel.inner_text()
    rows = panel.locator("table").nth(1).locator("tbody tr")  # after the live load's
    assert rows.count() == len(hm.devices())
    assert rows.first.locator("td").first.inner_text() == "cpu:0"
    assert "Measured kernels" in panel.inner_text()
    lab_page.screenshot("devices-panel", panel)
    # the same panel through the command palette's command
    page.keyboard.press("Control+Shift+C")
    page.keyboard.type("Hermes: Show Devices")
    page.keyboard.press("Enter")
    panel.wait_for()
    assert lab_page.console_errors == []
    assert lab_page.external_requests == []


MARKER = "panel-log-check"
CELLS = [
    "%load_ext hermes_nb\nimport logging, time\nimport numpy as np\nimport hermes_nb as hm",
    # a warning through the logger every Hermes module logs under
    f"logging.getLogger('hermes_nb.runtime').warning('{MARKER}: a record on cpu:0')",
    "%%hermes --device cpu:0\n"
    "edges = hm.exp(hm.asarray(np.linspace(-1, 1, 4096, dtype=np.float32)) * 0.5) + 1.0",
    # the history writes its batch once it is 2 s old, on the next run: run again after that
    "time.sleep(2.5)",
    "%%hermes --device cpu:0\n"
    "edges = hm.exp(hm.asarray(np.linspace(-1, 1, 4096, dtype=np.float32)) * 0.5) + 1.0",
]


def test_panel_shows_a_kernels_log_records_and_names_its_kernels(lab_page: LabPage) -> None:
    page = lab_page.page
    run_notebook(lab_page, "log-panel.ipynb", CELLS)
    wait_all_cells_run(page, 120_000)
    page.locator(".hermes-status").click()
    panel = page.locator(".hermes-devices-panel[data-loaded='true']")
    panel.wait_for()
    # the kernel's record, polled into the log section: its level, device and notebook. At
    # warning level: the section shows the newest records of every process on the machine,
    # and a test process beside this one may log hundreds of debug records meanwhile
    log = panel.locator(".hermes-log")
    log.locator("select.hermes-log-level").select_option("warning")
    row = panel.locator(".hermes-log-table tbody tr", has_text=MARKER).first
    row.wait_for(timeout=30_000)
    cells = row.locator("td").all_inner_texts()
    assert cells[1:4] == ["WARNING", "cpu:0", ""], cells
    assert cells[5] == "log-panel.ipynb" and cells[6].startswith(MARKER), cells
    # the filters ask the server again: above its level it is gone, at its device it is back
    log.locator("select.hermes-log-level").select_option("error")
    page.wait_for_function(
        f"() => !document.querySelector('.hermes-log').textContent.includes('{MARKER}')")
    log.locator("select.hermes-log-level").select_option("warning")
    log.locator("select.hermes-log-device").select_option("cpu:0")
    # read in one step: the panel redraws its rows as it polls, and the filter's answer
    # arrives after the click
    page.wait_for_function(
        "marker => { const rows = [...document.querySelectorAll('.hermes-log tbody tr')];"
        " return rows.some(r => r.textContent.includes(marker)) && rows.every("
        "r => r.querySelectorAll('td')[2]?.textContent === 'cpu:0'); }",
        arg=MARKER, timeout=30_000)
    # the measured kernel under the name the notebook's views give it
    kernels = panel.locator("table.hermes-kernels")
    assert "edges: multiply+exp+add" in kernels.inner_text(), kernels.inner_text()
    name = kernels.locator("td", has_text="edges: multiply+exp+add").first
    assert name.get_attribute("title").startswith("fused_elementwise:")  # its signature on hover
    lab_page.screenshot("log-panel", panel)
    assert lab_page.console_errors == []
    assert lab_page.external_requests == []


def test_the_panel_lists_a_kernel_run_after_it_opened(lab_page: LabPage) -> None:
    """The measured kernels are read again as the panel polls: a kernel a notebook runs
    after the panel opened appears without a click on Refresh."""
    page = lab_page.page
    name = f"polled_{secrets.token_hex(3)}"  # new to the machine's history
    run_notebook(lab_page, "kernel-poll.ipynb", [
        "%load_ext hermes_nb\nimport time\nimport numpy as np\nimport hermes_nb as hm",
        "time.sleep(8)",  # the panel opens and reads the history meanwhile
        f"%%hermes --device cpu:0\n{name} = hm.sin(hm.asarray(np.ones(512, np.float32))) * 3.0",
        "time.sleep(2.5)",  # the history writes its batch on the next run after 2 s
        f"%%hermes --device cpu:0\n{name} = hm.sin(hm.asarray(np.ones(512, np.float32))) * 3.0",
    ])
    page.locator(".hermes-status").click()
    panel = page.locator(".hermes-devices-panel[data-loaded='true']")
    panel.wait_for()
    assert name not in panel.locator("table.hermes-kernels").inner_text()
    page.wait_for_function(
        "name => document.querySelector('table.hermes-kernels')?.textContent.includes(name)",
        arg=name, timeout=60_000)
    assert f"{name}: sin+multiply" in panel.locator("table.hermes-kernels").inner_text()
    assert lab_page.console_errors == []
    assert lab_page.external_requests == []
