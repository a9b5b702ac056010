"""Image ops with OpenCV's conventions, on ``(H, W)`` images and ``(..., H, W)`` batches.

Called without an image, each op returns a :class:`Stage`; ``compose`` chains
stages into a :class:`Pipeline`.

>>> import numpy as np, hermes_nb as hm
>>> edges = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
>>> edges(np.zeros((8, 8), np.float32)).shape
(8, 8)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hermes_nb.api.elementwise import _as_tensor, astype, hypot
from hermes_nb.api.graph import make_node
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes
from hermes_nb.ir.ops import BORDERS

if TYPE_CHECKING:
    from hermes_nb.api.plan import Plan

# OpenCV's getGaussianKernel uses these fixed kernels when sigma <= 0 and ksize <= 7.
_SMALL_GAUSSIAN = {
    1: (1.0,),
    3: (0.25, 0.5, 0.25),
    5: (0.0625, 0.25, 0.375, 0.25, 0.0625),
    7: (0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125),
}
_SOBEL_DERIVATIVE = (-1.0, 0.0, 1.0)
_SOBEL_SMOOTH = (1.0, 2.0, 1.0)


@dataclass(frozen=True)
class Stage:
    """One image op with its parameters, waiting for an image."""

    name: str
    params: dict[str, Any]
    apply: Callable[[Tensor], Tensor] = field(repr=False, compare=False)

    def __call__(self, image: Any) -> Tensor:
        return self.apply(_image(self.name, image))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"


@dataclass(frozen=True)
class Pipeline:
    """Stages applied one after another; call it on a Tensor or NumPy array."""

    stages: tuple[Stage, ...]

    def __call__(self, image: Any) -> Tensor:
        out = _image("compose", image) if self.stages else _as_tensor(image, "compose")
        for stage in self.stages:
            out = stage(out)
        return out

    def explain(self, shape: Sequence[int] = (512, 512), dtype: object = "float32") -> Plan:
        """The kernels this pipeline runs for an image of ``shape``."""
        from hermes_nb.api.creation import zeros

        return self(zeros(tuple(shape), dtype=dtype)).explain()

    def __repr__(self) -> str:
        return "compose(" + ", ".join(map(repr, self.stages)) + ")"


def compose(*stages: Stage) -> Pipeline:
    """Chain image stages into one pipeline."""
    for s in stages:
        if not isinstance(s, (Stage, Pipeline)):
            raise TypeError(
                f"compose: expected stages such as hm.gaussian_blur(kernel_size=5), got {s!r}"
            )
    flat: list[Stage] = []
    for s in stages:
        flat.extend(s.stages if isinstance(s, Pipeline) else (s,))
    return Pipeline(tuple(flat))


# ---- validation ---------------------------------------------------------------------
def _image(op: str, x: Any) -> Tensor:
    t = _as_tensor(x, op)
    if dtypes.is_complex(t.dtype):
        raise TypeError(f"{op}: stencil and image ops take real images only, got dtype "
                        f"{t.dtype.name}; allowed: float32, float64 (bool and integer images "
                        "become float32); filter real(x) and imag(x) separately")
    if t.ndim < 2:
        raise ValueError(f"{op}: expected an image of shape (H, W) or (..., H, W), got {t.shape}")
    if not dtypes.is_float(t.dtype):
        t = astype(t, dtypes.float32)  # image convention: integer pixels become float32
    return t


def _border(op: str, border: str) -> str:
    if border not in BORDERS:
        raise ValueError(f"{op}: unknown border mode {border!r}; choose one of {', '.join(BORDERS)}")
    return border


MAX_KERNEL_SIZE = 1001
"""The largest ``kernel_size`` accepted: its dense k×k weights (8 MB at 1001) are built and
kept with the graph; larger blurs are better done at a lower resolution."""


def _odd_size(op: str, name: str, value: Any) -> int:
    allowed = f"an odd int from 1 to {MAX_KERNEL_SIZE}"
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be {allowed}, got {value!r}")
    if value < 1 or value % 2 == 0 or value > MAX_KERNEL_SIZE:
        raise ValueError(f"{op}: {name} must be {allowed}, got {value}")
    return int(value)


def _is_real(value: Any) -> bool:
    """A Python or NumPy real number (not a bool)."""
    return isinstance(value, (int, float, np.integer, np.floating)) \
        and not isinstance(value, (bool, np.bool_))


def _kernel_weights(kernel: Any) -> np.ndarray:
    """A ``conv2d`` kernel as float64 weights; what would lose information is refused."""
    from hermes_nb.api.creation import check_representable

    if isinstance(kernel, Tensor):
        kernel = kernel.numpy()
    try:
        raw = kernel if isinstance(kernel, np.ndarray) else np.asarray(kernel)
    except ValueError as exc:  # NumPy refuses ragged nesting
        raise ValueError(f"conv2d: kernel must be a 2-D array of real numbers with rows of one "
                         f"length, got the ragged {kernel!r}") from exc
    check_representable(raw, "conv2d", kernel, name="kernel")
    if raw.dtype.kind == "c":  # stencil kernels are real: an imaginary part would be lost
        raise TypeError(f"conv2d: kernel holds complex values ({raw.dtype.name} {kernel!r:.60}), "
                        "which stencils do not take; allowed: real numbers (filter with the "
                        "real and imaginary parts separately)")
    return np.asarray(raw, dtype=np.float64)


def _stencil(x: Tensor, weights: np.ndarray, border: str,
             separable: tuple[tuple[float, ...], tuple[float, ...]] | None,
             stage: tuple[str, str] = ("conv2d", "conv2d")) -> Tensor:
    # ``stage``: the user's op name and its short form, which plans and diagrams show
    rows = tuple(map(tuple, np.asarray(weights, dtype=np.float64).tolist()))
    return Tensor(make_node("conv2d", [x.node], x.shape, x.dtype,
                            weights=rows, border=border, separable=separable, stage=stage))


# ---- ops ----------------------------------------------------------------------------
def gaussian_kernel(kernel_size: int, sigma: float | None = None) -> np.ndarray:
    """OpenCV's ``getGaussianKernel``: sampled and normalised 1-D Gaussian weights."""
    k = _odd_size("gaussian_kernel", "kernel_size", kernel_size)
    if (sigma is None or sigma <= 0) and k in _SMALL_GAUSSIAN:
        return np.array(_SMALL_GAUSSIAN[k])
    s = sigma if sigma is not None and sigma > 0 else 0.3 * ((k - 1) * 0.5 - 1) + 0.8
    x = np.arange(k) - (k - 1) / 2
    g = np.exp(-(x * x) / (2 * s * s))
    return g / g.sum()


def gaussian_blur(x: Any = None, kernel_size: int = 5, sigma: float | None = None,
                  border: str = "reflect101") -> Tensor | Stage:
    """Gaussian blur like ``cv2.GaussianBlur(x, (k, k), sigma)``, applied separably."""
    k = _odd_size("gaussian_blur", "kernel_size", kernel_size)
    if sigma is not None and (not _is_real(sigma) or not math.isfinite(sigma) or sigma < 0):
        raise ValueError(f"gaussian_blur: sigma must be None or a finite number >= 0, got {sigma!r}")
    if isinstance(sigma, np.generic):  # a NumPy scalar is a number like any other
        sigma = sigma.item()
    _border("gaussian_blur", border)
    g = gaussian_kernel(k, sigma)
    taps = tuple(float(v) for v in g)

    def apply(img: Tensor) -> Tensor:
        return _stencil(img, np.outer(g, g), border, (taps, taps), ("gaussian_blur", f"blur{k}"))

    stage = Stage("gaussian_blur", {"kernel_size": k, "sigma": sigma, "border": border}, apply)
    return stage if x is None else stage(x)


def sobel(x: Any = None, axis: int = -1, border: str = "reflect101") -> Tensor | Stage:
    """One Sobel derivative: ``axis=-1`` is d/dx (``cv2.Sobel(x, -1, 1, 0)``), ``-2`` is d/dy."""
    _border("sobel", border)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"sobel: axis must be an int, got {axis!r}")
    if x is not None:
        t = _image("sobel", x)
        if axis in (t.ndim - 1, t.ndim - 2):
            axis -= t.ndim
    if axis not in (-1, -2):
        raise ValueError(
            f"sobel: axis {axis} is not an image axis; use -1 (x, along W) or -2 (y, along H)"
        )
    if axis == -1:
        col, row = _SOBEL_SMOOTH, _SOBEL_DERIVATIVE
    else:
        col, row = _SOBEL_DERIVATIVE, _SOBEL_SMOOTH

    def apply(img: Tensor) -> Tensor:
        return _stencil(img, np.outer(col, row), border, (col, row), ("sobel", "sobel"))

    stage = Stage("sobel", {"axis": axis, "border": border}, apply)
    return stage if x is None else stage(x)


def sobel_edge_detection(x: Any = None, border: str = "reflect101") -> Tensor | Stage:
    """Gradient magnitude ``hypot(d/dx, d/dy)`` of the 3×3 Sobel operator."""
    _border("sobel_edge_detection", border)

    def apply(img: Tensor) -> Tensor:
        gx = sobel(img, axis=-1, border=border)
        gy = sobel(img, axis=-2, border=border)
        return hypot(gx, gy)

    stage = Stage("sobel_edge_detection", {"border": border}, apply)
    return stage if x is None else stage(x)


def conv2d(x: Any = None, kernel: Any = None, border: str = "reflect101") -> Tensor | Stage:
    """2-D correlation with ``kernel`` (like ``cv2.filter2D``), anchored at its centre."""
    if kernel is None:
        raise TypeError("conv2d: a kernel (2-D array of odd sizes) is required")
    weights = _kernel_weights(kernel)
    if weights.ndim != 2 or any(s < 1 or s % 2 == 0 for s in weights.shape):
        raise ValueError(
            f"conv2d: kernel must be 2-D with odd sizes, got shape {weights.shape}"
        )
    if not np.isfinite(weights).all():
        raise ValueError("conv2d: kernel weights must be finite")
    _border("conv2d", border)

    def apply(img: Tensor) -> Tensor:
        return _stencil(img, weights, border, None)

    stage = Stage("conv2d", {"kernel": weights.tolist(), "border": border}, apply)
    return stage if x is None else stage(x)
