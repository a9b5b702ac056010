"""A private JupyterLab server and the page actions the browser tests need.

The server runs with its own config, runtime, settings and workspace folders under a
temporary directory, so nothing from the user's ``~/.jupyter`` leaks in, and with the
settings overrides from ``binder/overrides.json`` (the ones ``make lab`` and Binder use).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
OVERRIDES = REPO / "binder" / "overrides.json"
CHROMIUM = Path(os.environ.get("HERMES_CHROMIUM", "/usr/bin/chromium"))
# what the tests need from Chromium: no sandbox (containers, root), no GPU, and nothing that
# talks to the network on its own
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
HOST = "127.0.0.1"


def missing_requirement(*, browser: bool) -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    for module in ("jupyterlab", "nbformat", *(("playwright",) if browser else ())):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[test]')"
    if browser and not CHROMIUM.is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set HERMES_CHROMIUM)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass
class LabServer:
    """A JupyterLab process serving ``root`` on 127.0.0.1 behind a random token."""

    base: Path
    root: Path = field(init=False)
    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(24))
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.root = self.base / "root"
        self.log_path = self.base / "jupyterlab.log"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self, timeout: float = 120.0) -> None:
        for sub in ("root", "config", "runtime", "ipython", "user-settings", "workspaces", "app-settings"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(OVERRIDES, self.base / "app-settings" / "overrides.json")
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.base / "config"),
            "JUPYTER_RUNTIME_DIR": str(self.base / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(self.base / "user-settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(self.base / "workspaces"),
            "IPYTHONDIR": str(self.base / "ipython"),
            "PYTHONUNBUFFERED": "1",
            # IdentityProvider.token's source; unlike a command-line flag, `ps` does not show it
            "JUPYTER_TOKEN": self.token,
        }
        cmd = [
            sys.executable, "-m", "jupyterlab", "--no-browser", f"--ip={HOST}", f"--port={self.port}",
            "--port-retries=0",
            f"--ServerApp.root_dir={self.root}", f"--LabApp.app_settings_dir={self.base / 'app-settings'}",
        ]
        if os.getuid() == 0:  # Jupyter refuses root without it (CI containers)
            cmd.append("--allow-root")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                if self.request("api/status")[0] == 200:
                    return
            time.sleep(0.25)
        self.stop()
        raise TimeoutError(f"JupyterLab did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def request(self, path: str, *, method: str = "GET", token: bool = True) -> tuple[int, Any]:
        """(status, JSON body or None) of a REST call, with or without the token."""
        req = urllib.request.Request(self.url + path, method=method)
        if token:
            req.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                body = resp.read()
                return resp.status, json.loads(body) if body else None
        except urllib.error.HTTPError as err:
            return err.code, None

    def stop(self) -> None:
        """Shut the server down with its kernels; whatever is left is killed, so no orphan remains."""
        import psutil  # ipykernel's dependency: wherever a kernel can start, it is there

        if self.process is None or self.process.poll() is not None:
            return
        try:
            # kernels start in their own sessions: list them now to be sure they die too
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        with contextlib.suppress(OSError):
            self.request("api/shutdown", method="POST")
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        _, alive = psutil.wait_procs(children, timeout=5)
        for child in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


# ---------------------------------------------------------------------------- the page side

def open_notebook(page: Any, server: LabServer, name: str, timeout_ms: float = 90_000) -> None:
    """Open ``name`` (relative to the server root) and wait until its kernel is idle.

    Each call opens a new, empty workspace: JupyterLab would otherwise restore the tabs an
    earlier test left open in the shared one."""
    workspace = f"test-{secrets.token_hex(4)}"
    page.goto(f"{server.url}lab/workspaces/{workspace}/tree/{name}?reset&token={server.token}")
    page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(timeout=timeout_ms)
    wait_kernel_idle(page, timeout_ms)


# the status bar says "Python 3 (ipykernel) | Idle" once the kernel is connected and idle; the
# toolbar's indicator alone reads "idle" before a kernel exists, too early to run anything
_KERNEL_IDLE = """() => {
  const bar = document.querySelector('.jp-StatusBar-Widget');
  const indicator = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
  return bar !== null && indicator !== null && /\\| Idle/.test(bar.textContent)
    && !bar.textContent.includes('No Kernel') && indicator.dataset.status === 'idle';
}"""


def wait_kernel_idle(page: Any, timeout_ms: float) -> None:
    page.wait_for_function(_KERNEL_IDLE, timeout=timeout_ms)


def click_menu(page: Any, menu: str, item: str) -> None:
    """Open ``menu`` in the menu bar and click its ``item`` (matched by its exact label)."""
    page.locator(".lm-MenuBar-itemLabel").get_by_text(menu, exact=True).click()
    page.locator(".lm-Menu .lm-Menu-itemLabel").get_by_text(item, exact=True).click()


def run_all_cells(page: Any) -> None:
    """Run → Run All Cells, through the menu bar as a user would."""
    click_menu(page, "Run", "Run All Cells")


# True once every code cell shows an execution count and none is queued or running
_ALL_RUN = """() => {
  const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')];
  return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""


def wait_all_cells_run(page: Any, timeout_ms: float) -> None:
    page.wait_for_function(_ALL_RUN, timeout=timeout_ms)
    wait_kernel_idle(page, timeout_ms)


_CELL_DONE = """(i) => {
  const p = document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')[i];
  return p !== undefined && /\\[\\d+\\]/.test(p.textContent);
}"""


def cell_done(page: Any, index: int) -> bool:
    """Whether code cell ``index`` (0-based) shows its execution number: it has run."""
    return bool(page.evaluate(_CELL_DONE, index))


def wait_cell_done(page: Any, index: int, timeout_ms: float) -> None:
    """Wait until code cell ``index`` has run (queued and running cells both show ``[*]``)."""
    page.wait_for_function(_CELL_DONE, arg=index, timeout=timeout_ms)


def stderr_outputs(page: Any) -> list[str]:
    """Text of every stderr output shown in the notebook: tracebacks and warnings alike."""
    return page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
                        ).all_inner_texts()


def save_notebook(page: Any, timeout_ms: float = 30_000) -> None:
    """File → Save Notebook, then wait until its tab is no longer marked dirty."""
    click_menu(page, "File", "Save Notebook")
    page.wait_for_function(
        "() => document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-dirty') === null",
        timeout=timeout_ms,
    )


@dataclass
class LabPage:
    """A browser page on the server, with what the browser reported while the test ran."""

    page: Any
    server: LabServer
    screenshots: Path
    prefix: str
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)

    def attach(self) -> None:
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda err: self.console_errors.append(f"pageerror: {err}"))
        # the lab must work offline: every request that leaves 127.0.0.1 is recorded and refused
        self.page.context.route(lambda url: not url.startswith(self.server.url), self._refuse)

    def _on_console(self, msg: Any) -> None:
        if msg.type == "error":
            where = msg.location.get("url", "") if msg.location else ""
            self.console_errors.append(f"console.error: {msg.text} [{where}]")

    def _refuse(self, route: Any) -> None:
        self.external_requests.append(route.request.url)
        route.abort()

    def screenshot(self, name: str, locator: Any = None) -> Path:
        """A PNG of the whole page, or of one element, saved under the screenshot folder."""
        path = self.screenshots / f"{self.prefix}-{name}.png"
        if locator is None:
            self.page.screenshot(path=path, full_page=True)
        else:
            locator.screenshot(path=path)
        return path


def widget_errors(page: Any) -> list[str]:
    """The messages of widgets that failed to render (JupyterLab shows a placeholder that
    reveals the JavaScript error when clicked)."""
    texts = []
    for placeholder in page.locator(
            ".jp-OutputArea-output:has-text('Click to show javascript error')").element_handles():
        placeholder.click()
        texts.append(" | ".join(placeholder.inner_text().splitlines()[1:4]))
    return texts


# console errors known to be harmless and unrelated to Hermes, each with the reason
CONSOLE_ALLOWED: tuple[str, ...] = ()

# non-transparent pixels on a canvas: a Bokeh plot that drew something has many
_PAINTED_PIXELS = """c => {
  const ctx = c.width && c.height ? c.getContext('2d') : null;
  if (ctx === null) return 0;
  const data = ctx.getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) n++;
  return n;
}"""


def write_notebook(server: LabServer, name: str, sources: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, server.root / name)


def unexpected_console_errors(lab: LabPage) -> list[str]:
    return [e for e in lab.console_errors if not any(allowed in e for allowed in CONSOLE_ALLOWED)]


def run_notebook(lab: LabPage, name: str, sources: list[str]) -> None:
    write_notebook(lab.server, name, sources)
    open_notebook(lab.page, lab.server, name)
    run_all_cells(lab.page)


def wait_view(lab: LabPage, selector: str, timeout_ms: float) -> Any:
    """The first ``selector`` element, once visible; if it never shows, fail with what the
    browser said instead."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    view = lab.page.locator(selector).first
    try:
        view.wait_for(timeout=timeout_ms)
        appeared = True
    except PlaywrightTimeout:
        appeared = False
    if not appeared:
        pytest.fail(f"{selector} never appeared; widgets that failed: {widget_errors(lab.page)}; "
                    f"console errors: {lab.console_errors}", pytrace=False)
    view.scroll_into_view_if_needed()
    return view


def assert_canvas_drawn(lab: LabPage, selector: str) -> None:
    """``selector`` holds a Bokeh canvas of non-zero size with pixels painted on it."""
    wait_view(lab, selector, 30_000)
    canvases = lab.page.locator(f"{selector} canvas")
    canvases.first.wait_for(state="attached", timeout=30_000)
    sizes = [canvases.nth(i).bounding_box() for i in range(canvases.count())]
    assert any(box and box["width"] > 0 and box["height"] > 0 for box in sizes), (selector, sizes)
    painted = max(canvases.nth(i).evaluate(_PAINTED_PIXELS) for i in range(canvases.count()))
    assert painted > 100, f"the canvases in {selector} are blank"
