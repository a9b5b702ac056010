"""``hm.asarray``'s ``copy=`` (the array API's semantics) on every device: ``None`` reads the
caller's array in place at each compute, ``True`` takes a snapshot, ``False`` never copies.

Whatever a device keeps of an input, a write to the array before a compute is seen by that
compute, a computed result never changes afterwards, and Hermes never writes into the array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import hermes_nb as hm
from hermes_nb.backends import get_device

# Whether cpu:0's ``from_host`` hands a C-contiguous native-dtype array through as a
# read-only view (hermes_nb/backends/cpu/device.py), as a device that declares
# ``shares_host_memory`` does; before that it copied every input. The shares-memory test
# checks cpu:0 against this either way: computing from the caller's memory when True, from
# its own copy when False.
CPU_FROM_HOST_READS_IN_PLACE = bool(getattr(get_device("cpu:0"), "shares_host_memory", False))

JIT_SHAPE = (256, 256)  # 65536 elements: cpu:0 runs the Numba kernel, not NumPy op by op


def _data(shape: tuple[int, ...] = (48, 40), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def _inputs_seen_by(device: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The buffers ``device`` runs its kernels on, recorded as they arrive."""
    device = get_device(str(device.id))  # the instance the runtime runs on
    seen: list[Any] = []
    real = device.execute

    def spy(spec: Any, inputs: Any) -> Any:
        seen.extend(inputs)
        return real(spec, inputs)

    monkeypatch.setattr(device, "execute", spy)
    return seen


def _uploads_to(device: Any, monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """The host arrays copied onto ``device``, recorded as they go."""
    device = get_device(str(device.id))
    sent: list[np.ndarray] = []
    real = device.from_host

    def spy(array: np.ndarray) -> Any:
        sent.append(np.array(array, copy=True))
        return real(array)

    monkeypatch.setattr(device, "from_host", spy)
    return sent


# ---- copy=None: a view of the caller's array, read at each compute -----------------------


def test_copy_none_shares_memory_and_sees_a_later_write(device: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    a = _data()
    with hm.device(device):
        t = hm.asarray(a)
        doubled = t * 2
    assert np.shares_memory(t.node.attrs["value"], a)
    assert a.flags.writeable  # the caller's flags stay as they are
    seen = _inputs_seen_by(device, monkeypatch)
    np.testing.assert_array_equal(doubled.numpy(), a * 2)
    if str(device.id) == "cpu:0":
        reads_in_place = any(isinstance(b, np.ndarray) and np.shares_memory(b, a) for b in seen)
        assert reads_in_place == CPU_FROM_HOST_READS_IN_PLACE, (
            f"cpu:0 {'computes from' if reads_in_place else 'copies'} the caller's array, but "
            f"CPU_FROM_HOST_READS_IN_PLACE is {CPU_FROM_HOST_READS_IN_PLACE}")
    a[0, :] = 7.0
    np.testing.assert_array_equal(doubled.numpy()[0], np.full(a.shape[1], 14.0, np.float32))
    np.testing.assert_array_equal(doubled.numpy(), a * 2)


def test_copy_false_shares_memory_when_no_copy_is_needed(device: Any) -> None:
    a = _data()
    with hm.device(device):
        t = hm.asarray(a, copy=False)
        plus = t + 1
    assert np.shares_memory(t.node.attrs["value"], a)
    a[1, 1] = 3.0
    np.testing.assert_array_equal(plus.numpy(), a + 1)


@pytest.mark.parametrize("source", ["dtype change", "transposed", "strided", "big-endian",
                                    "list"])
def test_copy_none_copies_only_when_needed(device: Any, source: str) -> None:
    a = _data()
    obj, dtype, expected = _needs_a_copy(a, source)
    with hm.device(device):
        t = hm.asarray(obj, dtype=dtype)
    assert not np.shares_memory(t.node.attrs["value"], a)
    a[...] = 0  # a copy was taken when the tensor was built
    np.testing.assert_array_equal((t * 1).numpy(), expected)


def _needs_a_copy(a: np.ndarray, source: str) -> tuple[Any, Any, np.ndarray]:
    """An input made from ``a`` that cannot be read in place, its dtype= and its value."""
    if source == "dtype change":
        return a, "float64", a.astype(np.float64)
    if source == "transposed":
        return a.T, None, a.T.copy()
    if source == "strided":
        return a[:, ::2], None, a[:, ::2].copy()
    if source == "big-endian":
        big = a.astype(">f4")
        a.view(np.uint8)[...] = big.view(np.uint8)  # ``a`` now holds the big-endian bytes
        return a.view(">f4"), None, big.astype(np.float32)
    return a.tolist(), "float32", a.copy()


# ---- copy=True: a snapshot --------------------------------------------------------------


def test_copy_true_is_a_snapshot(device: Any) -> None:
    a = _data()
    before = a.copy()
    with hm.device(device):
        t = hm.asarray(a, copy=True)
        doubled = t * 2
    assert not np.shares_memory(t.node.attrs["value"], a)
    a[...] = 5.0
    np.testing.assert_array_equal(doubled.numpy(), before * 2)
    np.testing.assert_array_equal(hm.from_numpy(a).numpy(), a)  # from_numpy copies too


# ---- copy=False: never a copy -----------------------------------------------------------


@pytest.mark.parametrize("source", ["dtype change", "transposed", "strided", "big-endian",
                                    "list"])
def test_copy_false_raises_when_a_copy_is_needed(device: Any, source: str) -> None:
    obj, dtype, _ = _needs_a_copy(_data(), source)
    with hm.device(device), pytest.raises(ValueError, match=r"^asarray: copy=False"):
        hm.asarray(obj, dtype=dtype, copy=False)


# ---- no stale result: the same tensor computed before and after a write -----------------

EXPRESSIONS: dict[str, Callable[[Any], Any]] = {
    "identity": lambda x: x,
    "fused elementwise": lambda x: x * 2.0 + 1.0,
    "sum": lambda x: x.sum(axis=0),
    "transpose": lambda x: x.T,
    "reshape": lambda x: x.reshape(-1),
    "slice": lambda x: x[2:],
    "slices added": lambda x: x[1:, ::2] + x[1:, 1::2],
}


@pytest.mark.parametrize("shape", [(48, 40), JIT_SHAPE], ids=["small", "jit"])
@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_no_stale_result_after_a_write_between_computes(device: Any, assert_close, name: str,
                                                         shape: tuple[int, ...]) -> None:
    fn = EXPRESSIONS[name]
    a = _data(shape)
    with hm.device(device):
        out = fn(hm.asarray(a))
    assert_close(out.numpy(), fn(a), loose=True)
    a *= -3.0
    a[0, 0] = 9.0
    assert_close(out.numpy(), fn(a), loose=True)


def test_every_compute_uploads_the_current_contents(device: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A device with its own memory (opencl:0, cuda:N) copies the array at each compute:
    it never keeps a device copy of a borrowed input from an earlier run."""
    a = _data()
    with hm.device(device):
        out = hm.asarray(a) - 0.5
    sent = _uploads_to(device, monkeypatch)
    np.testing.assert_array_equal(out.numpy(), a - np.float32(0.5))
    a[2] = 4.0
    np.testing.assert_array_equal(out.numpy(), a - np.float32(0.5))
    if str(device.id) != "cpu:0":
        uploaded = [s for s in sent if s.shape == a.shape]
        assert len(uploaded) == 2 and not np.array_equal(uploaded[0], uploaded[1])
        np.testing.assert_array_equal(uploaded[1], a)


def test_a_computed_result_is_a_snapshot(device: Any) -> None:
    a = _data()
    before = a.copy()
    with hm.device(device):
        t = hm.asarray(a)
        computed = [e(t).compute() for e in EXPRESSIONS.values()]
    a[...] = 2.0
    for result, expression in zip(computed, EXPRESSIONS.values()):
        np.testing.assert_allclose(result.numpy(), expression(before), rtol=1e-5, atol=1e-6)


# ---- Hermes never writes into the caller's array ----------------------------------------

SAME_SHAPE_AND_DTYPE: dict[str, Callable[[Any], Any]] = {
    "identity": lambda x: x,
    "plus zero": lambda x: x + 0,
    "times one": lambda x: x * 1,
    "astype same dtype": lambda x: x.astype("float32"),
    "reshape to its shape": lambda x: x.reshape(x.shape),
    "double transpose": lambda x: x.T.T,
    "maximum with itself": lambda x: hm.maximum(x, x),
    "where": lambda x: hm.where(x > 0, x, x),
    "to its device": lambda x: x.to(x.device or "cpu:0"),
}


@pytest.mark.parametrize("name", list(SAME_SHAPE_AND_DTYPE))
def test_hermes_never_writes_into_the_callers_array(device: Any, name: str) -> None:
    a = _data()
    before = a.copy()
    with hm.device(device):
        out = SAME_SHAPE_AND_DTYPE[name](hm.asarray(a))
    for result in (out.numpy(), out.compute().numpy(), np.asarray(out)):
        assert result.shape == a.shape and result.dtype == a.dtype
        _try_to_write(result)
    assert a.flags.writeable
    np.testing.assert_array_equal(a, before)
    np.testing.assert_array_equal(out.numpy(), before)


def _try_to_write(result: np.ndarray) -> None:
    """Write into a result as a user might: refused (read-only) or into a copy."""
    try:
        result[...] = -42.0
    except ValueError as exc:
        assert "read-only" in str(exc)


def test_results_never_alias_the_array_when_cpu_reads_in_place(
        device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With cpu:0 computing from the caller's memory (the pass-through ``from_host``,
    simulated here), a view op's result would be a view of the array: it is copied."""
    if str(device.id) != "cpu:0":
        pytest.skip("only cpu:0 computes from host memory in place")
    monkeypatch.setattr(get_device("cpu:0"), "from_host", _read_in_place)
    a = _data()
    before = a.copy()
    with hm.device(device):
        t = hm.asarray(a)
        seen = _inputs_seen_by(device, monkeypatch)
        results = {name: e(t).compute() for name, e in SAME_SHAPE_AND_DTYPE.items()}
    assert any(np.shares_memory(b, a) for b in seen if isinstance(b, np.ndarray))
    a[...] = 3.0
    for name, result in results.items():
        assert not np.shares_memory(result.numpy(), a), name
        np.testing.assert_array_equal(result.numpy(), before, err_msg=name)


def _read_in_place(array: np.ndarray) -> np.ndarray:
    """The proposed cpu:0 ``from_host``: a read-only view when no copy is needed."""
    if array.flags.c_contiguous and array.dtype.isnative:
        view = array.view()
        view.flags.writeable = False
        return view
    return np.array(array, order="C", copy=True)


def test_the_callers_read_only_array_is_borrowed_too(device: Any) -> None:
    a = _data()
    a.flags.writeable = False
    with hm.device(device):
        t = hm.asarray(a)
    assert np.shares_memory(t.node.attrs["value"], a)
    np.testing.assert_array_equal((t * 2).numpy(), a * 2)
    assert not a.flags.writeable


# ---- build time: keys, folding, messages (no device) ------------------------------------


def test_a_borrowed_constant_has_a_unique_key_and_a_copied_one_its_contents() -> None:
    a = _data((3, 4))
    assert hm.asarray(a).node.key != hm.asarray(a).node.key
    assert hm.asarray(a, copy=True).node.key == hm.asarray(a.copy(), copy=True).node.key
    assert hm.from_numpy(a).node.key == hm.asarray(a, copy=True).node.key
    assert (hm.asarray(a) + 1).node.key != (hm.asarray(a) + 1).node.key


def test_small_borrowed_constants_are_folded_from_their_current_contents() -> None:
    a = np.arange(6, dtype=np.int64)
    t = hm.asarray(a)
    folded = t * 3 + hm.asarray(a)  # small enough to fold, and the two inputs CSE-equal
    np.testing.assert_array_equal(folded.numpy(), a * 4)
    a[:] = [5, 4, 3, 2, 1, 0]
    np.testing.assert_array_equal(folded.numpy(), a * 4)


def test_copy_false_error_message_names_asarray_the_argument_and_why() -> None:
    a = np.zeros((2, 3), np.float32)
    cases = [
        ((a, "float64"), "the float32 array of shape (2, 3) cannot be used without a copy: "
                         "converting its dtype float32 to float64"),
        ((a.T, None), "the float32 array of shape (3, 2) cannot be used without a copy: it is "
                      "not C-contiguous"),
        ((a.astype(">f4"), None), "its dtype '>f4' is not in native byte order"),
        (([1, 2], None), "a Python list cannot be used without a copy: it is always copied"),
        ((hm.asarray(a), "int32"), "a float32 tensor cannot be used without a copy: "
                                   "converting it to int32"),
    ]
    for (obj, dtype), why in cases:
        with pytest.raises(ValueError) as info:
            hm.asarray(obj, dtype=dtype, copy=False)
        message = str(info.value)
        assert message.startswith("asarray: copy=False, but "), message
        assert why in message and message.endswith("pass copy=None to copy only when needed")
    with pytest.raises(TypeError, match=r"asarray: copy must be True, False or None, got 'no'"):
        hm.asarray(a, copy="no")
