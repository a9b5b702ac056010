"""The builder's pieces that are widgets: one stage's entry and the control for a parameter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as w
import numpy as np

from hermes_nb.api.image import Stage
from hermes_nb.api.tensor import Tensor
from hermes_nb.widgets.builder_catalogue import (
    ChoiceParam,
    FloatParam,
    IntParam,
    Param,
    format_kernel,
)


@dataclass(eq=False)
class Entry:
    """One stage in the builder with its controls; ``custom`` stages came from code and have none."""

    name: str
    params: dict[str, Any]
    stage: Stage
    custom: bool
    title: w.HTML = field(default_factory=w.HTML)
    error: w.HTML = field(default_factory=w.HTML)
    controls: dict[str, w.Widget] = field(default_factory=dict)
    box: w.VBox | None = None


def as_image(image: Any) -> np.ndarray:
    """The image the builder works on: the sample when None; integer pixels scaled to [0, 1]."""
    if image is None:
        from hermes_nb.data import sample_image

        return sample_image()
    a = image.numpy() if isinstance(image, Tensor) else np.asarray(image)
    if a.ndim < 2:
        raise ValueError(f"PipelineBuilder: expected an image (H, W) or (..., H, W), got {a.shape}")
    if a.dtype.kind == "b":
        return a.astype(np.float32)
    if a.dtype.kind in "iu":  # pixels scaled to [0, 1], where the stages' ranges fit
        return (a / np.iinfo(a.dtype).max).astype(np.float32)
    if a.dtype.kind != "f":
        raise TypeError(f"PipelineBuilder: expected a numeric image, got dtype {a.dtype}")
    return a


def control(param: Param, name: str, value: Any) -> w.Widget:
    """The widget for one parameter, bounded like the parameter: out-of-range values cannot be
    entered (sliders clamp, odd-only sizes step by 2, menus list the allowed values)."""
    if isinstance(param, IntParam):
        ctl = w.IntSlider(value=value, min=param.lo, max=param.hi, step=2 if param.odd else 1)
    elif isinstance(param, FloatParam):
        ctl = w.FloatSlider(value=param.lo if value is None else value, min=param.lo,
                            max=param.hi, step=param.step, readout_format=".2f")
        if param.optional:
            ctl.tooltip = f"{param.lo:g} = automatic"
    elif isinstance(param, ChoiceParam):
        ctl = w.Dropdown(options=list(param.options), value=value)
    else:
        ctl = w.Textarea(value=format_kernel(value), rows=len(value),
                         placeholder="rows of numbers, e.g. 0 -1 0; -1 5 -1; 0 -1 0")
    ctl.description = name
    ctl.continuous_update = False  # a new value is a new kernel to compile: once per release
    ctl.add_class(f"hermes-builder-param-{name}")
    return ctl


def stage_box(entry: Entry, on_button: Callable[[Entry, int], None]) -> w.VBox:
    """The entry's panel: title, move/remove buttons (action -1, +1, 0), controls, error line."""
    buttons = []
    for label, tip, cls, action in (("↑", "move up", "up", -1), ("↓", "move down", "down", 1),
                                    ("✕", "remove", "remove", 0)):
        b = w.Button(description=label, tooltip=tip, layout={"width": "34px"})
        b.add_class(f"hermes-builder-{cls}")
        b.on_click(lambda _, a=action: on_button(entry, a))
        buttons.append(b)
    entry.error.add_class("hermes-builder-stage-error")
    box = w.VBox([w.HBox([entry.title, *buttons]), *entry.controls.values(), entry.error])
    box.add_class("hermes-builder-stage")
    box.add_class(f"hermes-builder-stage-{entry.name}")
    return box
