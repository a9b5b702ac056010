"""Shared fixtures for the Hermes test suite.

Device selection
----------------
Every test that takes a ``device`` argument runs once per device that
``hm.devices()`` reports, with the device id as the test id (``[cpu:0]``,
``[opencl:0]``, ``[cuda:0]``). Set ``HERMES_TEST_DEVICES`` to a comma-separated
list of ids or kinds (``cpu,opencl:0``) to run on a subset.

Plug-in backends
----------------
``HERMES_TEST_PLUGINS=1`` puts ``tests/plugins`` on ``sys.path`` before devices
are discovered, so the test plug-in ``hermes_reference`` (a NumPy-only
``reference:0`` registered by its entry point) is one of ``hm.devices()``.
Naming it in ``HERMES_TEST_DEVICES`` (``reference``) turns this on too;
without either the plug-in stays out and the device list is the usual one.
With the plug-ins loaded only tests parametrised over ``device`` run (the
others assume the built-in device list): ``HERMES_TEST_DEVICES=reference``
runs the device suite on ``reference:0``.

Helpers (as fixtures, so test modules never import from this file)
-------------------------------------------------------------------
``run_on(device, fn, *inputs, **kwargs)``
    Builds ``fn(*inputs)`` inside ``with hm.device(device):`` (NumPy arrays
    among the inputs become tensors there; other arguments pass through),
    computes it outside the block and returns NumPy arrays. It also checks
    that the result is a lazy ``hm.Tensor`` pinned to ``device`` whose
    build-time ``shape``/``dtype`` match what was computed.
``each_case(device, fns, *inputs, tile=False)``
    ``[run_on(device, fn, *inputs) for fn in fns]`` for cases of one result dtype, all
    computed by one fused kernel (one build per device for a whole op or dtype matrix).
``assert_close(actual, expected, dtype=None, *, loose=False, rtol=None, atol=None)``
    Dtype and shape must equal NumPy's; values exact for bool/int, within
    per-dtype tolerances for floats (NaN == NaN, infinities must match).
``sample(shape, dtype, *, low=None, high=None, seed=0)``
    Deterministic test data of a dtype.

Tests marked ``@pytest.mark.gpu`` are skipped when there is no ``cuda`` device.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

PLUGINS_DIR = os.path.join(os.path.dirname(__file__), "plugins")
PLUGIN_KINDS = ("reference",)  # the kinds of the test plug-ins in PLUGINS_DIR


def _plugins_wanted() -> bool:
    named = {p.strip().split(":")[0] for p in os.environ.get("HERMES_TEST_DEVICES", "").split(",")}
    return os.environ.get("HERMES_TEST_PLUGINS") == "1" or bool(named & set(PLUGIN_KINDS))


# before hermes_nb is imported: importlib.metadata finds the plug-ins' dist-info here
if _plugins_wanted() and PLUGINS_DIR not in sys.path:
    sys.path.insert(0, PLUGINS_DIR)

# every healthy OpenCL driver is a device of its own here (not only the newest per device),
# so a crash in any driver present fails the suite rather than a user's notebook
os.environ.setdefault("HERMES_OPENCL_ALL_DRIVERS", "1")

import hermes_nb as hm  # noqa: E402  (after the plug-ins joined sys.path)

GPU_SKIP_REASON = "needs a CUDA GPU: no cuda device found (cupy missing or no GPU)"

SUPPORTED_DTYPES = tuple(np.dtype(d) for d in ("bool", "int32", "int64", "float32", "float64"))

# (rtol, atol) per float dtype: "default" for exactly rounded or nearly so
# arithmetic, "loose" for sums, var/std, pow, transcendentals on some devices.
TOLERANCES = {
    np.dtype("float32"): {"default": (1e-5, 1e-6), "loose": (1e-4, 1e-5)},
    np.dtype("float64"): {"default": (1e-12, 1e-14), "loose": (1e-10, 1e-12)},
}
# complex values: those of their components' dtype
TOLERANCES[np.dtype("complex64")] = TOLERANCES[np.dtype("float32")]
TOLERANCES[np.dtype("complex128")] = TOLERANCES[np.dtype("float64")]


# ----------------------------------------------------------------------------
# devices
# ----------------------------------------------------------------------------


def _all_devices() -> list[Any]:
    return list(hm.devices())


def _device_filter() -> set[str] | None:
    spec = os.environ.get("HERMES_TEST_DEVICES", "").strip()
    if not spec:
        return None
    return {part.strip() for part in spec.split(",") if part.strip()}


def _selected(dev: Any, wanted: set[str] | None) -> bool:
    return wanted is None or str(dev.id) in wanted or str(dev.kind) in wanted


def selected_devices() -> list[Any]:
    wanted = _device_filter()
    return [d for d in _all_devices() if _selected(d, wanted)]


def cuda_devices() -> list[Any]:
    return [d for d in _all_devices() if d.kind == "cuda"]


_SELECTED = selected_devices()
_KINDS = ("cpu", "opencl", "cuda")


def pytest_report_header(config: pytest.Config) -> list[str]:
    from hermes_nb.backends.opencl.device import hidden_devices

    lines = [f"hermes devices: {', '.join(f'{d.id} ({d.name})' for d in _all_devices())}"]
    lines += [f"hermes: OpenCL {h.name} [{h.driver}] not tested: {h.reason}" for h in hidden_devices()]
    return lines


def pytest_configure(config: pytest.Config) -> None:
    # placement history lives in memory for the test run: the user's timings on disk
    # neither steer the tests nor get polluted by them
    from hermes_nb.scheduler import Scheduler, policies

    policies._default = Scheduler(None)
    wanted = _device_filter()
    if wanted:
        kinds = {*_KINDS, *(str(d.kind) for d in _all_devices())}
        known = {str(d.id) for d in _all_devices()} | kinds
        unknown = sorted(w for w in wanted if w not in known and w.split(":")[0] not in kinds)
        if unknown:
            available = ", ".join(str(d.id) for d in _all_devices())
            raise pytest.UsageError(
                f"HERMES_TEST_DEVICES names unknown devices {unknown}; "
                f"available: {available} (or kinds: {', '.join(sorted(kinds))}; "
                "HERMES_TEST_PLUGINS=1 adds the test plug-ins' devices)"
            )


@pytest.fixture(params=_SELECTED, ids=[str(d.id) for d in _SELECTED])
def device(request: pytest.FixtureRequest) -> Any:
    """Each selected device in turn (a ``hm.Device``; ``str(device)`` is its id)."""
    return request.param


def _deselect_off_plugin_devices(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With the test plug-ins loaded, keep only tests parametrised over a device: the rest
    assume the built-in device list, and the usual run covers them."""
    kept = [i for i in items if getattr(i, "callspec", None) and "device" in i.callspec.params]
    dropped = [i for i in items if i not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if PLUGINS_DIR in sys.path:
        _deselect_off_plugin_devices(config, items)
    cudas = cuda_devices()
    wanted = _device_filter()
    if not cudas:
        gpu_skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    elif not any(_selected(d, wanted) for d in cudas):
        gpu_skip = pytest.mark.skip(reason="cuda devices not selected by HERMES_TEST_DEVICES")
    else:
        gpu_skip = None
    for item in items:
        callspec = getattr(item, "callspec", None)
        dev = callspec.params.get("device") if callspec is not None else None
        kind = getattr(dev, "kind", None)
        if kind == "opencl":
            item.add_marker(pytest.mark.opencl)
        elif kind == "cuda":
            item.add_marker(pytest.mark.gpu)
        if gpu_skip is not None and item.get_closest_marker("gpu") is not None:
            item.add_marker(gpu_skip)


@pytest.fixture
def cuda_device() -> Any:
    """The first cuda device (tests using it should be marked ``gpu``)."""
    cudas = cuda_devices()
    if not cudas:
        pytest.skip(GPU_SKIP_REASON)
    return cudas[0]


# ----------------------------------------------------------------------------
# running and comparing
# ----------------------------------------------------------------------------


def _device_id(device: Any) -> str:
    return str(getattr(device, "id", device))


def _find_device(device: Any) -> Any:
    did = _device_id(device)
    for d in _all_devices():
        if d.id == did:
            return d
    raise LookupError(f"no device {did!r} in hm.devices()")


def _materialise(out: Any, device: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return tuple(_materialise(o, device) for o in out)
    assert isinstance(out, hm.Tensor), f"expected a lazy hm.Tensor, got {type(out).__name__}"
    lazy_shape, lazy_dtype = out.shape, out.dtype
    assert isinstance(lazy_shape, tuple), f"Tensor.shape must be a tuple, got {lazy_shape!r}"
    assert out.device == _device_id(device), (
        f"tensor built inside `with hm.device({_device_id(device)!r})` is pinned to {out.device!r}"
    )
    result = out.numpy()
    assert isinstance(result, np.ndarray), f".numpy() returned {type(result).__name__}"
    assert result.shape == lazy_shape, f"build-time shape {lazy_shape} != computed shape {result.shape}"
    assert result.dtype == lazy_dtype, f"build-time dtype {lazy_dtype} != computed dtype {result.dtype}"
    return result


def _needs_fp64(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    values = [*args, *kwargs.values()]
    wide = ("float64", "complex128")
    return any(isinstance(v, np.ndarray) and v.dtype.name in wide for v in values) or any(
        isinstance(v, str) and v in wide for v in values
    )


def run_on(device: Any, fn: Callable[..., Any], *inputs: Any, **kwargs: Any) -> Any:
    """Build ``fn(*inputs, **kwargs)`` pinned to ``device``; return the NumPy result(s)."""
    dev = _find_device(device)
    if not dev.fp64:
        # Building a float64 op on a device without fp64 must fail at build time;
        # if it does, there is nothing further to compare on this device.
        try:
            with hm.device(dev):
                args = [hm.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs]
                out = fn(*args, **kwargs)
        except ValueError as exc:
            if _needs_fp64(inputs, kwargs) or "float64" in str(exc):
                assert dev.id in str(exc), f"fp64 error does not name the device: {exc}"
                pytest.skip(f"{dev.id} has no fp64; build raised ValueError as specified")
            raise
        return _materialise(out, dev)
    with hm.device(dev):
        args = [hm.asarray(x) if isinstance(x, np.ndarray) else x for x in inputs]
        out = fn(*args, **kwargs)
    return _materialise(out, dev)


def each_case(device: Any, fns: Sequence[Callable[..., Any]], *arrays: np.ndarray,
              tile: bool = False, selector: str = "int32") -> list[np.ndarray]:
    """``[run_on(device, fn, *arrays) for fn in fns]`` (one result dtype) from ONE generated
    kernel: row ``k`` of a nested ``where`` over a new leading axis is ``fns[k]``, so a
    matrix of ops or dtypes costs one kernel build per device, not one per case. ``tile``
    repeats the inputs (and the row selector) along that axis, for ops the fuser keeps out
    of a broadcasting kernel (float functions) and for OpenCL's vector form, which also
    needs ``selector`` (the row number's dtype) to be the inputs' float dtype."""
    k = len(fns)
    if k == 1:
        return [run_on(device, fns[0], *arrays)]
    sel = np.arange(k, dtype=selector).reshape((k,) + (1,) * arrays[0].ndim)
    if tile:
        arrays = tuple(np.broadcast_to(a, (k, *a.shape)).copy() for a in arrays)
        sel = np.broadcast_to(sel, arrays[0].shape).copy()

    def build(s: Any, *ts: Any) -> Any:
        out = fns[-1](*ts)
        for j in range(k - 2, -1, -1):
            out = hm.where(s == j, fns[j](*ts), out)
        if "fused_elementwise" in _find_device(device).fused_ops:
            assert len(out.explain().kernels) == 1, out.explain()
        return out

    return list(run_on(device, build, sel, *arrays))


def tolerance(dtype: Any, loose: bool | str = False) -> tuple[float, float]:
    dtype = np.dtype(dtype)
    return TOLERANCES[dtype]["loose" if loose else "default"]


def assert_close(
    actual: Any,
    expected: Any,
    dtype: Any = None,
    *,
    loose: bool = False,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """``actual`` (from Hermes) matches ``expected`` (from NumPy) in dtype, shape and values."""
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), f"expected an ndarray, got {type(actual).__name__}"
    if dtype is not None:
        assert expected.dtype == np.dtype(dtype), (
            f"test bug: reference dtype {expected.dtype} != stated {np.dtype(dtype)}"
        )
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != NumPy's {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != NumPy's {expected.shape}"
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, strict=True)
        return
    r, a = tolerance(expected.dtype, loose)
    np.testing.assert_allclose(
        actual,
        expected,
        rtol=r if rtol is None else rtol,
        atol=a if atol is None else atol,
        equal_nan=True,
        strict=True,
    )


def sample(
    shape: int | tuple[int, ...],
    dtype: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    seed: int = 0,
) -> np.ndarray:
    """Deterministic data: bools ~50/50, ints in [low, high], floats uniform in [low, high)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        lo = -20 if low is None else int(low)
        hi = 20 if high is None else int(high)
        return np.asarray(rng.integers(lo, hi, size=shape, endpoint=True), dtype=dtype)
    lo = -3.0 if low is None else float(low)
    hi = 3.0 if high is None else float(high)
    return np.asarray(rng.uniform(lo, hi, size=shape), dtype=dtype)


@pytest.fixture(name="run_on")
def _run_on_fixture() -> Callable[..., Any]:
    return run_on


@pytest.fixture(name="each_case")
def _each_case_fixture() -> Callable[..., list[np.ndarray]]:
    return each_case


@pytest.fixture(name="assert_close")
def _assert_close_fixture() -> Callable[..., None]:
    return assert_close


@pytest.fixture(name="sample")
def _sample_fixture() -> Callable[..., np.ndarray]:
    return sample
