"""The Binder environment builds from ``binder/`` alone and runs every tutorial.

The heavy tests build a fresh virtual environment the way repo2docker does on mybinder.org:
``pip install -r binder/requirements.txt``, then ``binder/postBuild`` from the repository
root with the environment first on ``PATH``. Then each notebook in ``notebooks/`` runs top to
bottom with a kernel from that environment. The environment is built once per session (pip's
cache makes a second build faster); the build takes minutes and needs PyPI, so these tests
carry the ``binder`` marker.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# executed by the environment's own python: runs one notebook and writes it back with outputs
RUNNER = """
import sys
from pathlib import Path

import nbclient
import nbformat

path, out = Path(sys.argv[1]), sys.argv[2]
notebook = nbformat.read(path, as_version=4)
client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                 resources={"metadata": {"path": str(path.parent)}})
try:
    client.execute()
finally:
    nbformat.write(notebook, out)
"""


@dataclass(frozen=True)
class BinderEnv:
    prefix: Path
    python: Path
    env: dict[str, str]
    work: Path
    build_s: float


def _run(cmd: Sequence[str | Path], env: dict[str, str], timeout: float) -> str:
    """Run ``cmd`` from the repository root; fail with the tail of its output."""
    proc = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{output[-6000:]}"
    return proc.stdout


def _environment(prefix: Path, work: Path) -> dict[str, str]:
    """The variables repo2docker's user would have: the environment first on PATH, nothing
    leaking in from the test's own virtual environment, Jupyter and Hermes state kept fresh."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "JUPYTER_PATH")}
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(prefix)
    env["PYTHONNOUSERSITE"] = "1"
    for name, folder in (("JUPYTER_CONFIG_DIR", "jupyter-config"), ("JUPYTER_DATA_DIR", "jupyter-data"),
                         ("IPYTHONDIR", "ipython"), ("HERMES_NB_CACHE_DIR", "hermes-cache")):
        env[name] = str(work / folder)
    return env


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory: pytest.TempPathFactory) -> BinderEnv:
    work = tmp_path_factory.mktemp("binder")
    prefix = work / "venv"
    env = _environment(prefix, work)
    start = time.perf_counter()
    _run([sys.executable, "-m", "venv", prefix], env, 300)
    python = prefix / "bin" / "python"
    _run([python, "-m", "pip", "install", "--upgrade", "pip"], env, 600)
    _run([python, "-m", "pip", "install", "-r", BINDER / "requirements.txt"], env, 1200)
    _run([BINDER / "postBuild"], env, 600)
    build_s = time.perf_counter() - start
    print(f"\nbinder environment built in {build_s:.0f} s", file=sys.stderr)
    return BinderEnv(prefix, python, env, work, build_s)


def _lower_bounds(requirements: Sequence[str]) -> dict[str, Version | None]:
    """Each requirement's canonical name and its ``>=`` lower bound (None when it has none)."""
    bounds = {}
    for text in requirements:
        req = Requirement(text)
        floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
        bounds[canonicalize_name(req.name)] = max(floors) if floors else None
    return bounds


def _binder_requirements() -> list[str]:
    lines = (BINDER / "requirements.txt").read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def _lab_requirements() -> list[str]:
    """Hermes' dependencies plus its ``lab`` extra, with ``hermes_nb[...]`` expanded."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python >= 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = list(project["dependencies"])
    pending = ["lab"]
    while pending:
        for text in extras[pending.pop()]:
            req = Requirement(text)
            if canonicalize_name(req.name) == "hermes-nb":
                pending.extend(req.extras)
            else:
                wanted.append(text)
    return wanted


# ---- fast checks of the files themselves ----------------------------------------------
def test_requirements_cover_hermes_and_the_lab_extra() -> None:
    """postBuild installs Hermes with --no-deps: requirements.txt must hold its dependencies,
    each with a lower bound at least pyproject's."""
    have = _lower_bounds(_binder_requirements())
    assert all(floor is not None for floor in have.values()), f"give every requirement a >= bound: {have}"
    for name, floor in _lower_bounds(_lab_requirements()).items():
        assert name in have, f"binder/requirements.txt lacks {name} (a dependency of hermes_nb[lab])"
        if floor is not None:
            assert have[name] >= floor, f"binder/requirements.txt allows {name} < {floor}"


def test_postbuild_is_an_executable_script() -> None:
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "repo2docker runs binder/postBuild directly: chmod +x it"
    assert post_build.read_text().startswith("#!/bin/bash\n")


def test_overrides_are_valid_json_if_present() -> None:
    overrides = BINDER / "overrides.json"
    if not overrides.exists():
        pytest.skip("binder/overrides.json not present: no JupyterLab settings to check")
    assert isinstance(json.loads(overrides.read_text()), dict)


# ---- the environment itself -----------------------------------------------------------
@pytest.mark.binder
@pytest.mark.timeout(1500)
def test_environment_has_an_opencl_device(binder_env: BinderEnv) -> None:
    out = _run([binder_env.python, "-c",
                "import hermes_nb as hm; print(' '.join(d.id for d in hm.devices()))"],
               binder_env.env, 300)
    ids = out.split()
    assert "cpu:0" in ids and "opencl:0" in ids, f"devices in the Binder environment: {ids}"


@pytest.mark.binder
@pytest.mark.timeout(1500)
def test_environment_has_hermes_editable_from_this_checkout(binder_env: BinderEnv) -> None:
    out = _run([binder_env.python, "-c", "import hermes_nb; print(hermes_nb.__file__)"],
               binder_env.env, 120)
    assert Path(out.strip()).resolve() == ROOT / "hermes_nb" / "__init__.py"


@pytest.mark.binder
@pytest.mark.timeout(1500)
def test_lab_settings_and_extensions_are_installed(binder_env: BinderEnv) -> None:
    overrides = BINDER / "overrides.json"
    if overrides.exists():
        installed = binder_env.prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
        assert installed.is_file(), "postBuild did not install binder/overrides.json"
        assert json.loads(installed.read_text()) == json.loads(overrides.read_text())
    listing = subprocess.run([str(binder_env.prefix / "bin" / "jupyter"), "labextension", "list"],
                             cwd=ROOT, env=binder_env.env, capture_output=True, text=True,
                             timeout=300, check=True)
    # the listing goes to stderr, coloured
    text = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    for extension in ("@jupyter-widgets/jupyterlab-manager", "@bokeh/jupyter_bokeh"):
        assert re.search(rf"{re.escape(extension)} v\S+ enabled", text), text


@pytest.mark.binder
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_tutorial_runs_in_the_environment(binder_env: BinderEnv, path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason="reading the executed notebook needs nbformat")
    runner = binder_env.work / "run_notebook.py"
    runner.write_text(RUNNER)
    executed = binder_env.work / f"{path.stem}.executed.ipynb"
    start = time.perf_counter()
    _run([binder_env.python, runner, path, executed], binder_env.env, 900)
    print(f"\n{path.name} ran in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    notebook = nbformat.read(executed, as_version=4)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    complaints = [o["text"] for o in outputs if o.get("output_type") == "stream"
                  and o.get("name") == "stderr" and "hermes:" in o.get("text", "")]
    assert not complaints, complaints
