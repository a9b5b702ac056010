"""One log for every device: Hermes' records are kept, filtered, attached to each run's
profile and printed only when asked (``HERMES_LOG``) or when the user must see them."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb import logrecords
from hermes_nb.runtime import last_profile
from hermes_nb.scheduler import Scheduler, policies


class CompilerWarning(UserWarning):
    """Stands for PyOpenCL's ``CompilerWarning`` (matched by name, as PyOpenCL's is)."""


@pytest.fixture
def fresh_scheduler(monkeypatch):
    scheduler = Scheduler(None)
    monkeypatch.setattr(policies, "_default", scheduler)
    return scheduler


def _fail_first_device(monkeypatch, fresh_scheduler):
    """Make the device the scheduler tries first fail the kernel (as test_scheduling does)."""
    others = [d for d in hm.devices() if d.id != "cpu:0"]
    if not others:
        pytest.skip("needs a second device to fall back from")
    dev = others[0]
    x = np.linspace(-2, 2, 4096, dtype=np.float32)
    expr = hm.exp(hm.asarray(x)) * 2 + 1
    from hermes_nb.compiler import optimize
    from hermes_nb.scheduler import kernel_info_of

    (root,) = optimize([expr.node])
    kernel = kernel_info_of(root)
    for _ in range(3):
        fresh_scheduler.observe(kernel, dev.id, 1e-6)
        fresh_scheduler.observe(kernel, "cpu:0", 1.0)
    real = type(dev).execute

    def out_of_memory(self, spec, inputs):
        if spec.op == "fused_elementwise":
            raise MemoryError("injected: out of device memory")
        return real(self, spec, inputs)

    monkeypatch.setattr(type(dev), "execute", out_of_memory)
    return dev, expr


def test_fallback_is_a_record_with_device_kernel_and_category(fresh_scheduler, monkeypatch):
    dev, expr = _fail_first_device(monkeypatch, fresh_scheduler)
    expr.numpy()
    found = hm.logs(category="fallback", device=dev.id)
    assert found, hm.logs()
    record = found[-1]
    assert record.level == "WARNING" and record.kernel == "fused_elementwise"
    assert "out of device memory" in record.message
    # where it was raised (this file's injected failure), so a rare one can be traced
    assert f"raised at {Path(__file__).name}" in record.message or \
        f"raised at {__file__}" in record.message, record.message
    # the run's own buffer holds it too, and the profile shows it
    assert record in last_profile().log
    assert "fallback" in repr(last_profile().log)
    assert "<table" in found._repr_html_() and dev.id in found._repr_html_()


def test_filters_by_device_level_kernel_and_category():
    logrecords.emit(logging.DEBUG, "built K1", device="opencl:0", kernel="blur", category="compile")
    logrecords.emit(logging.WARNING, "slow", device="cpu:0", kernel="sobel", category="runtime")
    logrecords.emit(logging.INFO, "verdict", device="tcp://10.0.0.2:4000/opencl:0",
                    kernel="", category="selftest")
    recent = hm.logs(last=3)
    assert [r.message for r in recent] == ["built K1", "slow", "verdict"]
    assert [r.message for r in recent.filter(device="opencl:0")] == ["built K1", "verdict"]
    assert [r.message for r in recent.filter(level="info")] == ["slow", "verdict"]
    assert [r.message for r in recent.filter(kernel="sob")] == ["slow"]
    assert [r.message for r in recent.filter(category="compile")] == ["built K1"]
    assert [r.message for r in hm.logs(level="warning", last=1)] == ["slow"]
    with pytest.raises(ValueError, match="unknown log level"):
        recent.filter(level="loud")


def test_a_run_collects_the_records_of_other_threads():
    import threading

    from hermes_nb.runtime import profile

    run_id = profile.begin()
    worker = threading.Thread(target=lambda: logrecords.emit(logging.DEBUG, "from a device thread",
                                                             category="compile"))
    worker.start()
    worker.join()
    ended = profile.end(run_id)
    assert [r.message for r in ended.log] == ["from a device thread"]


def test_worker_records_join_the_client_log():
    run = [logrecords.Record(1.0, "INFO", "opencl:0", "k", "compile", "built on a worker")]
    logrecords.ingest(logrecords.to_wire(run), "tcp://10.0.0.9:1234")
    (got,) = hm.logs(device="tcp://10.0.0.9:1234/opencl:0")
    assert got.worker == "tcp://10.0.0.9:1234" and got.message == "built on a worker"
    assert hm.logs(device="opencl:0", last=1)[0] == got


@pytest.mark.parametrize("level, shown, hidden", [
    ("debug", ["dbg", "inf", "wrn"], []),
    ("info", ["inf", "wrn"], ["dbg"]),
    ("warning", ["wrn"], ["dbg", "inf"]),
])
def test_hermes_log_prints_records_at_its_level(monkeypatch, capsys, level, shown, hidden):
    monkeypatch.setenv("HERMES_LOG", level)
    logrecords.configure()
    try:
        log = logging.getLogger("hermes_nb.runtime")
        log.debug("dbg")
        log.info("inf")
        log.warning("wrn")
    finally:
        monkeypatch.delenv("HERMES_LOG")
        logrecords.configure()
    err = capsys.readouterr().err.split()
    assert all(word in err for word in shown), err
    assert not any(word in err for word in hidden), err


def test_default_prints_warnings_and_a_fallback_once(monkeypatch, capsys):
    # the logging of a plain script: no handlers on the root logger (pytest's own, added
    # for the test's call, are set aside here)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.delenv("HERMES_LOG", raising=False)
    logrecords.configure()
    log = logging.getLogger("hermes_nb.runtime")
    log.debug("quiet build")
    log.info("quiet verdict")
    for _ in range(3):
        log.warning("hermes: %s failed on %s (%s); retrying on %s", "fused_stencil", "opencl:7",
                    "boom", "cpu:0")
    log.error("loud error")
    err = capsys.readouterr().err
    assert "quiet" not in err
    assert err.count("fused_stencil failed on opencl:7") == 1
    assert "loud error" in err
    assert len(hm.logs(kernel="fused_stencil", device="opencl:7", category="fallback")) >= 3


def test_an_applications_handler_below_the_root_decides_what_shows(monkeypatch, capsys):
    """A handler on ``hermes_nb.runtime`` (as a notebook may attach) gets the fallback, and
    Hermes prints nothing of its own, as ``logging``'s last resort would not."""
    import io

    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.delenv("HERMES_LOG", raising=False)
    logrecords.configure()
    log = logging.getLogger("hermes_nb.runtime")
    mine = io.StringIO()
    handler = logging.StreamHandler(mine)
    log.addHandler(handler)
    try:
        log.warning("hermes: %s failed on %s (%s); retrying on %s", "fused_reduce", "opencl:8",
                    "boom", "cpu:0")
    finally:
        log.removeHandler(handler)
    assert "fused_reduce failed on opencl:8" in mine.getvalue()
    assert capsys.readouterr().err == ""
    assert hm.logs(kernel="fused_reduce", device="opencl:8", category="fallback")


def test_compiler_warning_in_a_build_is_a_record_not_printed(capsys, recwarn):
    with logrecords.build_warnings(device="opencl:0", kernel="blur"):
        warnings.warn("Built kernel retrieved from cache.\n41 warnings generated.", CompilerWarning,
                      stacklevel=1)
    assert not recwarn.list
    assert capsys.readouterr().err == ""
    (record,) = hm.logs(kernel="blur", category="compile", last=1)
    assert record.level == "DEBUG" and record.device == "opencl:0"
    assert "41 warnings generated" in record.detail


def test_other_warnings_during_a_build_and_the_users_own_still_show():
    with pytest.warns(RuntimeWarning, match="the user's"), \
            logrecords.build_warnings(device="opencl:0", kernel="blur"):
        warnings.warn("the user's warning", RuntimeWarning, stacklevel=1)
    with pytest.warns(UserWarning, match="outside a build"):
        warnings.warn("outside a build", UserWarning, stacklevel=1)
    # a CompilerWarning outside a Hermes build is the user's business too
    with pytest.warns(CompilerWarning):
        warnings.warn("their own compiler", CompilerWarning, stacklevel=1)


def test_build_worker_output_is_a_record(capfd):
    logrecords.worker_output("/tmp/x.cl:3:9: warning: unused variable\n41 warnings generated.\n",
                             device="opencl:0", kernel="sobel", what="opencl_build")
    (record,) = hm.logs(kernel="sobel", last=1)
    assert record.category == "compile" and "41 warnings generated" in record.message
    assert "unused variable" in record.detail
    assert capfd.readouterr().err == ""


def test_records_repr_is_readable():
    logrecords.emit(logging.INFO, "a readable line", device="cpu:0", kernel="k", category="runtime")
    text = repr(hm.logs(last=1))
    assert text.startswith("Log: 1 record(s)") and "cpu:0/k" in text and "a readable line" in text
    assert repr(logrecords.Records()) == "Log: no records"


def test_log_view_filters_with_its_dropdowns():
    pytest.importorskip("ipywidgets")
    logrecords.emit(logging.DEBUG, "built blur", device="opencl:0", kernel="blur", category="compile")
    logrecords.emit(logging.WARNING, "hermes: sobel failed on opencl:0 (x); retrying on cpu:0",
                    device="opencl:0", kernel="sobel", category="fallback")
    view = hm.logs(last=2).view()
    assert set(view.device.options) >= {"any", "opencl:0"} and "sobel" in view.kernel.options
    assert "built blur" in view.table.value and "retrying" in view.table.value
    view.level.value = "warning"
    assert "built blur" not in view.table.value and "retrying" in view.table.value
    view.level.value = "any"
    view.kernel.value = "blur"
    assert [r.message for r in view.filtered()] == ["built blur"]
    assert view.summary == "Log: 1 of 2 record(s)"


def test_hermes_log_magic_shows_the_filtered_view(monkeypatch):
    pytest.importorskip("IPython")
    pytest.importorskip("ipywidgets")
    from hermes_nb.notebook import magic

    shown = []
    monkeypatch.setattr(magic, "display", shown.append)
    logrecords.emit(logging.INFO, "verdict", device="opencl:3", category="selftest")
    magics = magic.HermesMagics(shell=None)
    magics._line("log --device opencl:3 --level info")
    (view,) = shown
    assert view.device.value == "opencl:3" and view.level.value == "info"
    assert [r.message for r in view.filtered()][-1] == "verdict"
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="did you mean --device"):
        magics._line("log --devcie opencl:3")
    with pytest.raises(UsageError, match="unknown log level"):
        magics._line("log --level loud")


def test_a_calibration_choice_is_a_record(fresh_scheduler):
    from hermes_nb.scheduler import kernel_info

    kernel = kernel_info("exp", (1024,), "float32", [(1024,)], ["float32"])
    decision = fresh_scheduler.decide(kernel, ["cpu:0", "opencl:9"], policy="auto")
    assert decision.calibrating
    (record,) = hm.logs(category="calibration", kernel=kernel.signature, last=1)
    assert record.device == decision.device and record.message == decision.reason


def test_compiler_chatter_on_fd_2_during_a_build_is_a_record(capfd):
    import os

    with logrecords.native_stderr(device="opencl:0", kernel="edges", what="build"):
        os.write(2, b"/tmp/a.cl:2:5: warning: unused variable 'q'\n    ^\n")
        os.write(2, b"the user's own stderr line\n")
        os.write(2, b"41 warnings generated.\n")
    err = capfd.readouterr().err
    assert "warnings generated" not in err and "unused variable" not in err
    assert "the user's own stderr line" in err  # written back after the build
    (record,) = hm.logs(kernel="edges", last=1)
    assert record.message == "compiler output (build): 41 warnings generated."
    assert "unused variable" in record.detail and record.device == "opencl:0"


def test_builds_on_several_threads_leave_the_users_warning_settings_as_they_were():
    import threading

    before = (list(warnings.filters), warnings.showwarning)
    inside, release = threading.Event(), threading.Event()

    def long_build():
        with logrecords.build_warnings(device="opencl:1", kernel="long"):
            inside.set()
            release.wait(10)
            warnings.warn("long build output", CompilerWarning, stacklevel=1)

    other = threading.Thread(target=long_build)
    other.start()
    inside.wait(10)
    with logrecords.build_warnings(device="opencl:0", kernel="short"):  # ends first
        warnings.warn("short build output", CompilerWarning, stacklevel=1)
    release.set()
    other.join()
    assert (list(warnings.filters), warnings.showwarning) == before
    assert [r.device for r in hm.logs(category="compile", last=2)] == ["opencl:0", "opencl:1"]
    with pytest.warns(UserWarning, match="still shown"):
        warnings.warn("still shown", UserWarning, stacklevel=1)
