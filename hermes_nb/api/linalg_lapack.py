"""The eager half of the array API's ``linalg`` extension: the dense factorizations and
what depends on them (``det``, ``inv``, ``solve``, ...), run by NumPy's LAPACK on the
host. Hermes has no kernel for them; each computes its input, and its result is a tensor
on the input's device (the device the build is pinned to, if the input has none)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from hermes_nb.api.creation import asarray
from hermes_nb.api.elementwise import _as_tensor
from hermes_nb.api.tensor import Tensor
from hermes_nb.ir import dtypes, infer


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def floating(op: str, x: Any, name: str = "x") -> Tensor:
    """``x`` as a tensor of a floating-point dtype (real or complex), or a TypeError naming
    ``op``."""
    t = _as_tensor(x, op)
    if not dtypes.is_inexact(t.dtype):
        raise TypeError(f"{op}: {name} has dtype {t.dtype.name}; {op} requires a "
                        "floating-point dtype (float32, float64, complex64 or complex128)")
    return t


def matrices(op: str, x: Any, *, square: bool = False) -> Tensor:
    """``x`` as a floating-point stack of matrices (``..., M, N``); square if asked."""
    t = floating(op, x)
    if t.ndim < 2:
        raise ValueError(f"{op}: x must have at least 2 dimensions (..., M, N), got shape "
                         f"{infer.fmt(t.shape)}")
    if square and t.shape[-1] != t.shape[-2]:
        raise ValueError(f"{op}: x must be a (stack of) square matrices, got shape "
                         f"{infer.fmt(t.shape)} ({t.shape[-2]} x {t.shape[-1]})")
    return t


def _lapack(op: str, fn: Callable[..., Any], *arrays: np.ndarray, **kwargs: Any) -> Any:
    """``fn(*arrays)`` with NumPy's floating-point warnings kept inside (a singular matrix
    is a LinAlgError naming ``op``, never a warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return fn(*arrays, **kwargs)
            except np.linalg.LinAlgError as error:
                raise np.linalg.LinAlgError(f"{op}: {error}") from error


def _back(value: Any, like: Tensor, dtype: np.dtype | None = None) -> Tensor:
    """A NumPy result as a tensor on ``like``'s device, in ``dtype`` (``like``'s; for complex
    ``like``, NumPy's own: eigenvalues, singular values and log-determinants are real)."""
    if dtype is None:
        dtype = np.asarray(value).dtype if dtypes.is_complex(like.dtype) else like.dtype
    arr = np.array(value, dtype=dtype, order="C")  # not ascontiguousarray: it makes 0-d 1-d
    out = asarray(arr)
    return out.to(like.device) if like.device and out.device != like.device else out


def _rtol(op: str, rtol: Any) -> Any:
    if rtol is None:
        return None
    if isinstance(rtol, Tensor):
        return rtol.numpy()
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)):
        raise TypeError(f"{op}: rtol must be a float, a tensor or None, got {rtol!r}")
    return float(rtol)


def cholesky(x: Any, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix in ``x``: lower
    triangular ``L`` (``x = L @ L.T``), or upper ``U`` (``x = U.T @ U``) if ``upper``.
    Computed eagerly with NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> hm.linalg.cholesky(4 * hm.eye(2)).numpy().tolist()
    [[2.0, 0.0], [0.0, 2.0]]
    """
    t = matrices("cholesky", x, square=True)
    return _back(_lapack("cholesky", np.linalg.cholesky, t.numpy(), upper=bool(upper)), t)


def det(x: Any, /) -> Tensor:
    """The determinant of each square matrix in ``x`` (``..., M, M``). Computed eagerly
    with NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> round(float(hm.linalg.det(2 * hm.eye(3))), 6)
    8.0
    """
    t = matrices("det", x, square=True)
    return _back(_lapack("det", np.linalg.det, t.numpy()), t)


def slogdet(x: Any, /) -> SlogdetResult:
    """The sign and the natural log of the absolute determinant of each square matrix in
    ``x``, as ``SlogdetResult(sign, logabsdet)``. Computed eagerly with NumPy's LAPACK;
    the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> float(hm.linalg.slogdet(-hm.eye(3)).sign)
    -1.0
    """
    t = matrices("slogdet", x, square=True)
    sign, logabs = _lapack("slogdet", np.linalg.slogdet, t.numpy())
    return SlogdetResult(_back(sign, t), _back(logabs, t))


def inv(x: Any, /) -> Tensor:
    """The inverse of each square matrix in ``x``; a singular matrix is a LinAlgError.
    Computed eagerly with NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> hm.linalg.inv(2 * hm.eye(2)).numpy().tolist()
    [[0.5, 0.0], [0.0, 0.5]]
    """
    t = matrices("inv", x, square=True)
    return _back(_lapack("inv", np.linalg.inv, t.numpy()), t)


def pinv(x: Any, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix in ``x`` (``..., M, N``); singular
    values below ``rtol`` times the largest are dropped (default ``max(M, N) * eps``).
    Computed eagerly with NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> hm.linalg.pinv(hm.ones((1, 2))).shape
    (2, 1)
    """
    t = matrices("pinv", x)
    tol = _rtol("pinv", rtol)
    kwargs = {} if tol is None else {"rtol": tol}
    return _back(_lapack("pinv", np.linalg.pinv, t.numpy(), **kwargs), t)


def matrix_rank(x: Any, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The rank of each matrix in ``x``: its singular values above ``rtol`` times the
    largest (default ``max(M, N) * eps``), as the default integer dtype. Computed eagerly
    with NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> int(hm.linalg.matrix_rank(hm.ones((3, 3))))
    1
    """
    t = matrices("matrix_rank", x)
    tol = _rtol("matrix_rank", rtol)
    kwargs = {} if tol is None else {"rtol": tol}
    return _back(_lapack("matrix_rank", np.linalg.matrix_rank, t.numpy(), **kwargs), t,
                 np.dtype(np.int64))


def eigh(x: Any, /) -> EighResult:
    """The eigenvalues (ascending) and eigenvectors of each symmetric matrix in ``x``, as
    ``EighResult(eigenvalues, eigenvectors)``. Computed eagerly with NumPy's LAPACK; the
    result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> hm.linalg.eigh(hm.eye(2)).eigenvalues.numpy().tolist()
    [1.0, 1.0]
    """
    t = matrices("eigh", x, square=True)
    w, v = _lapack("eigh", np.linalg.eigh, t.numpy())
    return EighResult(_back(w, t), _back(v, t))


def eigvalsh(x: Any, /) -> Tensor:
    """The eigenvalues (ascending) of each symmetric matrix in ``x``. Computed eagerly
    with NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> hm.linalg.eigvalsh(2 * hm.eye(2)).numpy().tolist()
    [2.0, 2.0]
    """
    t = matrices("eigvalsh", x, square=True)
    return _back(_lapack("eigvalsh", np.linalg.eigvalsh, t.numpy()), t)


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """The QR factorization of each matrix in ``x``, ``QRResult(Q, R)``; ``mode`` is
    ``'reduced'`` (``Q``: ``M x K``, ``K = min(M, N)``) or ``'complete'`` (``M x M``).
    Computed eagerly with NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> [t.shape for t in hm.linalg.qr(hm.ones((3, 2)))]
    [(3, 2), (2, 2)]
    """
    t = matrices("qr", x)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode {mode!r} is not allowed; allowed: 'reduced', 'complete'")
    q, r = _lapack("qr", np.linalg.qr, t.numpy(), mode=mode)
    return QRResult(_back(q, t), _back(r, t))


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition of each matrix in ``x``, ``SVDResult(U, S, Vh)``
    with ``x = U @ diag(S) @ Vh``; ``S`` descending. Computed eagerly with NumPy's LAPACK;
    the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> [t.shape for t in hm.linalg.svd(hm.ones((3, 2)), full_matrices=False)]
    [(3, 2), (2,), (2, 2)]
    """
    t = matrices("svd", x)
    u, s, vh = _lapack("svd", np.linalg.svd, t.numpy(), full_matrices=bool(full_matrices))
    return SVDResult(_back(u, t), _back(s, t), _back(vh, t))


def svdvals(x: Any, /) -> Tensor:
    """The singular values of each matrix in ``x``, descending. Computed eagerly with
    NumPy's LAPACK; the result is a tensor on the input's device.

    >>> import hermes_nb as hm
    >>> hm.linalg.svdvals(3 * hm.eye(2)).numpy().tolist()
    [3.0, 3.0]
    """
    t = matrices("svdvals", x)
    return _back(_lapack("svdvals", np.linalg.svd, t.numpy(), compute_uv=False), t)


def _solve_shapes(a: Tensor, b: Tensor) -> None:
    m = a.shape[-1]
    if b.ndim == 0 or b.shape[-1 if b.ndim == 1 else -2] != m:
        raise ValueError(f"solve: x2 of shape {infer.fmt(b.shape)} does not match x1 of shape "
                         f"{infer.fmt(a.shape)}: x2 must be ({m},) or (..., {m}, K)")
    if b.ndim > 1:
        infer.broadcast_shapes("solve", a.shape[:-2], b.shape[:-2])


def solve(x1: Any, x2: Any, /) -> Tensor:
    """The solution ``X`` of ``x1 @ X = x2`` for each square matrix in ``x1``; ``x2`` is a
    vector when 1-D (shape ``(M,)``), otherwise a stack of ``M x K`` matrices; the batch
    axes broadcast. Computed eagerly with NumPy's LAPACK; the result is a tensor on the
    input's device.

    >>> import hermes_nb as hm
    >>> hm.linalg.solve(2 * hm.eye(2), hm.asarray([2.0, 4.0])).numpy().tolist()
    [1.0, 2.0]
    """
    a = matrices("solve", x1, square=True)
    b = floating("solve", x2, "x2")
    _solve_shapes(a, b)
    work = dtypes.result_type(a.dtype, b.dtype)
    out = _lapack("solve", np.linalg.solve, a.numpy().astype(work), b.numpy().astype(work))
    return _back(out, a, work)
