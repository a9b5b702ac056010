"""The ``%%hermes`` / ``%hermes`` IPython magics and the notebook reprs, without a kernel."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("IPython")

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import hermes_nb as hm
from hermes_nb.notebook import magic
from hermes_nb.notebook.reprs import (
    LoadTable,
    NamedPlans,
    RunSummary,
    device_table,
)
from hermes_nb.runtime import last_profile

GRAPH = """
x = hm.Tensor.random((32, 32), seed=0)
y = (x * 2 + 1).sum(axis=1)
z = hm.relu(x - 0.5)
n = 3
"""


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every object the magics show (through ``display``, or published as its own bundle)."""
    objects: list[Any] = []
    monkeypatch.setattr(magic, "display", objects.append)
    monkeypatch.setattr(magic, "_show", lambda *shown: objects.extend(shown))
    return objects


@pytest.fixture
def compute_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of tensors in each ``hm.compute`` call."""
    calls: list[int] = []
    real = hm.compute

    def spy(*tensors: hm.Tensor) -> tuple[hm.Tensor, ...]:
        calls.append(len(tensors))
        return real(*tensors)

    monkeypatch.setattr(magic, "compute", spy)
    return calls


def test_cell_computes_assigned_tensors_in_one_graph(
    shell: InteractiveShell, shown: list[Any], compute_calls: list[int]
) -> None:
    result = shell.run_cell("%%hermes" + GRAPH)
    assert result.success
    assert compute_calls == [3]  # x, y and z together; n is no tensor
    ns = shell.user_ns
    for name in ("x", "y", "z"):
        assert ns[name].is_materialized, name
    assert ns["n"] == 3
    assert ns["y"].shape == (32,)
    (summary,) = shown
    assert isinstance(summary, RunSummary)
    assert summary.names == ("x", "y", "z")
    assert summary.kernels == len(last_profile().kernels) > 0
    assert summary.devices == tuple(sorted({k.device for k in last_profile().kernels}))
    assert "kernel(s)" in repr(summary) and "ms" in repr(summary)


def test_names_bound_to_old_or_materialised_tensors_are_left_alone(
    shell: InteractiveShell, shown: list[Any], compute_calls: list[int]
) -> None:
    shell.run_cell("a = hm.ones((3,)) * 2\nb = hm.ones((2,)).compute()")
    before_a = shell.user_ns["a"]
    shell.run_cell("%%hermes\nc = a + 1\nd = c\nb2 = b")
    assert compute_calls == [1]  # c and d are one tensor; a was not assigned; b2 is materialised
    assert shell.user_ns["a"] is before_a and not before_a.is_materialized
    assert shell.user_ns["c"] is shell.user_ns["d"]
    assert shell.user_ns["c"].numpy().tolist() == [3.0, 3.0, 3.0]


def test_device_option_pins(shell: InteractiveShell, shown: list[Any]) -> None:
    shell.run_cell("%%hermes --device cpu:0" + GRAPH)
    assert {k.device for k in last_profile().kernels} == {"cpu:0"}
    assert shown[0].devices == ("cpu:0",)
    assert shell.user_ns["y"].device == "cpu:0"


def test_settings_are_scoped_to_the_cell(shell: InteractiveShell, shown: list[Any]) -> None:
    shell.run_cell("%%hermes --device cpu:0 --policy cpu --no-fuse\nt = hm.ones((2,)) + 1")
    from hermes_nb.context import pinned_device

    assert pinned_device() is None
    assert hm.current_policy() == "auto"
    assert hm.current_options().fuse is True


def test_no_fuse_runs_more_kernels(shell: InteractiveShell, shown: list[Any]) -> None:
    shell.run_cell("%%hermes --device cpu:0" + GRAPH)
    fused = shown[-1].kernels
    shell.run_cell("%%hermes --device cpu:0 --no-fuse" + GRAPH)
    assert shown[-1].kernels > fused


def test_explain_computes_nothing_and_shows_plans(
    shell: InteractiveShell, shown: list[Any], compute_calls: list[int]
) -> None:
    shell.run_cell("%%hermes --explain" + GRAPH)
    assert compute_calls == []
    assert not shell.user_ns["y"].is_materialized
    (plans,) = shown
    assert isinstance(plans, NamedPlans)
    assert [name for name, _ in plans.plans] == ["x", "y", "z"]
    assert "y: Plan:" in repr(plans)
    assert "<table>" in plans._repr_html_()


def test_profile_option_displays_the_profile(shell: InteractiveShell, shown: list[Any]) -> None:
    shell.run_cell("%%hermes --profile" + GRAPH)
    summary, profile = shown
    assert profile is last_profile() is summary.profile
    assert "<table>" in profile._repr_html_()


def test_a_line_is_parsed_once_and_each_line_keeps_its_options(
        shell: InteractiveShell, shown: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    parser = magic._cell_parser
    monkeypatch.setattr(magic, "_cell_parser", lambda: built.append(1) or parser())
    magic._parsed.cache_clear()
    for options in ("--device cpu:0 --no-fuse", "--device cpu:0 --no-fuse", "--device cpu:0"):
        shell.run_cell(f"%%hermes {options}" + GRAPH)
    assert len(built) == 2  # the rerun line reused its parse
    unfused, again, fused = (o.kernels for o in shown if isinstance(o, RunSummary))
    assert unfused == again > fused
    for _ in range(2):  # a parsed line's device is still checked on every run
        failed = shell.run_cell("%%hermes --device nosuch:0\nx = 1").error_in_exec
        assert isinstance(failed, UsageError) and "nosuch" in str(failed)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--device nope:7", "unknown device 'nope:7'"),
        ("--policy nope", "unknown policy 'nope'"),
        ("--device", "expected one argument"),
        ('--device "cpu:0', "quotation"),
        ("--trace /no/such/folder/run.json", "--trace: folder '/no/such/folder' does not exist"),
        ("--trace", "expected one argument"),
    ],
)
def test_bad_options_fail_the_cell_in_one_line_and_run_nothing(
    shell: InteractiveShell,
    shown: list[Any],
    compute_calls: list[int],
    capsys: pytest.CaptureFixture[str],
    options: str,
    expected: str,
) -> None:
    result = shell.run_cell(f"%%hermes {options}\nran = hm.ones((2,))")
    assert isinstance(result.error_in_exec, UsageError)  # the cell fails
    err = capsys.readouterr().err.strip()
    assert expected in err
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("UsageError: hermes: ") and "usage: %%hermes" in err
    assert "ran" not in shell.user_ns
    assert compute_calls == [] and shown == []


def test_failing_user_line_fails_the_cell_and_computes_nothing(
    shell: InteractiveShell,
    shown: list[Any],
    compute_calls: list[int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = shell.run_cell("%%hermes\nq = hm.ones((2,)) + 1\nboom = 1 / 0\n")
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    out = capsys.readouterr()
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.out + out.err)  # drop the traceback's colours
    assert text.count("ZeroDivisionError") == 2  # shown once: its header and its last line
    assert "1 / 0" in text  # IPython's traceback points at the user's own line
    assert compute_calls == [] and shown == []
    assert not shell.user_ns["q"].is_materialized


def test_compute_failure_fails_the_cell_in_one_line(
    shell: InteractiveShell,
    shown: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken(*tensors: hm.Tensor) -> tuple[hm.Tensor, ...]:
        raise RuntimeError("device fell over")

    monkeypatch.setattr(magic, "compute", broken)
    result = shell.run_cell("%%hermes\nq = hm.ones((2,)) + 1")
    assert isinstance(result.error_in_exec, RuntimeError)
    out = capsys.readouterr()
    assert (out.out + out.err).strip() == "hermes: compute failed: RuntimeError: device fell over"
    assert shown == []


def test_view_options_display_widgets_of_the_run(
    shell: InteractiveShell, shown: list[Any], tmp_path: Any
) -> None:
    import json

    from hermes_nb.widgets import ViewWidget

    trace = tmp_path / "run.json"
    cell = ("%%hermes --timeline --placement --fusion --trace " + str(trace)
            + "\nimg = hm.asarray(np.random.default_rng(0).random((64, 64), dtype=np.float32))"
            + "\nedges = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())(img)"
            + "\ntotal = (edges * 2).sum()")
    shell.run_cell("import numpy as np")
    assert shell.run_cell(cell).success
    summary, placement, timeline, fusion = shown
    assert isinstance(summary, RunSummary) and summary.names == ("img", "edges", "total")
    profile = last_profile()
    for widget, css in ((placement, "hermes-placement"), (timeline, "hermes-timeline"),
                        (fusion, "hermes-fusion")):
        assert isinstance(widget, ViewWidget) and css in widget._dom_classes
    # the views hold this run's kernels, not a message
    names = _bokeh_source(placement, "kernels").data["name"]
    assert sorted(names) == sorted(k.key for k in profile.kernels)
    # the timeline is a task stream: this run is its last
    stream = _bokeh_source(timeline, "kernels").data
    last = max(stream["run"])
    this_run = {key: name for key, name, run in zip(stream["key"], stream["name"], stream["run"])
                if run == last}
    assert sorted(this_run) == sorted(k.key for k in profile.kernels)
    ops = _bokeh_source(fusion, "unfused").data["op"]
    assert sorted(ops).count("sobel") == 2 and "gaussian_blur" in ops and "sum" in ops
    events = json.loads(trace.read_text())["traceEvents"]
    traced = {e["args"]["key"]: e["name"] for e in events if e.get("cat") == "kernel"}
    assert sorted(traced) == sorted(k.key for k in profile.kernels)
    # one name per kernel in every view and the trace, after the variable it computes
    titles = dict(zip(names, _bokeh_source(placement, "kernels").data["title"]))
    assert titles == this_run == traced
    assert any(t.startswith("edges: blur5+sobel") for t in titles.values())
    for widget in (placement, timeline, fusion):
        widget.close()


def _bokeh_source(widget: Any, name: str) -> Any:
    from bokeh.models import ColumnDataSource

    model = widget.bokeh_model
    return model.select_one({"name": name, "type": ColumnDataSource})


def test_line_magic_devices_and_load(shell: InteractiveShell, shown: list[Any]) -> None:
    shell.run_cell("%hermes devices")
    shell.run_cell("%hermes load")
    devices, load, monitor = shown
    from hermes_nb.widgets import LoadMonitor

    assert isinstance(monitor, LoadMonitor) and monitor.running
    shell.run_cell("%hermes load")
    newer = shown[-1]
    assert isinstance(newer, LoadMonitor) and newer is not monitor
    assert newer.running and not monitor.running  # the new monitor replaced the old one
    newer.close()
    assert [d.id for d in devices] == [d.id for d in hm.devices()]
    assert "cpu:0" in repr(devices) and "compute units" in repr(devices)
    assert isinstance(load, LoadTable)
    assert [s.device for s in load.snapshots] == [d.id for d in hm.devices()]
    assert "busy" in repr(load) and "<td>cpu:0</td>" in load._repr_html_()


def test_line_magic_prints_tables_without_patching(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_cell("%hermes devices")
    shell.run_cell("%hermes options")
    out = capsys.readouterr().out
    assert "cpu:0" in out and "compute units" in out
    assert "policy=auto" in out and "fuse=True" in out


def test_line_magic_explain(shell: InteractiveShell, shown: list[Any]) -> None:
    shell.run_cell("t = (hm.ones((4, 4)) * 2).sum()")
    shell.run_cell("%hermes explain t")
    (plan,) = shown
    assert isinstance(plan, hm.Plan) and len(plan) >= 1


@pytest.mark.parametrize("line", ["", "frob", "explain", "explain missing", "devices extra"])
def test_line_magic_misuse_fails_in_one_line(
    shell: InteractiveShell, shown: list[Any], capsys: pytest.CaptureFixture[str], line: str
) -> None:
    result = shell.run_cell(f"%hermes {line}")
    assert isinstance(result.error_in_exec, UsageError)
    err = capsys.readouterr().err.strip()
    assert err.startswith("UsageError: hermes: ") and "\n" not in err
    assert shown == []


def test_device_table_reprs() -> None:
    table = device_table()
    assert len(table) == len(hm.devices()) and table[0].id == "cpu:0"
    html_ = table._repr_html_()
    assert "<th>fp64</th>" in html_ and "<td>cpu:0</td>" in html_


def test_reprs_escape_html() -> None:
    summary = RunSummary(("<b>x</b>",), 2, ("cpu:0",), 0.0015)
    assert "<b>x</b>" not in summary._repr_html_()
    assert "&lt;b&gt;x&lt;/b&gt;" in summary._repr_html_()
    assert "2 kernel(s) on cpu:0" in repr(summary) and "1.50 ms" in repr(summary)
    plan = hm.ones((2,)).__add__(1).explain()
    plans = NamedPlans((("<script>", plan),))
    assert "<script>" not in plans._repr_html_() and "&lt;script&gt;" in plans._repr_html_()


def test_profile_html_escapes_and_lists_kernels() -> None:
    from hermes_nb.runtime.profile import KernelRun, Profile

    profile = Profile(kernels=[KernelRun("k<1>", "add", "cpu:0", 0.0, 0.002, None, "why <&>", ("x: <e>",))])
    profile.finished = profile.started + 0.01
    page = profile._repr_html_()
    assert "k&lt;1&gt;" in page and "why &lt;&amp;&gt;" in page and "x: &lt;e&gt;" in page
    assert "<td>2.000</td>" in page and "1 kernel(s)" in page


def test_tensor_html_repr() -> None:
    lazy = hm.ones((2, 3)) * 2
    page = lazy._repr_html_()
    assert "(2, 3)" in page and "float64" in page and "lazy, 1 op" in page
    done = lazy.compute()._repr_html_()
    assert "materialised on <code>" in done and "lazy" not in done


def test_loading_through_the_extension_manager_registers_the_magics() -> None:
    """What ``c.InteractiveShellApp.extensions = ["hermes_nb"]`` in IPython's config does."""
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance()
    try:
        assert ip.extension_manager.load_extension("hermes_nb") is None  # None: loaded
        assert "hermes" in ip.magics_manager.magics["cell"]
        assert "hermes" in ip.magics_manager.magics["line"]
        assert ip.extension_manager.load_extension("hermes_nb") == "already loaded"
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize(("typo", "meant"), [("--devcie cpu:0", "--device"), ("--timline", "--timeline"),
                                             ("--no-fsue", "--no-fuse"), ("--expalin", "--explain")])
def test_misspelt_option_fails_suggesting_the_option_meant(
    shell: InteractiveShell, shown: list[Any], compute_calls: list[int],
    capsys: pytest.CaptureFixture[str], typo: str, meant: str,
) -> None:
    result = shell.run_cell(f"%%hermes {typo}\nran = hm.ones((2,))")
    assert isinstance(result.error_in_exec, UsageError)
    err = capsys.readouterr().err.strip()
    flag = typo.split()[0]
    assert f"unrecognized arguments: {flag} (did you mean {meant}?)" in err
    assert "\n" not in err and "ran" not in shell.user_ns and compute_calls == []


def test_no_suggestion_for_an_option_like_none() -> None:
    with pytest.raises(magic._UsageError) as err:
        magic._cell_parser().parse_args(["--bogus"])
    assert str(err.value) == "unrecognized arguments: --bogus"


def test_line_magic_explain_after_a_hermes_cell_shows_what_it_ran(
    shell: InteractiveShell, shown: list[Any]
) -> None:
    shell.run_cell("%%hermes\nt = (hm.ones((4, 4)) * 2).sum()")
    shown.clear()
    assert shell.user_ns["t"].is_materialized
    shell.run_cell("%hermes explain t")
    (plan,) = shown
    assert isinstance(plan, hm.Plan) and len(plan) >= 1
    assert "sum" in {op for k in plan.kernels for op in k.ops}
    # once the name holds something else, explain explains that
    shell.run_cell("t = hm.ones((3,)).compute()")
    shown.clear()
    shell.run_cell("%hermes explain t")
    (plan,) = shown
    assert len(plan) == 0
