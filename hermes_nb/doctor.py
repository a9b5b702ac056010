"""``hermes doctor``: what works on this machine, before anything else runs.

The checklist users of vendor stacks know (driver versions, then a basic function check,
then a sample end to end): every device with its driver, the self-test verdicts, the
devices left out and why, the caches and their sizes, and a blur+Sobel pipeline on each
device checked against SciPy. The exit status is non-zero when no device can run it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hermes_nb.cache import cache_dir, cache_sizes


def reference_edges(image: np.ndarray) -> np.ndarray:
    """Gaussian 5×5 then Sobel magnitude with SciPy (OpenCV's reflect101 is 'mirror')."""
    import scipy.ndimage

    from hermes_nb.api.image import gaussian_kernel

    g = gaussian_kernel(5)
    blurred = scipy.ndimage.correlate(image, np.outer(g, g).astype(image.dtype), mode="mirror")
    gx = scipy.ndimage.correlate(blurred, np.outer([1, 2, 1], [-1, 0, 1]).astype(image.dtype),
                                 mode="mirror")
    gy = scipy.ndimage.correlate(blurred, np.outer([-1, 0, 1], [1, 2, 1]).astype(image.dtype),
                                 mode="mirror")
    return np.hypot(gx, gy)


def check_pipeline(device: object, size: int = 256) -> str:
    """``""`` when blur+Sobel on ``device`` matches SciPy, else what went wrong."""
    import hermes_nb as hm

    image = np.random.default_rng(0).random((size, size), dtype=np.float32)
    want = reference_edges(image)
    pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())
    try:
        with hm.device(device):
            got = pipeline(hm.asarray(image)).numpy()
    except Exception as exc:  # the doctor reports every failure, it never raises
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
    return "" if err < 1e-4 else f"wrong result (max relative error {err:.2e})"


def main(out: Callable[[str], None] = print) -> int:
    import hermes_nb as hm
    from hermes_nb.backends.opencl import device as opencl

    out("Devices")
    devices = hm.devices()
    for d in devices:
        info = d.info()
        driver = info.get("driver", "NumPy/Numba" if d.kind == "cpu" else "")
        out(f"  {d.id:<10} {d.name}  [{driver}]")
        if "selftest" in info:
            out(f"             self-test: {info['selftest']}")
        for change in info.get("degraded", []):
            out(f"             switched off at run time: {change}")
    for hidden in opencl.hidden_devices():
        out(f"  (not used) {hidden.name}  [{hidden.driver}]: {hidden.reason}")
    out("\nCaches")
    for name, size in sorted(cache_sizes().items()):
        out(f"  {size / 2**20:8.1f} MiB  {cache_dir(name)}")
    out("\nBlur 5×5 + Sobel, 256×256 float32, against SciPy")
    healthy = 0
    for d in devices:
        problem = check_pipeline(d)
        healthy += not problem
        out(f"  {d.id:<10} {'ok' if not problem else 'FAIL: ' + problem}")
    if not healthy:
        out("\nno device can run the default pipeline")
        return 1
    out(f"\n{healthy} of {len(devices)} device(s) healthy")
    return 0
