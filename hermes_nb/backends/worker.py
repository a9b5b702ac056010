"""The isolated worker process (``python -m hermes_nb.backends.worker``).

It reads ``(job, args)`` frames from stdin and answers ``("ok", result)`` or
``("error", (type name, message))`` on stdout. Jobs build and launch OpenCL programs and
run the device self-test features; a driver that crashes here kills only this process.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import time
from typing import Any

import numpy as np

_HEADER = struct.Struct("!Q")
_contexts: dict[tuple[int, int], Any] = {}
_programs: dict[tuple[tuple[int, int], str, str], Any] = {}


def _device(ref: tuple[int, int, str]) -> tuple[Any, Any, Any]:
    """(device, context, queue) for (platform index, device index, expected name)."""
    import pyopencl as cl

    key = (ref[0], ref[1])
    if key not in _contexts:
        dev = cl.get_platforms()[ref[0]].get_devices()[ref[1]]
        if dev.name.strip() != ref[2]:
            raise RuntimeError(f"device {ref[2]!r} not found at {key} (found {dev.name.strip()!r})")
        ctx = cl.Context([dev])
        _contexts[key] = (dev, ctx, cl.CommandQueue(ctx))
    return _contexts[key]


def _inject(fault: str | None, vector: bool = False) -> None:
    """Test hooks: make this job crash, hang, or (``nokernels``) build an empty program;
    ``abort-vector`` crashes only vector kernels."""
    if fault == "abort" or (fault == "abort-vector" and vector):
        os.abort()
    if fault == "hang":
        time.sleep(3600)


def _program(ref: tuple[int, int, str], source: str, options: str, fault: str | None) -> Any:
    import pyopencl as cl

    from hermes_nb.backends.opencl.build import build_program

    key = ((ref[0], ref[1]), source, options)
    if key not in _programs:
        _inject(fault)
        _, ctx, _ = _device(ref)
        text = "/* empty */" if fault == "nokernels" else source
        _programs[key] = build_program(cl, ctx, text, options)
    return _programs[key]


def opencl_build(ref: tuple[int, int, str], source: str, options: str = "",
                 fault: str | None = None) -> list[str]:
    """Build ``source``; the names of the kernels it holds."""
    return sorted(k.function_name for k in _program(ref, source, options, fault).all_kernels())


def _argument(ctx: Any, queue: Any, desc: tuple[Any, ...]) -> Any:
    import pyopencl as cl

    kind = desc[0]
    if kind == "buf":
        size, data = desc[1], desc[2]
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(size, 1))
        if data is not None:
            cl.enqueue_copy(queue, buf, np.frombuffer(data, dtype=np.uint8))
        return buf
    if kind == "local":
        return cl.LocalMemory(desc[1])
    if kind == "none":
        return None
    return desc[1]  # a NumPy scalar


def opencl_launch(ref: tuple[int, int, str], source: str, options: str, name: str,
                  global_size: tuple[int, ...], local_size: tuple[int, ...] | None,
                  global_offset: tuple[int, ...] | None, args: list[tuple[Any, ...]],
                  fault: str | None = None) -> bool:
    """Launch kernel ``name`` once with this geometry on scratch buffers of the real sizes
    (PoCL compiles machine code per work-group size at a kernel's first launch)."""
    _, ctx, queue = _device(ref)
    program = _program(ref, source, options, None)
    _inject(fault, vector=name.endswith("_vec"))
    knl = getattr(program, name)
    values = [_argument(ctx, queue, d) for d in args]
    knl(queue, global_size, local_size, *values, global_offset=global_offset)
    queue.finish()
    return True


def opencl_feature(ref: tuple[int, int, str], feature: str) -> str:
    """Run one self-test feature; ``""`` when it computes right, else what was wrong."""
    from hermes_nb.backends.opencl import selftest_kernels

    dev, ctx, queue = _device(ref)
    return selftest_kernels.run_feature(feature, dev, ctx, queue)


def ping() -> int:
    return os.getpid()


JOBS = {f.__name__: f for f in (opencl_build, opencl_launch, opencl_feature, ping)}


def _read(stream: Any) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))


def main() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    while (frame := _read(inp)) is not None:
        job, args = frame
        try:
            reply: tuple[str, Any] = ("ok", JOBS[job](*args))
        except Exception as exc:
            reply = ("error", (type(exc).__name__, str(exc)[-4000:]))
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        out.write(_HEADER.pack(len(data)) + data)
        out.flush()


if __name__ == "__main__":
    main()
