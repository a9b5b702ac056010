"""Environment settings are validated: a bad value names the variable and what is allowed."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hermes_nb as hm
from hermes_nb.settings import SettingError, env_flag, env_float, env_int


@pytest.mark.parametrize("raw", ["abc", "1.5", "-1", "1e3", "0x10", "∞"])
def test_env_int_refuses_with_the_variable_and_what_is_allowed(
        monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("HERMES_X", raw)
    with pytest.raises(SettingError, match=r"HERMES_X=.* expected an integer >= 0 \(default 7\)"):
        env_int("HERMES_X", 7, minimum=0)


def test_env_int_reads_values_and_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_X", raising=False)
    assert env_int("HERMES_X", 7, minimum=0) == 7
    monkeypatch.setenv("HERMES_X", "  ")
    assert env_int("HERMES_X", 7) == 7
    monkeypatch.setenv("HERMES_X", " 65536 ")
    assert env_int("HERMES_X", 7, minimum=0) == 65536
    monkeypatch.setenv("HERMES_X", "11")
    with pytest.raises(SettingError, match="from 0 to 10"):
        env_int("HERMES_X", 7, minimum=0, maximum=10)


def test_env_float_and_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_Y", "2.5")
    assert env_float("HERMES_Y", 1.0, minimum=0.0) == 2.5
    for bad in ("nan", "inf", "-1", "x"):
        monkeypatch.setenv("HERMES_Y", bad)
        with pytest.raises(SettingError, match="HERMES_Y"):
            env_float("HERMES_Y", 1.0, minimum=0.0)
    for raw, value in (("1", True), ("YES", True), ("off", False), ("0", False)):
        monkeypatch.setenv("HERMES_Z", raw)
        assert env_flag("HERMES_Z", not value) is value
    monkeypatch.setenv("HERMES_Z", "maybe")
    with pytest.raises(SettingError, match=r"HERMES_Z='maybe' .* one of 1, true"):
        env_flag("HERMES_Z", False)


def test_bad_debug_level_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_DEBUG", "loud")
    with pytest.raises(SettingError, match="HERMES_DEBUG='loud'"):
        (hm.ones((2,)) + 1).numpy()
    monkeypatch.setenv("HERMES_DEBUG", "0")
    assert (hm.ones((2,)) + 1).numpy().tolist() == [2.0, 2.0]


def test_bad_jit_threshold_names_the_variable_in_a_new_process() -> None:
    code = ("import hermes_nb as hm\n"
            "try:\n    hm.devices()\n"
            "except ValueError as exc:\n    print(type(exc).__name__, exc)\n")
    env = {"HERMES_JIT_MIN_ELEMENTS": "abc", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == ("SettingError environment variable HERMES_JIT_MIN_ELEMENTS='abc' is "
                           "not valid: expected an integer >= 0 (default 65536)")
