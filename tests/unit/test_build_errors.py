"""Bad input raises the documented error when the op is *built*, not at compute.

Every test here runs with every device's ``execute``/``from_host`` replaced by
a function that fails the test, so an error that only surfaced while running
the graph would show up as an ``AssertionError`` instead of the expected
``ValueError``/``TypeError``. No test calls ``compute``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

import hermes_nb as hm


def _forbidden(*args, **kwargs):
    raise AssertionError("a device ran work while only building a graph")


@pytest.fixture(autouse=True)
def no_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any device work during these tests fail loudly."""
    for dev in hm.devices():
        monkeypatch.setattr(dev, "execute", _forbidden)
        monkeypatch.setattr(dev, "from_host", _forbidden)


@contextmanager
def raises(exc: type[Exception], *fragments: str) -> Iterator[pytest.ExceptionInfo]:
    """``pytest.raises`` that also requires each fragment verbatim in the message."""
    first = re.escape(fragments[0]) if fragments else None
    with pytest.raises(exc, match=first) as info:
        yield info
    message = str(info.value)
    missing = [f for f in fragments if f not in message]
    assert not missing, f"message {message!r} lacks {missing!r}"


def t(*shape: int, dtype: str = "float32") -> hm.Tensor:
    return hm.ones(shape, dtype=dtype)


# --------------------------------------------------------------------------- broadcasting

BINARY_FUNCS = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "pow",
    "maximum",
    "minimum",
    "hypot",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
]


@pytest.mark.parametrize("name", BINARY_FUNCS)
def test_binary_function_shapes_cannot_broadcast(name: str) -> None:
    with raises(ValueError, name, "(3, 4)", "(5,)"):
        getattr(hm, name)(t(3, 4), t(5))


@pytest.mark.parametrize("name", ["logical_and", "logical_or"])
def test_logical_function_shapes_cannot_broadcast(name: str) -> None:
    with raises(ValueError, name, "(2, 3)", "(2, 4)"):
        getattr(hm, name)(t(2, 3, dtype="bool"), t(2, 4, dtype="bool"))


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("add", lambda a, b: a + b),
        ("subtract", lambda a, b: a - b),
        ("multiply", lambda a, b: a * b),
        ("divide", lambda a, b: a / b),
        ("pow", lambda a, b: a**b),
        ("equal", lambda a, b: a == b),
        ("less", lambda a, b: a < b),
    ],
)
def test_operator_shapes_cannot_broadcast(name, build) -> None:
    with raises(ValueError, name, "(3, 4)", "(2, 1, 5)"):
        build(t(3, 4), t(2, 1, 5))


def test_operator_with_numpy_array_cannot_broadcast() -> None:
    with raises(ValueError, "add", "(3, 4)", "(5,)"):
        t(3, 4) + np.ones(5, dtype=np.float32)
    with raises(ValueError, "multiply", "(3,)", "(4, 2)"):
        np.ones(3, dtype=np.float32) * t(4, 2)


def test_zero_size_axis_does_not_broadcast_with_other_sizes() -> None:
    with raises(ValueError, "add", "(0,)", "(3,)"):
        hm.add(t(0), t(3))


def test_where_shapes_cannot_broadcast() -> None:
    cond = t(2, 3, dtype="bool")
    with raises(ValueError, "where", "(2, 3)", "(4, 3)"):
        hm.where(cond, t(4, 3), t(3))
    with raises(ValueError, "where", "(2, 3)", "(2,)"):
        hm.where(cond, t(3), t(2))


def test_clip_bounds_cannot_broadcast() -> None:
    with pytest.raises(ValueError) as info:
        hm.clip(t(3, 4), min=t(2), max=None)
    assert "(3, 4)" in str(info.value)
    assert "(2,)" in str(info.value)


# --------------------------------------------------------------------------- matmul


def test_matmul_inner_dimensions_differ() -> None:
    with raises(ValueError, "matmul", "(3, 4)", "(5, 2)"):
        hm.matmul(t(3, 4), t(5, 2))


def test_matmul_operator_inner_dimensions_differ() -> None:
    with raises(ValueError, "matmul", "(3, 4)", "(5, 2)"):
        t(3, 4) @ t(5, 2)


def test_matmul_with_numpy_operand_inner_dimensions_differ() -> None:
    with raises(ValueError, "matmul", "(2, 3)", "(4, 2)"):
        np.ones((2, 3), dtype=np.float32) @ t(4, 2)


def test_matmul_vectors_of_different_length() -> None:
    with raises(ValueError, "matmul", "3", "4"):
        hm.matmul(t(3), t(4))


def test_matmul_matrix_vector_mismatch() -> None:
    with raises(ValueError, "matmul", "(2, 3)", "4"):
        hm.matmul(t(2, 3), t(4))


def test_matmul_batch_dimensions_cannot_broadcast() -> None:
    with raises(ValueError, "matmul", "(2, 3, 4)", "(3, 4, 5)"):
        hm.matmul(t(2, 3, 4), t(3, 4, 5))


def test_matmul_of_zero_d_operand() -> None:
    with raises(ValueError, "matmul"):
        hm.matmul(hm.asarray(np.float32(2.0)), t(3, 3))


def test_matmul_of_bool_is_a_type_error() -> None:
    with raises(TypeError, "matmul", "bool"):
        hm.matmul(t(2, 2, dtype="bool"), t(2, 2, dtype="bool"))
    with raises(TypeError, "matmul", "bool"):
        t(2, 2, dtype="bool") @ t(2, 2, dtype="bool")


# --------------------------------------------------------------------------- axes

REDUCTIONS = ["sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "std"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis", [2, -3, 7])
def test_reduction_axis_out_of_range(name: str, axis: int) -> None:
    with raises(ValueError, name, str(axis)):
        getattr(hm, name)(t(2, 3), axis=axis)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_method_axis_out_of_range(name: str) -> None:
    with raises(ValueError, name, "5"):
        getattr(t(2, 3), name)(axis=5)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min"])
def test_reduction_tuple_axis_out_of_range(name: str) -> None:
    with raises(ValueError, name, "4"):
        getattr(hm, name)(t(2, 3, 4), axis=(0, 4))


def test_reduction_of_zero_d_with_axis_zero() -> None:
    with raises(ValueError, "sum", "0"):
        hm.sum(hm.asarray(np.float32(1.0)), axis=0)


@pytest.mark.parametrize("name", ["sum", "max"])
def test_reduction_repeated_axis(name: str) -> None:
    with raises(ValueError, name):
        getattr(hm, name)(t(2, 3), axis=(1, -1))


def test_reduction_axis_of_wrong_type() -> None:
    with raises(TypeError, "sum"):
        hm.sum(t(2, 3), axis=1.5)


def test_concat_axis_out_of_range() -> None:
    with raises(ValueError, "concat", "2"):
        hm.concat([t(2, 3), t(2, 3)], axis=2)
    with raises(ValueError, "concat", "-3"):
        hm.concat([t(2, 3), t(2, 3)], axis=-3)


def test_concat_shapes_differ_outside_axis() -> None:
    with raises(ValueError, "concat", "(2, 3)", "(2, 4)"):
        hm.concat([t(2, 3), t(2, 4)], axis=0)


def test_concat_ndim_differs() -> None:
    with raises(ValueError, "concat", "(2, 3)", "(3,)"):
        hm.concat([t(2, 3), t(3)], axis=0)


def test_concat_of_zero_d_tensors() -> None:
    scalar = hm.asarray(np.float32(1.0))
    with raises(ValueError, "concat"):
        hm.concat([scalar, scalar], axis=0)


def test_stack_axis_out_of_range() -> None:
    # stack of 2-D tensors makes a 3-D result: axis may be -3 .. 2
    with raises(ValueError, "stack", "3"):
        hm.stack([t(2, 3), t(2, 3)], axis=3)
    with raises(ValueError, "stack", "-4"):
        hm.stack([t(2, 3), t(2, 3)], axis=-4)


def test_stack_shapes_differ() -> None:
    with raises(ValueError, "stack", "(2, 3)", "(3, 2)"):
        hm.stack([t(2, 3), t(3, 2)])


@pytest.mark.parametrize("axis", [2, -3, 5])
def test_sobel_axis_out_of_range(axis: int) -> None:
    with raises(ValueError, "sobel", str(axis)):
        hm.sobel(t(8, 8), axis=axis)


def test_permute_dims_axis_out_of_range() -> None:
    with raises(ValueError, "permute_dims", "2"):
        hm.permute_dims(t(2, 3), (0, 2))


def test_permute_dims_not_a_permutation() -> None:
    with raises(ValueError, "permute_dims", "(0, 0)"):
        hm.permute_dims(t(2, 3), (0, 0))
    with raises(ValueError, "permute_dims"):
        hm.permute_dims(t(2, 3, 4), (1, 0))


def test_transpose_bad_axes() -> None:
    with pytest.raises(ValueError, match=r"transpose|permute_dims"):
        hm.transpose(t(2, 3), (1, 5))


def test_argmax_keepdims_axis_out_of_range() -> None:
    with raises(ValueError, "argmax", "3"):
        hm.argmax(t(4), axis=3, keepdims=True)


# --------------------------------------------------------------------------- devices


@pytest.mark.parametrize("name", ["tpu:0", "opencl:99", "cuda:42", "cpu:7", "gpu"])
def test_unknown_device_name(name: str) -> None:
    with raises(ValueError, name, "cpu:0"), hm.device(name):
        pass  # pragma: no cover - must not be reached


def test_unknown_device_in_to() -> None:
    x = t(2, 2)
    with raises(ValueError, "opencl:99", "cpu:0"):
        x.to("opencl:99")
    with raises(ValueError, "tpu:0", "cpu:0"):
        x.to("tpu:0")


def test_unknown_device_message_lists_every_available_id() -> None:
    with pytest.raises(ValueError) as info, hm.device("tpu:0"):
        pass  # pragma: no cover
    for dev in hm.devices():
        assert dev.id in str(info.value)


def test_float64_pinned_to_device_without_fp64(monkeypatch: pytest.MonkeyPatch) -> None:
    no_fp64 = [d for d in hm.devices() if not d.fp64]
    if no_fp64:
        dev = no_fp64[0]
    else:  # every device here has fp64: pretend the last one lacks it
        dev = hm.devices()[-1]
        monkeypatch.setattr(dev, "fp64", False)
    x32 = hm.ones((2, 2), dtype="float32")
    with raises(ValueError, dev.id, "float64"), hm.device(dev):
        hm.ones((2, 2), dtype="float64") + 1.0
    with raises(ValueError, dev.id, "float64"), hm.device(dev):
        x32 + hm.ones((2, 2), dtype="float64")  # promotion to float64 on that device
    with hm.device(dev):
        assert (x32 * 2.0).dtype == np.float32  # float32 work is fine


# --------------------------------------------------------------------------- dtypes

BAD_DTYPES = ["float16", "datetime64[s]", "U3"]


@pytest.mark.parametrize("dtype", BAD_DTYPES)
def test_asarray_of_unsupported_numpy_dtype(dtype: str) -> None:
    with raises(TypeError, dtype, "float32"):
        hm.asarray(np.zeros(3, dtype=dtype))


@pytest.mark.parametrize("dtype", BAD_DTYPES)
def test_from_numpy_of_unsupported_dtype(dtype: str) -> None:
    with raises(TypeError, dtype, "float32", "int32"):
        hm.Tensor.from_numpy(np.zeros((2, 2), dtype=dtype))


def test_asarray_with_unsupported_dtype_argument() -> None:
    with raises(TypeError, "float16", "uint8"):
        hm.asarray([1, 2, 3], dtype="float16")
    with raises(TypeError, "float16"):
        hm.asarray(np.ones(3, np.float32), dtype=np.float16)


def test_asarray_of_strings_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        hm.asarray(np.array(["a", "b"]))


@pytest.mark.parametrize("dtype", ["float16", np.float16])
def test_astype_unsupported(dtype) -> None:
    name = np.dtype(dtype).name
    with raises(TypeError, name):
        t(3).astype(dtype)
    with raises(TypeError, name):
        hm.astype(t(3), dtype)


@pytest.mark.parametrize("factory", ["zeros", "ones"])
def test_factories_with_unsupported_dtype(factory: str) -> None:
    with raises(TypeError, "float16"):
        getattr(hm, factory)((2, 2), dtype="float16")


def test_full_arange_random_with_unsupported_dtype() -> None:
    with raises(TypeError, "float16"):
        hm.full((2,), 3, dtype="float16")
    with raises(TypeError, "float16"):
        hm.arange(5, dtype="float16")
    with raises(TypeError, "float16"):
        hm.Tensor.random((2,), dtype="float16", seed=0)
    with raises(TypeError, "float16"):
        hm.random.normal((2,), dtype="float16", seed=0)


# --------------------------------------------------------------------------- image ops


@pytest.mark.parametrize("kernel_size", [4, 2, 0, -1, -3])
def test_gaussian_blur_bad_kernel_size(kernel_size: int) -> None:
    with raises(ValueError, "gaussian_blur", str(kernel_size)):
        hm.gaussian_blur(t(8, 8), kernel_size=kernel_size)


@pytest.mark.parametrize("kernel_size", [3.0, "5", None])
def test_gaussian_blur_non_int_kernel_size(kernel_size) -> None:
    with raises(TypeError, "gaussian_blur"):
        hm.gaussian_blur(t(8, 8), kernel_size=kernel_size)


def test_gaussian_blur_stage_with_bad_kernel_size() -> None:
    # the stage form (no image) is the op being called: it must validate eagerly too
    with raises(ValueError, "gaussian_blur", "4"):
        hm.gaussian_blur(kernel_size=4)


def test_image_submodule_validates_too() -> None:
    with raises(ValueError, "gaussian_blur", "6"):
        hm.image.gaussian_blur(t(8, 8), kernel_size=6)


@pytest.mark.parametrize("kshape", [(2, 2), (3, 4), (4, 3), (0, 3)])
def test_conv2d_even_or_empty_kernel(kshape: tuple[int, int]) -> None:
    kernel = np.ones(kshape, dtype=np.float32)
    with raises(ValueError, "conv2d", f"({kshape[0]}, {kshape[1]})"):
        hm.conv2d(t(8, 8), kernel)


@pytest.mark.parametrize("kshape", [(3,), (3, 3, 3), ()])
def test_conv2d_kernel_not_2d(kshape: tuple[int, ...]) -> None:
    kernel = np.ones(kshape, dtype=np.float32)
    with raises(ValueError, "conv2d"):
        hm.conv2d(t(8, 8), kernel)


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("gaussian_blur", lambda x, b: hm.gaussian_blur(x, kernel_size=3, border=b)),
        ("conv2d", lambda x, b: hm.conv2d(x, np.ones((3, 3), np.float32), border=b)),
        ("sobel", lambda x, b: hm.sobel(x, border=b)),
        ("sobel_edge_detection", lambda x, b: hm.sobel_edge_detection(x, border=b)),
    ],
)
@pytest.mark.parametrize("border", ["wrap", "REFLECT", "mirror"])
def test_unknown_border_mode(name, build, border) -> None:
    with raises(ValueError, name, border, "reflect101"):
        build(t(8, 8), border)


def test_unknown_border_mode_in_stage() -> None:
    with raises(ValueError, "sobel", "wrap"):
        hm.sobel(border="wrap")


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("gaussian_blur", lambda x: hm.gaussian_blur(x, kernel_size=3)),
        ("conv2d", lambda x: hm.conv2d(x, np.ones((3, 3), np.float32))),
        ("sobel", lambda x: hm.sobel(x)),
        ("sobel_edge_detection", lambda x: hm.sobel_edge_detection(x)),
    ],
)
@pytest.mark.parametrize("shape", [(), (16,)])
def test_image_op_needs_at_least_2d(name, build, shape) -> None:
    with raises(ValueError, name):
        build(hm.ones(shape, dtype="float32"))


def test_pipeline_on_1d_input_raises_when_called() -> None:
    pipe = hm.compose(hm.gaussian_blur(kernel_size=3), hm.sobel(axis=-1))
    # the pipeline or its first stage may report it; either way the shape is named
    with raises(ValueError, "(16,)"):
        pipe(hm.ones((16,), dtype="float32"))


# --------------------------------------------------------------------------- shapes


def test_reshape_wrong_size() -> None:
    with raises(ValueError, "reshape", "(2, 3)", "(4, 2)"):
        t(2, 3).reshape(4, 2)
    with raises(ValueError, "reshape", "(2, 3)", "(4, 2)"):
        hm.reshape(t(2, 3), (4, 2))


def test_reshape_two_unknown_sizes() -> None:
    with raises(ValueError, "reshape", "-1"):
        t(2, 3).reshape(-1, -1)


def test_reshape_unknown_size_does_not_divide() -> None:
    with raises(ValueError, "reshape", "(2, 3)", "(4, -1)"):
        t(2, 3).reshape((4, -1))


def test_reshape_negative_size() -> None:
    with raises(ValueError, "reshape", "-2"):
        t(2, 3).reshape(-2, -3)


def test_reshape_zero_size_with_unknown() -> None:
    with raises(ValueError, "reshape"):
        t(0, 3).reshape(0, -1)


@pytest.mark.parametrize(
    ("src", "dst"),
    [((3, 4), (4, 3)), ((3,), ()), ((2, 1), (3,)), ((3,), (2, 4)), ((2,), (-1,))],
)
def test_broadcast_to_incompatible(src, dst) -> None:
    def fmt(s):
        return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"

    with raises(ValueError, "broadcast_to", fmt(src), fmt(dst)):
        hm.broadcast_to(hm.ones(src, dtype="float32"), dst)


def test_index_out_of_range() -> None:
    # the spec does not name the error; NumPy raises IndexError, ValueError is acceptable
    with pytest.raises((IndexError, ValueError)):
        t(2, 3)[2]
    with pytest.raises((IndexError, ValueError)):
        t(2, 3)[0, 0, 0]


# --------------------------------------------------------------------------- zero-size max/argmax


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_zero_size_reduction_without_identity_flattened(name: str) -> None:
    with raises(ValueError, name):
        getattr(hm, name)(hm.zeros((0, 3)))


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_zero_size_reduction_without_identity_along_empty_axis(name: str) -> None:
    with raises(ValueError, name):
        getattr(hm, name)(hm.zeros((0, 3)), axis=0)
    with raises(ValueError, name):
        getattr(hm.zeros((4, 0)), name)(axis=-1)


def test_max_over_non_empty_axis_of_zero_size_tensor_is_fine() -> None:
    # reducing the length-3 axis of a (0, 3) tensor is well defined: result shape (0,)
    assert hm.max(hm.zeros((0, 3)), axis=1).shape == (0,)
    assert hm.argmax(hm.zeros((0, 3)), axis=1).shape == (0,)
    assert hm.max(hm.zeros((2, 0, 3)), axis=(0, 2)).shape == (0,)


def test_sum_over_empty_axis_is_fine() -> None:
    assert hm.sum(hm.zeros((0, 3)), axis=0).shape == (3,)
    assert hm.sum(hm.zeros((0, 3))).shape == ()


# --------------------------------------------------------------- bitwise operators: ints and bools


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_invert_of_a_float(dtype: str) -> None:
    with raises(TypeError, dtype):
        ~t(3, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_and_or_of_a_float(dtype: str) -> None:
    b = t(3, dtype="bool")
    with raises(TypeError, dtype):
        t(3, dtype=dtype) & t(3, dtype=dtype)
    with raises(TypeError, dtype):
        t(3, dtype=dtype) | b
    with raises(TypeError, dtype):
        b & t(3, dtype=dtype)


def test_and_with_float_scalar() -> None:
    with pytest.raises(TypeError):
        t(3, dtype="bool") & 1.5


# --------------------------------------------------------------------------- nothing ran


def test_building_valid_graphs_here_runs_nothing() -> None:
    """The autouse fixture really forbids execution: a valid graph builds fine."""
    x = hm.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = hm.gaussian_blur(hm.sobel(x @ x.T + 1.0), kernel_size=3)
    assert y.shape == (3, 3)
    assert y.dtype == np.float32
    # the runtime may wrap the failure (e.g. in DeviceError, a RuntimeError)
    with pytest.raises((AssertionError, RuntimeError)) as info:
        y.numpy()
    chain, exc = [], info.value
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    assert any("ran work" in m for m in chain), chain
