"""The stages the pipeline builder offers: each one's parameters, their ranges, and its code.

A fixed table, so the builder makes stages by name and never evaluates text. Image ops come
from ``hermes_nb.api.image``; elementwise stages are ``Stage`` objects over ``hermes_nb`` functions,
written out as ``hm.Stage(name, params, lambda img: ...)`` so exported code needs nothing but
Hermes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.api import elementwise, reductions
from hermes_nb.api.image import Stage, conv2d, gaussian_blur, sobel, sobel_edge_detection
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir.ops import BORDERS


@dataclass(frozen=True)
class IntParam:
    lo: int
    hi: int
    default: int
    odd: bool = False

    def check(self, stage: str, name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{stage}: {name} must be an int, got {value!r}")
        if not self.lo <= value <= self.hi or (self.odd and value % 2 == 0):
            raise ValueError(f"{stage}: {name}={value!r} is out of range; allowed: {self.describe()}")
        return int(value)

    def describe(self) -> str:
        return f"{'odd ' if self.odd else ''}integers from {self.lo} to {self.hi}"


@dataclass(frozen=True)
class FloatParam:
    lo: float
    hi: float
    default: float | None
    step: float = 0.01
    optional: bool = False  # None is allowed (shown as ``lo`` on the slider)

    def check(self, stage: str, name: str, value: Any) -> float | None:
        if value is None and self.optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{stage}: {name} must be a number, got {value!r}")
        if not (math.isfinite(value) and self.lo <= value <= self.hi):
            raise ValueError(f"{stage}: {name}={value!r} is out of range; allowed: {self.describe()}")
        return float(value)

    def describe(self) -> str:
        return f"numbers from {self.lo} to {self.hi}" + (" or None" if self.optional else "")


@dataclass(frozen=True)
class ChoiceParam:
    options: tuple[tuple[str, Any], ...]  # (label, value)
    default: Any

    def check(self, stage: str, name: str, value: Any) -> Any:
        for _, v in self.options:  # 1 == True and -1 == -1.0, but only -1 is an axis
            same_kind = (isinstance(value, bool) is isinstance(v, bool)
                         and isinstance(value, str) is isinstance(v, str))
            if same_kind and value == v:
                return v
        raise ValueError(f"{stage}: {name}={value!r} is not allowed; allowed: {self.describe()}")

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for _, v in self.options)


@dataclass(frozen=True)
class KernelParam:
    """A 2-D weight matrix with odd sizes up to ``max_size``; typed as rows of numbers."""

    max_size: int
    default: tuple[tuple[float, ...], ...]
    limit: float = 1e6

    def check(self, stage: str, name: str, value: Any) -> list[list[float]]:
        try:
            w = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{stage}: {name} must be rows of numbers, got {value!r}") from None
        if (w.ndim != 2 or any(s % 2 == 0 or not 1 <= s <= self.max_size for s in w.shape)
                or not np.isfinite(w).all() or np.abs(w).max() > self.limit):
            raise ValueError(f"{stage}: {name} of shape {w.shape} is out of range; allowed: "
                             f"{self.describe()}")
        return w.tolist()

    def describe(self) -> str:
        return (f"a 2-D matrix with odd sizes from 1 to {self.max_size} "
                f"and finite weights within ±{self.limit:g}")


Param = IntParam | FloatParam | ChoiceParam | KernelParam


def parse_kernel(text: str) -> list[list[float]]:
    """Rows separated by ``;`` or new lines, numbers by spaces or commas: ``"0 -1 0; -1 5 -1"``."""
    rows = [r for r in text.replace(";", "\n").splitlines() if r.strip()]
    try:
        return [[float(v) for v in r.replace(",", " ").split()] for r in rows]
    except ValueError as exc:
        raise ValueError(f"conv2d: kernel: {exc}") from None


def format_kernel(kernel: list[list[float]]) -> str:
    return "\n".join(" ".join(f"{v:g}" for v in row) for row in kernel)


@dataclass(frozen=True)
class StageSpec:
    name: str
    label: str
    params: dict[str, Param]
    build: Callable[[dict[str, Any]], Stage]
    code: Callable[[dict[str, Any]], str]  # a Python expression that builds the same stage

    def defaults(self) -> dict[str, Any]:
        return {k: p.default if not isinstance(p, KernelParam) else [list(r) for r in p.default]
                for k, p in self.params.items()}

    def check(self, params: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise ValueError(f"{self.name}: unknown parameter(s) {unknown}; "
                             f"allowed: {', '.join(self.params) or 'none'}")
        merged = {**self.defaults(), **params}
        return {k: p.check(self.name, k, merged[k]) for k, p in self.params.items()}


def _elementwise(name: str, params: dict[str, Any], fn: Callable[[Tensor], Tensor]) -> Stage:
    return Stage(name, dict(params), fn)


def _lambda(name: str, params: dict[str, Any], body: str) -> str:
    return f"hm.Stage({name!r}, {params!r}, lambda img: {body})"


# ---- thresholds: OpenCV's cv2.threshold types ------------------------------------------
def _threshold(p: dict[str, Any]) -> Stage:
    t, m, mode = p["thresh"], p["maxval"], p["mode"]
    fns: dict[str, Callable[[Tensor], Tensor]] = {
        "binary": lambda img: elementwise.astype(img > t, img.dtype) * m,
        "binary_inv": lambda img: elementwise.astype(elementwise.logical_not(img > t), img.dtype) * m,
        "trunc": lambda img: elementwise.where(img > t, t, img),
        "tozero": lambda img: elementwise.where(img > t, img, 0.0),
        "tozero_inv": lambda img: elementwise.where(img > t, 0.0, img),
    }
    return _elementwise("threshold", p, fns[mode])


def _threshold_code(p: dict[str, Any]) -> str:
    t, m = p["thresh"], p["maxval"]
    body = {
        "binary": f"hm.astype(img > {t!r}, img.dtype) * {m!r}",
        "binary_inv": f"hm.astype(hm.logical_not(img > {t!r}), img.dtype) * {m!r}",
        "trunc": f"hm.where(img > {t!r}, {t!r}, img)",
        "tozero": f"hm.where(img > {t!r}, img, 0.0)",
        "tozero_inv": f"hm.where(img > {t!r}, 0.0, img)",
    }[p["mode"]]
    return _lambda("threshold", p, body)


def _normalize(img: Tensor) -> Tensor:
    return (img - reductions.min(img)) / (reductions.max(img) - reductions.min(img))


UNARY = ("abs", "sqrt", "exp", "log", "tanh", "sigmoid", "relu", "negative", "floor", "ceil",
         "round", "sin", "cos")
_UNARY_FNS: dict[str, Callable[[Tensor], Tensor]] = {n: getattr(elementwise, n) for n in UNARY}

_BORDER = ChoiceParam(tuple((b, b) for b in BORDERS), "reflect101")
_AXIS = ChoiceParam((("x (d/dx)", -1), ("y (d/dy)", -2)), -1)
_SHARPEN = ((0.0, -1.0, 0.0), (-1.0, 5.0, -1.0), (0.0, -1.0, 0.0))
_MODES = ("binary", "binary_inv", "trunc", "tozero", "tozero_inv")


def _call(fn: str, p: dict[str, Any]) -> str:
    return f"hm.{fn}(" + ", ".join(f"{k}={v!r}" for k, v in p.items()) + ")"


CATALOGUE: dict[str, StageSpec] = {s.name: s for s in (
    StageSpec("gaussian_blur", "Gaussian blur",
              {"kernel_size": IntParam(1, 31, 5, odd=True),
               "sigma": FloatParam(0.0, 20.0, None, step=0.1, optional=True), "border": _BORDER},
              lambda p: gaussian_blur(**p), lambda p: _call("gaussian_blur", p)),
    StageSpec("sobel", "Sobel derivative", {"axis": _AXIS, "border": _BORDER},
              lambda p: sobel(**p), lambda p: _call("sobel", p)),
    StageSpec("sobel_edge_detection", "Sobel magnitude (edges)", {"border": _BORDER},
              lambda p: sobel_edge_detection(**p), lambda p: _call("sobel_edge_detection", p)),
    StageSpec("conv2d", "Convolution with your kernel",
              {"kernel": KernelParam(15, _SHARPEN), "border": _BORDER},
              lambda p: conv2d(**p), lambda p: _call("conv2d", p)),
    StageSpec("gain_offset", "Gain and offset: img * gain + offset",
              {"gain": FloatParam(-20.0, 20.0, 1.0), "offset": FloatParam(-10.0, 10.0, 0.0)},
              lambda p: _elementwise("gain_offset", p,
                                     lambda img: img * p["gain"] + p["offset"]),
              lambda p: _lambda("gain_offset", p, f"img * {p['gain']!r} + {p['offset']!r}")),
    StageSpec("threshold", "Threshold (OpenCV's types)",
              {"thresh": FloatParam(-10.0, 10.0, 0.5), "maxval": FloatParam(-10.0, 10.0, 1.0),
               "mode": ChoiceParam(tuple((m, m) for m in _MODES), "binary")},
              _threshold, _threshold_code),
    StageSpec("clip", "Clip to [min, max]",
              {"min": FloatParam(-10.0, 10.0, 0.0), "max": FloatParam(-10.0, 10.0, 1.0)},
              lambda p: _elementwise("clip", p, lambda img: elementwise.clip(img, p["min"], p["max"])),
              lambda p: _lambda("clip", p, f"hm.clip(img, {p['min']!r}, {p['max']!r})")),
    StageSpec("gamma", "Gamma: max(img, 0) ** gamma",
              {"gamma": FloatParam(0.05, 10.0, 0.5)},
              lambda p: _elementwise("gamma", p,
                                     lambda img: elementwise.pow(elementwise.maximum(img, 0.0), p["gamma"])),
              lambda p: _lambda("gamma", p, f"hm.pow(hm.maximum(img, 0.0), {p['gamma']!r})")),
    StageSpec("unary", "Function: abs, sqrt, exp, log, …",
              {"fn": ChoiceParam(tuple((f, f) for f in UNARY), "abs")},
              lambda p: _elementwise("unary", p, _UNARY_FNS[p["fn"]]),
              lambda p: _lambda("unary", p, f"hm.{p['fn']}(img)")),
    StageSpec("normalize", "Normalize to [0, 1] (min/max)", {},
              lambda p: _elementwise("normalize", p, _normalize),
              lambda p: _lambda("normalize", p, "(img - hm.min(img)) / (hm.max(img) - hm.min(img))")),
)}


def make_stage(name: str, params: dict[str, Any]) -> tuple[Stage, dict[str, Any]]:
    """The stage ``name`` with ``params`` checked against its ranges (missing ones defaulted)."""
    spec = CATALOGUE.get(name)
    if spec is None:
        raise ValueError(f"unknown stage {name!r}; choose one of {', '.join(CATALOGUE)}")
    checked = spec.check(params)
    if name == "clip" and checked["min"] > checked["max"]:
        raise ValueError(f"clip: min={checked['min']!r} is above max={checked['max']!r}; "
                         "allowed: min <= max")
    return spec.build(checked), checked


def stage_code(name: str, params: dict[str, Any]) -> str:
    return CATALOGUE[name].code(params)
