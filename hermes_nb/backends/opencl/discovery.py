"""Finding ``opencl:N`` devices: every device of every OpenCL platform, which driver to use
for each (``drivers.choose``), and what a chosen device's kernels may use."""

from __future__ import annotations

from typing import Any

from hermes_nb.backends.opencl import drivers as opencl_drivers
from hermes_nb.backends.opencl.capabilities import Capabilities

__all__ = ["capabilities_of", "choose_drivers"]


def choose_drivers() -> tuple[list[tuple[Any, Any]], list[Any]] | None:
    """``([(candidate, verdict)], [hidden])``: the newest driver of each physical device that
    passes its self-test, and the devices left out with why; None without OpenCL."""
    opencl_drivers.configure_driver_cache()
    opencl_drivers.heal_pyopencl_cache()
    try:
        import pyopencl as cl
    except Exception:  # not installed, or its shared libraries are missing
        return None
    try:
        platforms = cl.get_platforms()
    except Exception:  # no ICD / no platform: cl.LogicError or cl.RuntimeError
        return None
    candidates = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except Exception:  # a platform without devices raises DEVICE_NOT_FOUND
            continue
        candidates += [opencl_drivers.Candidate(p_index, d_index, platform, dev)
                       for d_index, dev in enumerate(devices)]
    return opencl_drivers.choose(candidates)


def _vector_width(native: int) -> int:
    """A vector width fused kernels may use: 4, 8 or 16, else 0 (no vector form)."""
    return min(native, 16) if native >= 4 and native & (native - 1) == 0 else 0


def capabilities_of(cl: Any, cl_device: Any, verdict: Any) -> Capabilities:
    """The device's capabilities, narrowed to what its self-test (``verdict``) found working.
    Vector width: the native one (AVX-512 PoCL: 16 floats, 8 doubles); below 4 (GPUs)
    scalar code is already vectorised across work-items."""
    f32 = _vector_width(int(cl_device.native_vector_width_float))
    f64 = _vector_width(int(cl_device.native_vector_width_double))
    local = True
    if verdict is not None:
        f32, f64 = min(f32, verdict.float32_width), min(f64, verdict.float64_width)
        local = verdict.local_memory
    return Capabilities(
        is_cpu=bool(cl_device.type & cl.device_type.CPU), float32_width=f32, float64_width=f64,
        local_stencils=local, local_mem_bytes=int(cl_device.local_mem_size),
        max_group_size=int(cl_device.max_work_group_size),
    )
