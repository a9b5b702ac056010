"""Compiling generated CUDA C with ``nvcc -ptx`` (no GPU needed), for the CUDA source tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hermes_nb.codegen.c_kernels import CUDA_OPTIONS

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not on PATH")


def compile_ptx(source: str, workdir: Path, name: str = "kernels") -> str:
    """The PTX ``nvcc`` makes of ``source`` for sm_90 with Hermes' CUDA options; a failed
    compile fails the test with nvcc's message."""
    cu, ptx = workdir / f"{name}.cu", workdir / f"{name}.ptx"
    cu.write_text(source)
    result = subprocess.run(["nvcc", "-ptx", "-arch=sm_90", *CUDA_OPTIONS, "-o", str(ptx), str(cu)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{result.stderr[-4000:]}\n---\n{source[:2000]}"
    return ptx.read_text()
