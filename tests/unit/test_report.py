"""The hotspot report from synthetic profiles: the wall-time split, sorting and shares, the
roofline, fusion savings, each suggestion's trigger and text, the standalone HTML, the peak
cache and ``%%hermes --report``."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.runtime import last_profile, report_html, report_rules
from hermes_nb.runtime import peaks as peaks_mod
from hermes_nb.runtime.peaks import Peak
from hermes_nb.runtime.plan import Kernel, Plan
from hermes_nb.runtime.profile import CompileRun, KernelRun, Profile, TransferRun
from hermes_nb.runtime.report import Report, op_name, report
from hermes_nb.runtime.work import Flops, RunWork, flops_of

MB = 1_000_000


def _kernel(name: str, device: str, nbytes: int, *, inputs: tuple[str, ...] = (),
            members: tuple[str, ...] = (), estimates: dict[str, float | None] | None = None
            ) -> Kernel:
    return Kernel(name=name, ops=(op_name(name),), device=device, reason="", inputs=inputs,
                  shape=(1,), dtype="float32", bytes_moved=nbytes, members=members or (name,),
                  estimates=estimates or {})


def _run(key: str, device: str, start: float, end: float, compile_s: float = 0.0) -> KernelRun:
    return KernelRun(key, op_name(key), device, start, end, None, "", compile_s=compile_s)


def quiet_profile() -> Profile:
    """1 s wall: cpu:0 compiles 0.1 s then runs 0.3 s (hermes-big); opencl:0 gets a
    0.2 s copy and runs 0.2 s (hermes-small, which fused two ops); 0.3 s no device busy."""
    plan = Plan([
        _kernel("hermes-big-1", "cpu:0", 30 * MB),
        _kernel("hermes-small-2", "opencl:0", 4 * MB, inputs=("hermes-big-1",),
                members=("hermes-exp-3", "hermes-add-4", "hermes-constant-5")),
    ])
    p = Profile(started=0.0, finished=1.0, plan=plan, work=RunWork(
        {"hermes-small-2": Flops(2e9, True)}, unfused_kernels=3, unfused_bytes=50 * MB))
    p.add(CompileRun("hermes-big-1", "big", "cpu:0", "kernel", "compile", 0.0, 0.1))
    p.add(_run("hermes-big-1", "cpu:0", 0.0, 0.4, compile_s=0.1))
    p.add(TransferRun("hermes-big-1", "cpu:0", "opencl:0", 0.4, 0.6, 8 * MB))
    p.add(_run("hermes-small-2", "opencl:0", 0.6, 0.7))
    p.finished = 1.0
    return p


PEAKS = {"cpu:0": Peak("cpu:0", 0.2, 1000.0), "opencl:0": Peak("opencl:0", 40.0, 50.0)}


def test_wall_time_split_per_device() -> None:
    r = report(quiet_profile(), peaks=PEAKS)
    assert r.wall_s == pytest.approx(1.0)
    cpu, ocl = r.devices
    assert (cpu.device, cpu.compile_s, cpu.run_s, cpu.copy_s) == ("cpu:0", pytest.approx(0.1),
                                                                   pytest.approx(0.3), 0.0)
    assert cpu.idle_s == pytest.approx(0.6)
    assert (ocl.copy_s, ocl.run_s, ocl.idle_s) == (pytest.approx(0.2), pytest.approx(0.1),
                                                  pytest.approx(0.7))
    assert r.no_device_s == pytest.approx(0.3)  # 0.7-1.0: nothing ran
    assert (r.compile_s, r.run_s, r.copy_s) == (pytest.approx(0.1), pytest.approx(0.4),
                                                pytest.approx(0.2))
    assert "idle: the part of the wall time a device neither ran" in str(r)


def test_overlapping_work_on_a_device_is_busy_once() -> None:
    p = quiet_profile()
    p.add(TransferRun("other", "cpu:0", "opencl:0", 0.65, 0.75, MB))  # during hermes-small-2
    ocl = report(p, peaks=PEAKS).devices[1]
    assert ocl.copy_s == pytest.approx(0.3) and ocl.busy_s == pytest.approx(0.35)
    assert ocl.idle_s == pytest.approx(0.65)


def test_kernels_sorted_by_time_with_shares_bytes_and_roofline() -> None:
    r = report(quiet_profile(), peaks=PEAKS)
    big, small = r.kernels
    assert (big.key, small.key) == ("hermes-big-1", "hermes-small-2")
    assert big.share == pytest.approx(0.4) and small.share == pytest.approx(0.1)  # run+compile
    assert big.nbytes == 30 * MB and big.gb_per_s == pytest.approx(0.1)  # 30 MB in 0.3 s
    assert big.bound == "memory" and big.roofline == pytest.approx(0.5)
    # estimated FLOPs, but only a matmul is placed against the (matmul) compute peak
    assert small.gflop_per_s == pytest.approx(20.0) and small.bound == "memory"
    assert small.roofline == pytest.approx(0.04 / 40.0)


def test_matmul_is_placed_against_the_compute_peak() -> None:
    plan = Plan([_kernel("hermes-matmul-1", "cpu:0", 12 * MB)])
    p = Profile(started=0.0, finished=0.1, plan=plan,
                work=RunWork({"hermes-matmul-1": Flops(8e10, False)}))
    p.add(_run("hermes-matmul-1", "cpu:0", 0.0, 0.1))
    (k,) = report(p, peaks={"cpu:0": Peak("cpu:0", 100.0, 1000.0)}).kernels
    assert k.bound == "compute" and k.roofline == pytest.approx(0.8)
    assert k.flops_estimated is False


def test_ops_table_splits_a_kernel_over_its_members() -> None:
    r = report(quiet_profile(), peaks=PEAKS)
    ops = {o.op: o for o in r.ops}
    assert set(ops) == {"big", "exp", "add"}  # a folded constant is no op of its own
    assert ops["exp"].seconds == pytest.approx(0.05) and ops["big"].seconds == pytest.approx(0.4)
    assert r.ops[0].op == "big"
    assert ops["add"].share == pytest.approx(0.05)


def test_fusion_saving_against_the_unfused_plan() -> None:
    f = report(quiet_profile(), peaks=PEAKS).fusion
    assert f is not None
    assert (f.kernels, f.unfused_kernels, f.kernels_saved) == (2, 3, 1)
    assert (f.nbytes, f.bytes_saved) == (34 * MB, 16 * MB)
    assert "1 kernel(s) and 16.00 MB avoided" in str(report(quiet_profile(), peaks=PEAKS))


def test_no_peaks_says_peak_unknown() -> None:
    r = report(quiet_profile(), measure=False)
    assert all(k.roofline is None for k in r.kernels)
    assert "peak unknown" in str(r) and "peak unknown" in r._repr_html_()


def _kinds(r: Report) -> list[str]:
    return [s.kind for s in r.suggestions]


def test_quiet_run_triggers_only_what_its_numbers_say() -> None:
    r = report(quiet_profile(), peaks=PEAKS)
    # copies 20% < 25%, compile 10% < 50%, no device busy 30%: that one fires
    assert _kinds(r) == ["no-device"]
    assert r.suggestions[0].figure == pytest.approx(0.3)
    assert r.suggestions[0].text.startswith("no device was busy for 30% of the wall time")


def test_copy_suggestion() -> None:
    p = quiet_profile()
    p.add(TransferRun("x", "cpu:0", "opencl:0", 0.7, 0.82, 4 * MB))  # copies: 32% of wall
    r = report(p, peaks=PEAKS)
    (s,) = [s for s in r.suggestions if s.kind == "copies"]
    assert s.figure == pytest.approx(0.32)
    assert s.text == ("32% of this run copied data to opencl:0 (12.0 MB): keep inputs resident "
                      "(hm.compute them once and reuse the result) or pin to cpu:0")


def test_compile_suggestion() -> None:
    p = quiet_profile()
    p.add(CompileRun("hermes-small-2", "small", "opencl:0", "k", "compile", 0.7, 1.0))
    p.add(CompileRun("hermes-small-2", "small", "opencl:0", "k", "compile", 0.2, 0.35))
    r = report(p, peaks=PEAKS)
    (s,) = [s for s in r.suggestions if s.kind == "compile"]
    assert s.figure == pytest.approx(0.55)
    assert s.text == ("compile took 55% of the wall time (550 ms): it is paid once; the next "
                      "run reuses the kernels")
    assert "no-device" not in _kinds(r)  # the compile filled 0.7-1.0


def _one_kernel(seconds: float, nbytes: int, wall: float = 1.0) -> Profile:
    plan = Plan([_kernel("hermes-fused_reduce-1", "cpu:0", nbytes)])
    p = Profile(started=0.0, finished=wall, plan=plan, work=RunWork())
    p.add(_run("hermes-fused_reduce-1", "cpu:0", 0.0, seconds))
    return p


def test_near_peak_suggestion() -> None:
    r = report(_one_kernel(1.0, 91 * 10**9), peaks={"cpu:0": Peak("cpu:0", 100.0, None)})
    assert _kinds(r) == ["near-peak"]
    assert r.suggestions[0].text.startswith(
        "fused_reduce on cpu:0 reached 91% of the measured bandwidth: memory-bound, near the "
        "limit")  # the kernel as the profile names it
    below = report(_one_kernel(1.0, 69 * 10**9), peaks={"cpu:0": Peak("cpu:0", 100.0, None)})
    assert _kinds(below) == []


def test_far_from_peak_suggestion_needs_a_large_share() -> None:
    r = report(_one_kernel(1.0, 5 * 10**9), peaks={"cpu:0": Peak("cpu:0", 100.0, None)})
    assert _kinds(r) == ["far-from-peak"]
    assert "runs for 100% of the wall time at 5% of the measured bandwidth" in r.suggestions[0].text
    small = report(_one_kernel(0.2, 10**8), peaks={"cpu:0": Peak("cpu:0", 100.0, None)})
    assert "far-from-peak" not in _kinds(small)  # 20% of the wall time: not worth saying
    built = _one_kernel(1.0, 5 * 10**8)  # 5 GB/s while it ran
    built.kernels[0] = _run("hermes-fused_reduce-1", "cpu:0", 0.0, 1.0, compile_s=0.9)
    r = report(built, peaks={"cpu:0": Peak("cpu:0", 100.0, None)})
    assert "far-from-peak" not in _kinds(r)  # it ran for 10%: the rest was its compile


def waiting_profile(wait: float) -> Profile:
    """Two independent kernels on opencl:0, the second queued behind the first for
    ``wait`` s while cpu:0 (a candidate for it) did nothing."""
    est = {"opencl:0": 0.1, "cpu:0": 0.2}
    plan = Plan([_kernel("hermes-a-1", "opencl:0", MB, estimates=est),
                 _kernel("hermes-b-2", "opencl:0", MB, estimates=est)])
    p = Profile(started=0.0, finished=0.1 + wait + 0.1, plan=plan, work=RunWork())
    p.add(_run("hermes-a-1", "opencl:0", 0.0, 0.1 + wait))
    p.add(_run("hermes-b-2", "opencl:0", 0.1 + wait, 0.2 + wait))
    return p


def test_waiting_suggestion() -> None:
    r = report(waiting_profile(0.3), peaks={})
    assert _kinds(r) == ["waiting"]
    assert r.suggestions[0].text.startswith(
        "1 kernel(s) waited for opencl:0 (400.0 ms, 80% of the wall time) while cpu:0 was idle")
    busy = waiting_profile(0.3)
    busy.add(_run("hermes-c-3", "cpu:0", 0.0, 0.4))  # cpu:0 was busy meanwhile
    assert "waiting" not in _kinds(report(busy, peaks={}))


def test_a_wait_for_another_kernels_compile_is_no_wait() -> None:
    """The second kernel queued behind the first one's compile: the compile suggestion says
    so; no advice to move a kernel to the idle device."""
    p = waiting_profile(0.3)
    p.kernels[0] = _run("hermes-a-1", "opencl:0", 0.0, 0.4, compile_s=0.3995)  # ran 0.5 ms
    assert report_rules.waits(p) == []
    assert "waiting" not in _kinds(report(p, peaks={}))


def test_a_late_start_on_an_idle_device_is_no_wait() -> None:
    """A kernel that starts late while its device runs nothing (the host was planning, as
    the no-device rule says) did not wait for its device: no advice to move it."""
    est = {"opencl:0": 0.1, "cpu:0": 0.2}
    plan = Plan([_kernel("hermes-a-1", "opencl:0", MB, estimates=est)])
    p = Profile(started=0.0, finished=0.4, plan=plan, work=RunWork())
    p.add(_run("hermes-a-1", "opencl:0", 0.3, 0.4))
    assert report_rules.waits(p) == []
    assert _kinds(report(p, peaks={})) == ["no-device"]


def test_no_suggestion_below_any_threshold() -> None:
    p = _one_kernel(0.99, 50 * 10**9)
    r = report(p, peaks={"cpu:0": Peak("cpu:0", 100.0, None)})
    assert r.suggestions == ()
    assert "(none: nothing stands out)" in str(r)


def test_html_is_standalone(tmp_path: Path) -> None:
    p = quiet_profile()
    p.add(TransferRun("<x>", "cpu:0", "opencl:0", 0.7, 0.82, 4 * MB))
    r = report(p, peaks=PEAKS)
    path = r.to_html(tmp_path / "report.html")
    page = Path(path).read_text()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(script|link|img|iframe)\b", page)
    for part in ("Wall time per device", "Kernels by time", "Ops by time", "What fusion saved",
                 "Suggestions", "32% of this run copied data to opencl:0"):
        assert part in page
    assert r._repr_html_() in page


def _scaled(p: Profile, factor: float) -> Profile:
    """``p`` with every time multiplied by ``factor``: the same layout, other figures."""
    out = Profile(started=p.started * factor, finished=p.finished * factor, plan=p.plan,
                  work=p.work)
    for e in (*p.compiles, *p.kernels, *p.transfers):
        times = {"start": e.start * factor, "end": e.end * factor}
        if isinstance(e, KernelRun):
            times["compile_s"] = e.compile_s * factor
        out.add(dataclasses.replace(e, **times))
    return out


def test_html_of_runs_sharing_a_layout_shows_each_runs_figures() -> None:
    """The HTML template kept per layout holds none of a run's figures: the second of two
    runs of one layout, rendered from the kept template, shows its own, exactly as a
    template made afresh writes them."""
    first, second = (report(_scaled(quiet_profile(), f), peaks=PEAKS) for f in (1.0, 1.5))
    html_first = first._repr_html_()
    kept = dict(report_html._layouts)
    html_second = second._repr_html_()
    assert report_html._layouts == kept  # the second run reused the first's template
    assert "in 1000.00 ms" in html_first and "in 1500.00 ms" in html_second
    assert "1500.00" not in html_first and "1000.00" not in html_second
    assert "<td>300.000</td>" in html_first and "<td>450.000</td>" in html_second
    report_html._layouts.clear()
    assert second._repr_html_() == html_second and first._repr_html_() == html_first


def test_text_of_runs_sharing_a_layout_shows_each_runs_figures() -> None:
    """The text comes from the layout's second template, with the HTML's figures: the
    suggestions first, then the tables, each run's own numbers."""
    first, second = (report(_scaled(quiet_profile(), f), peaks=PEAKS) for f in (1.0, 1.5))
    text_first, text_second = str(first), str(second)
    assert text_first.splitlines()[2] == "suggestions:"
    assert "in 1000.00 ms wall" in text_first and "in 1500.00 ms wall" in text_second
    lines = {line.split()[0]: line.split() for line in text_second.splitlines()
             if line.startswith(("cpu:0 ", "opencl:0 "))}
    assert lines["cpu:0"][1:9:2] == ["150.00", "450.00", "0.00", "900.00"]  # compile, run, copies, idle
    assert first._repr_mimebundle_() == {"text/plain": text_first,
                                         "text/html": first._repr_html_()}
    report_html._layouts.clear()
    assert str(second) == text_second and str(first) == text_first


def test_html_escapes_names_and_keeps_their_percent_signs() -> None:
    r = report(quiet_profile(), peaks=PEAKS)
    odd = dataclasses.replace(r, kernels=tuple(
        dataclasses.replace(k, name=f"50%<b> {k.name}", key=f"{k.key}&%s") for k in r.kernels))
    page = odd._repr_html_()
    assert f"50%&lt;b&gt; {r.kernels[0].name}<" in page
    assert f"title='{r.kernels[0].key}&amp;%s'" in page
    assert "<b>" not in page
    assert f"50%<b> {r.kernels[0].name}" in str(odd)  # the text keeps the name as it is


def test_report_arguments() -> None:
    class Summary:
        profile = quiet_profile()

    assert report(Summary(), peaks=PEAKS).wall_s == pytest.approx(1.0)
    with pytest.raises(TypeError, match="expected a Profile"):
        report(42)
    assert hm.report is report


def test_flops_of_a_matmul_are_exact() -> None:
    a = hm.asarray(np.ones((4, 3), np.float32))
    b = hm.asarray(np.ones((3, 5), np.float32))
    assert flops_of((a @ b).node) == Flops(2 * 4 * 5 * 3, False)
    assert flops_of(hm.exp(a).node) == Flops(12, True)


def test_peaks_are_measured_once_and_kept_on_disk(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_CACHE_DIR", str(tmp_path))
    peaks_mod.forget()
    calls: list[str] = []

    def fake(device: Any) -> Peak:
        calls.append(device.id)
        return Peak(device.id, 12.5, 99.0, peaks_mod.identity(device), 0.2)

    monkeypatch.setattr(peaks_mod, "measure", fake)
    assert peaks_mod.device_peaks(["cpu:0"], measure_missing=False) == {"cpu:0": None}
    first = peaks_mod.device_peaks(["cpu:0", "nowhere:9"])
    assert calls == ["cpu:0"] and first["nowhere:9"] is None
    assert first["cpu:0"] is not None and first["cpu:0"].gb_per_s == 12.5
    assert (tmp_path / peaks_mod.FILE).exists()
    peaks_mod.forget()  # a new process: read from the file, not measured again
    again = peaks_mod.device_peaks(["cpu:0"])["cpu:0"]
    assert calls == ["cpu:0"] and again is not None and again.gflop_per_s == 99.0
    peaks_mod.forget()


def test_waits_ignore_kernels_without_a_plan() -> None:
    p = waiting_profile(0.3)
    p.plan = None
    assert report_rules.waits(p) == []


# ---- %%hermes --report ------------------------------------------------------------

CELL = "x = hm.asarray(np.ones((64, 64), np.float32))\ny = (hm.exp(x) * 2.0).sum()\n"


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    pytest.importorskip("IPython")
    from hermes_nb.notebook import magic

    objects: list[Any] = []
    monkeypatch.setattr(magic, "display", objects.append)
    monkeypatch.setattr(magic, "_show", lambda *shown: objects.extend(shown))
    import hermes_nb.runtime.report as report_mod

    monkeypatch.setattr(report_mod, "device_peaks",
                        lambda ids, **kw: {i: None for i in ids})  # no measuring here
    return objects


def test_magic_report_shows_the_report(shell: Any, shown: list[Any]) -> None:
    shell.run_cell("import numpy as np", store_history=False)
    assert shell.run_cell("%%hermes --report\n" + CELL).success
    reports = [o for o in shown if isinstance(o, Report)]
    assert len(reports) == 1 and reports[0].kernels
    assert reports[0].wall_s == pytest.approx(last_profile().seconds)


def test_magic_publishes_what_the_formatter_would(shell: Any, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    """The cell's summary and report reach the notebook as one output, their own bundles
    joined, skipping IPython's formatter: the text and HTML it would have made of them."""
    from IPython.utils.capture import capture_output

    import hermes_nb.runtime.report as report_mod
    from hermes_nb.notebook.reprs import RunSummary

    monkeypatch.setattr(report_mod, "device_peaks", lambda ids, **kw: {i: None for i in ids})
    made: list[Any] = []
    real = report_mod.report
    monkeypatch.setattr("hermes_nb.notebook.magic.hotspot_report",
                        lambda p: made.append(real(p)) or made[-1])
    shell.run_cell("import numpy as np", store_history=False)
    with capture_output() as captured:
        assert shell.run_cell("%%hermes --report\n" + CELL).success
    (output,) = (o.data for o in captured.outputs)
    formatted = shell.display_formatter.format(made[0])[0]
    assert set(output) == set(formatted) == {"text/plain", "text/html"}
    summary_text, report_text = output["text/plain"].split("\n\n", 1)
    assert summary_text.startswith("hermes: computed x, y |")
    assert report_text == formatted["text/plain"] and report_text.startswith("Hotspot report: ")
    assert output["text/html"].endswith(formatted["text/html"])
    assert output["text/html"].startswith("<div class='hermes-summary'>")
    summary = RunSummary(("x", "y"), 0, (), 0.0)
    assert summary._repr_mimebundle_() == shell.display_formatter.format(summary)[0]


def test_magic_report_to_a_file(shell: Any, shown: list[Any], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell("import numpy as np", store_history=False)
    path = tmp_path / "r.html"
    assert shell.run_cell(f"%%hermes --report={path}\n" + CELL).success
    assert not [o for o in shown if isinstance(o, Report)]
    assert path.read_text().startswith("<!DOCTYPE html>")
    assert f"wrote the hotspot report to {path}" in capsys.readouterr().out


def test_peaks_are_not_measured_while_a_graph_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_nb.runtime.report as report_mod

    asked: list[bool] = []

    def spy(ids: Any, measure_missing: bool = True) -> dict[str, Peak | None]:
        asked.append(measure_missing)
        return {i: None for i in ids}

    monkeypatch.setattr(report_mod, "device_peaks", spy)
    monkeypatch.setattr(report_mod, "running", lambda: True)
    report(quiet_profile())
    monkeypatch.setattr(report_mod, "running", lambda: False)
    report(quiet_profile())
    report(quiet_profile(), measure=False)
    assert asked == [False, True]
