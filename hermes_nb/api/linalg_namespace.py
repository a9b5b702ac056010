"""``hm.linalg``: the array API 2024.12 ``linalg`` extension.

Lazy and fused (:mod:`hermes_nb.api.linalg_lazy`, the contractions and ``matmul``):
``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot``, ``outer``, ``trace``,
``diagonal``, ``cross``, ``vector_norm``, ``matrix_norm`` (``'fro'``, 1, -1, inf, -inf),
``matrix_power``. Computed eagerly with NumPy's LAPACK, the result a tensor on the input's
device (:mod:`hermes_nb.api.linalg_lapack`): ``cholesky``, ``det``, ``eigh``,
``eigvalsh``, ``inv``, ``pinv``, ``qr``, ``slogdet``, ``solve``, ``svd``, ``svdvals``,
``matrix_rank``.

>>> import hermes_nb as hm
>>> float(hm.linalg.vector_norm(hm.asarray([3.0, 4.0])))
5.0
"""

from typing import Any

from hermes_nb.api import linalg as _linalg
from hermes_nb.api.contractions import tensordot, vecdot
from hermes_nb.api.linalg_lapack import (
    EighResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from hermes_nb.api.linalg_lazy import (
    cross,
    diagonal,
    matrix_norm,
    matrix_power,
    outer,
    trace,
    vector_norm,
)
from hermes_nb.api.manipulation import matrix_transpose
from hermes_nb.api.tensor import Tensor


def matmul(x1: Any, x2: Any, /) -> Tensor:
    """``hm.matmul`` with the standard's positional-only signature: the matrix product,
    1-D operands promoted and the added axis removed, batch axes broadcast.

    >>> import hermes_nb as hm
    >>> hm.linalg.matmul(hm.ones((2, 3)), hm.ones(3)).shape
    (2,)
    """
    return _linalg.matmul(x1, x2)


__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cross", "det",
    "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
    "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]
