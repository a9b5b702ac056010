"""``cpu:0``'s ``fused_reduce``: one generated Numba kernel (``codegen.numba_reduce``) where
the device says a generated kernel runs (``CPUDevice.runs_generated_kernel``: from
``JIT_MIN_ELEMENTS`` reduced elements up), else the NumPy interpreter. (``fused_matmul``
runs in ``backends.cpu.matmul``.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hermes_nb.backends.cpu import jit
from hermes_nb.ir.array_ops import ArrayOps
from hermes_nb.ir.node import OpSpec


def run_reduce(ops: ArrayOps, spec: OpSpec, inputs: Sequence[Any], generated: bool) -> Any:
    """A ``fused_reduce`` spec on NumPy arrays: the Numba kernel where ``generated``."""
    if generated:
        with np.errstate(all="ignore"):
            out = jit.reduce_codegen().run_reduce(spec.attrs, inputs, spec.shape, spec.dtype)
        if out is not None:
            return out
    return ops.run(spec, inputs)
