"""Every notebook in notebooks/ runs top to bottom without an error."""

from __future__ import annotations

from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient", reason="notebook tests need nbclient (test extra)")
nbformat = pytest.importorskip("nbformat", reason="notebook tests need nbformat (test extra)")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path):
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for cell in notebook.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    # the magic reports its own usage errors on stderr instead of raising
    complaints = [o["text"] for cell in notebook.cells if cell.cell_type == "code"
                  for o in cell.get("outputs", [])
                  if o.get("output_type") == "stream" and o.get("name") == "stderr"
                  and "hermes:" in o.get("text", "")]
    assert not complaints, complaints
