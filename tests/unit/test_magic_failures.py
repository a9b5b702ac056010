"""A failing ``%%hermes`` cell fails as a plain Python cell fails (the kernel replies
``error``, so nbclient and "Run All" stop there), with a short message; any option string
answers quickly with one line."""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("IPython")
pytest.importorskip("nbclient", reason="needs nbclient (test extra)")
pytest.importorskip("nbformat", reason="needs nbformat (test extra)")

import nbclient
import nbformat
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import hermes_nb as hm
from hermes_nb.notebook import magic

BROKEN_COMPUTE = ("from hermes_nb.notebook import magic\n"
                  "def broken(*tensors):\n"
                  "    raise RuntimeError('device fell over')\n"
                  "magic.compute = broken")


def _run_notebook(*cells: str) -> tuple[nbformat.NotebookNode, nbclient.exceptions.CellExecutionError]:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (*cells, "after = 1")]
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
    with pytest.raises(nbclient.exceptions.CellExecutionError) as caught:
        client.execute()
    return notebook, caught.value


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("cells", "ename", "evalue"),
    [
        (("%%hermes\nq = hm.ones((2,)) + 1\nboom = 1 / 0",), "ZeroDivisionError", "division by zero"),
        (("%%hermes\nq = hm.ones((2,)) +* 1",), "SyntaxError", "invalid syntax"),
        (("%%hermes --policy nope\nq = hm.ones((2,))",), "UsageError", "unknown policy 'nope'"),
        ((BROKEN_COMPUTE, "%%hermes\nq = hm.ones((2,)) + 1"), "RuntimeError", "device fell over"),
    ],
    ids=["zero-division", "syntax", "bad-option", "compute"],
)
def test_failing_cell_stops_the_notebook(cells: tuple[str, ...], ename: str, evalue: str) -> None:
    notebook, error = _run_notebook("%load_ext hermes_nb\nimport hermes_nb as hm", *cells)
    assert error.ename == ename
    assert evalue in error.evalue
    failing, after = notebook.cells[-2], notebook.cells[-1]
    outputs = [o for o in failing.outputs if o.output_type in ("error", "stream")]
    text = re.sub(r"\x1b\[[0-9;]*m", "", "".join(
        "\n".join(o.get("traceback", [])) + o.get("text", "") for o in outputs))
    assert evalue in text  # the short message is shown in the cell
    assert "hermes_nb/" not in text  # and none of Hermes's own frames
    assert after.get("execution_count") is None and not after.outputs  # nothing ran after


def _strip(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_syntax_error_fails_the_cell_with_the_users_line(
        shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    result = shell.run_cell("%%hermes\nq = hm.ones((2,))\nw = (q +\n")
    assert isinstance(result.error_in_exec, SyntaxError)
    out = capsys.readouterr()
    text = _strip(out.out + out.err)
    assert "w = (q +" in text and "SyntaxError" in text
    assert "magic.py" not in text
    assert "q" not in shell.user_ns


def test_directly_called_magic_raises_the_users_error(shell: InteractiveShell) -> None:
    with pytest.raises(ZeroDivisionError):
        shell.run_cell_magic("hermes", "", "boom = 1 / 0\n")


@pytest.mark.parametrize("option", ["$where", '"{where}"', "{where.strip()}"])
def test_variables_in_options_are_expanded(shell: InteractiveShell,
                                           monkeypatch: pytest.MonkeyPatch, option: str) -> None:
    monkeypatch.setattr(magic, "display", lambda *a, **kw: None)
    shell.user_ns["where"] = "cpu:0"
    result = shell.run_cell(f"%%hermes --device {option}\nt = hm.ones((2,)) + 1")
    assert result.success
    assert shell.user_ns["t"].device == "cpu:0"


@pytest.mark.parametrize("where", ["folder", "/proc/self/hermes-trace.json", "/proc/x/y"])
def test_unwritable_trace_is_a_usage_error(shell: InteractiveShell, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], where: str) -> None:
    target = str(tmp_path) if where == "folder" else where
    result = shell.run_cell(f"%%hermes --trace {target}\nran = hm.ones((2,)) + 1")
    assert isinstance(result.error_in_exec, UsageError)
    err = capsys.readouterr().err.strip()
    assert err.startswith("UsageError: hermes: --trace:") and "\n" not in err
    assert "ran" not in shell.user_ns


PIECES = ["--device", "--policy", "--trace", "--no-fuse", "--explain", "--profile", "--fusion",
          "--timeline", "--placement", "cpu:0", "opencl:0", "auto", "fastest", "'", '"', "\\",
          "\u200f", "\u202e", "\u0301", "é", "\x00", "=", "-", "--", "--dev", "$", "{", "}",
          "/tmp", "/proc/x/y", "/proc/self/t.json", "--trace=/tmp", "A" * 3000,
          "--device " + "A" * 20000, "\u200f--device " + "A" * 20000, "'--device " + "A" * 20000]


def test_fuzzed_options_answer_fast_in_one_line(shell: InteractiveShell,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(magic, "display", lambda *a, **kw: None)
    magic._widgets_available()  # imports, once
    hm.devices()  # discovery, once
    rng = random.Random(10)
    slowest, refused = (0.0, ""), 0
    for _ in range(300):
        line = " ".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6)))
        start = time.perf_counter()
        try:  # a valid line runs the cell (views included); any other error fails the test
            shell.run_cell_magic("hermes", line, "y = 1\n")
        except UsageError as exc:
            assert "\n" not in str(exc) and str(exc).startswith("hermes: "), line
            slowest = max(slowest, (time.perf_counter() - start, line))
            refused += 1
        capsys.readouterr()
    assert refused > 200
    # a quadratic parse or suggestion on the 20000-character lines would take seconds; the
    # bound leaves room for a loaded machine (typical: a few ms)
    assert slowest[0] < 0.25, f"{slowest[0] * 1e3:.0f} ms for {slowest[1][:60]!r}"
    assert not os.path.exists("/proc/self/t.json")
