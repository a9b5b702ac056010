"""The Hermes JupyterLab extension in a real JupyterLab: its server endpoints answer only with
the token, and the status bar item opens a panel listing this machine's devices."""

from __future__ import annotations

import re

import pytest
from lab_harness import LabPage, LabServer

import hermes_nb as hm

pytestmark = pytest.mark.browser

ENDPOINTS = ("hermes/api/devices", "hermes/api/history", "hermes/api/load")


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
