"""Settings read from environment variables, validated: a bad value raises
:class:`SettingError` naming the variable, the value and what is allowed."""

from __future__ import annotations

import math
import os

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingError(ValueError):
    """An environment variable Hermes reads holds a value it cannot use."""


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or not value.strip() else value.strip()


def _refuse(name: str, raw: str, allowed: str) -> SettingError:
    return SettingError(f"environment variable {name}={raw!r} is not valid: expected {allowed}")


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    return f" <= {maximum}" if maximum is not None else ""


def _env_number(name: str, default: float, kind: str, parse: type, minimum: float | None,
                maximum: float | None) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    allowed = f"{kind}{_bounds(minimum, maximum)} (default {default})"
    try:
        value = parse(raw)
    except ValueError:
        raise _refuse(name, raw, allowed) from None
    if not math.isfinite(value) or (minimum is not None and value < minimum) or (
            maximum is not None and value > maximum):
        raise _refuse(name, raw, allowed)
    return value


def env_int(name: str, default: int, minimum: int | None = None,
            maximum: int | None = None) -> int:
    """``$name`` as an integer within ``[minimum, maximum]``; ``default`` when unset or empty."""
    return int(_env_number(name, default, "an integer", int, minimum, maximum))


def env_float(name: str, default: float, minimum: float | None = None,
              maximum: float | None = None) -> float:
    """``$name`` as a finite number within ``[minimum, maximum]``; ``default`` when unset."""
    return float(_env_number(name, default, "a number", float, minimum, maximum))


def env_flag(name: str, default: bool) -> bool:
    """``$name`` as on/off (``1/0``, ``true/false``, ``yes/no``, ``on/off``); ``default``
    when unset."""
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise _refuse(name, raw, f"one of {', '.join(_TRUE + _FALSE)} (default {int(default)})")
