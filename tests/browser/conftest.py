"""Fixtures for the browser tests: a private JupyterLab server and headless Chromium pages.

``lab_server`` (session)  a JupyterLab on 127.0.0.1 with a random token, serving a temporary root.
``lab_page``              a fresh browser context on that server; it records console errors,
                          page errors and any request that tries to leave 127.0.0.1.
``screenshot_dir``        where screenshots go: ``$HERMES_SCREENSHOT_DIR``, else
                          ``<pytest basetemp>/screenshots``; the run's summary prints it.

Without Chromium (``/usr/bin/chromium`` or ``$HERMES_CHROMIUM``) or playwright the tests are
skipped with the reason; with ``CI`` set they fail instead, because CI installs both.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_harness import CHROMIUM, CHROMIUM_ARGS, LabPage, LabServer, missing_requirement

_SCREENSHOT_DIRS: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives a real JupyterLab in headless Chromium (playwright + Chromium)")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for path in _SCREENSHOT_DIRS:
        if any(path.glob("*.png")):
            terminalreporter.write_line(f"browser screenshots: {path}")


def _require(*, browser: bool) -> None:
    reason = missing_requirement(browser=browser)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"CI runs the browser tests, but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    _require(browser=False)
    server = LabServer(tmp_path_factory.mktemp("jupyterlab"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("HERMES_SCREENSHOT_DIR")
    path = Path(env) if env else tmp_path_factory.getbasetemp() / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    _SCREENSHOT_DIRS.append(path)
    return path


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    _require(browser=True)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def lab_page(request: pytest.FixtureRequest, chromium: Any, lab_server: LabServer,
             screenshot_dir: Path) -> Iterator[LabPage]:
    from playwright.sync_api import Error as PlaywrightError

    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)
    lab = LabPage(context.new_page(), lab_server, screenshot_dir, prefix=request.node.name)
    lab.attach()
    try:
        yield lab
    finally:
        # the state the test left the page in, pass or fail; a crashed page has none to give
        with contextlib.suppress(PlaywrightError):
            lab.screenshot("end")
        context.close()
