"""Guarded builds and first launches of OpenCL programs (the parent's side of
:mod:`hermes_nb.backends.isolation`).

A program is built, and each of its kernels launched once per launch geometry, in the
isolated worker before the user's process does the same. What survived is recorded in a
*marker* holding the checksums of the files the driver's cache gained meanwhile, so a later
process loads it directly, and a damaged cache entry (a crash left it half-written) is
detected, dropped and rebuilt in the worker instead of aborting the user's process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.backends import isolation
from hermes_nb.backends.opencl.cache_files import bitcode_complete, elf_complete
from hermes_nb.backends.opencl.cache_lock import LOCK_FILE, MARKERS_DIR, OWNED_FILE, CacheLock
from hermes_nb.errors import KernelBuildError, KernelCrashError

log = logging.getLogger("hermes_nb.backends")

_SMALL = 1 << 16  # buffers up to this size travel with their contents (shapes, weights)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


_VOLATILE = {"last_accessed", OWNED_FILE, LOCK_FILE}  # rewritten by every load: no checksum


def _cache_files(root: Path, since: float) -> dict[str, str]:
    """Files under ``root`` changed at or after ``since``, with their checksums."""
    found: dict[str, str] = {}
    if not root.is_dir():
        return found
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            if name in _VOLATILE or name.startswith("tempfile") or MARKERS_DIR in path.parts:
                continue
            try:
                if path.stat().st_mtime >= since - 0.01:
                    found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                continue
    return found


@dataclass
class Guard:
    """Isolation state of one OpenCL device: its worker reference, fingerprint and the
    driver cache folder its markers describe."""

    ref: tuple[int, int, str]  # (platform index, device index, device name)
    fingerprint: str
    driver_cache: Path
    device_id: str
    _verified: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _markers_in_memory: bool = False  # the disk refused a marker: trust memory alone
    cache_lock: CacheLock = field(init=False)

    def __post_init__(self) -> None:
        self.cache_lock = CacheLock(self.driver_cache)

    @property
    def _markers(self) -> Path:
        return self.driver_cache / MARKERS_DIR / self.fingerprint

    # ---- markers ------------------------------------------------------------------------

    def verified(self, key: str) -> bool:
        """Whether ``key`` survived the worker before and the cache files it left are
        intact; a damaged entry is dropped (with a warning) so it is rebuilt."""
        marker = self._markers / f"{key}.json"
        # another process may have emptied the cache since: the marker must still be there
        if key in self._verified and (self._markers_in_memory or marker.exists()):
            return True
        try:
            files = json.loads(marker.read_text())
        except (OSError, ValueError):
            return False
        damaged = [p for p, digest in files.items() if not self._intact(p, digest)]
        if damaged:
            self._drop(files, marker)
            log.warning("hermes: %s: dropped a damaged driver cache entry %s; rebuilding it",
                        self.device_id, self.driver_cache / damaged[0])
            return False
        self._verified.add(key)
        return True

    def _intact(self, relative: str, digest: str) -> bool:
        """Whether a file the marker lists is whole: machine code and bitcode by their
        structure (a rebuild elsewhere rewrites them with other bytes: ``cache_files``),
        anything else by its checksum."""
        try:
            data = (self.driver_cache / relative).read_bytes()
        except OSError:
            return False
        if relative.endswith(".so"):
            return elf_complete(data)
        if relative.endswith(".bc"):
            return bitcode_complete(data)
        return hashlib.sha256(data).hexdigest() == digest

    def _drop(self, files: dict[str, str], marker: Path) -> None:
        for relative in files:
            folder = (self.driver_cache / relative).parent
            shutil.rmtree(folder, ignore_errors=True)
        marker.unlink(missing_ok=True)

    def _mark(self, key: str, since: float) -> None:
        self._verified.add(key)
        try:
            self._markers.mkdir(parents=True, exist_ok=True)
            tmp = self._markers / f"{key}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(_cache_files(self.driver_cache, since)))
            tmp.replace(self._markers / f"{key}.json")
        except OSError as exc:  # a full or read-only disk: remember it in memory only
            self._markers_in_memory = True
            log.debug("hermes: cannot write build marker: %s", exc)

    # ---- isolated jobs -------------------------------------------------------------------

    def build(self, source: str, name: str, source_path: Any) -> None:
        """Build ``source`` in the worker unless done before; raises KernelBuildError."""
        key = _digest("build", source)
        if not isolation.enabled() or self.verified(key):
            return
        with self._lock:
            since = time.time()
            names = self._run(name, "build", source_path, "opencl_build", self.ref, source, "",
                              os.environ.get("HERMES_TEST_BUILD_FAULT"))
            if name not in names:
                raise KernelBuildError(
                    f"OpenCL build on {self.device_id} gave a program without kernel {name!r} "
                    f"(it holds {names}); source saved to {source_path()}",
                    source_path=str(source_path()))
            self._mark(key, since)

    def launch(self, source: str, name: str, global_size: Any, local_size: Any,
               global_offset: Any, args: tuple[Any, ...], queue: Any, source_path: Any) -> None:
        """Launch once in the worker with this geometry unless done before."""
        offset = tuple(global_offset) if global_offset is not None else None
        local = tuple(local_size) if local_size is not None else None
        variant = (f"local={local} offset={'yes' if offset and any(offset) else 'no'} "
                   f"grid={'small' if small_grid(global_size) else 'large'}")
        key = _digest("launch", source, name, variant)
        if not isolation.enabled() or self.verified(key):
            return
        small = _probe_grid(tuple(global_size), local)
        descs = [describe(a, queue) for a in args]
        with self._lock:
            since = time.time()
            try:
                self._run(name, variant, source_path, "opencl_launch", self.ref, source, "", name,
                          small, local, offset, descs,
                          os.environ.get("HERMES_TEST_LAUNCH_FAULT"))
            except KernelBuildError as exc:
                if isinstance(exc, KernelCrashError):
                    raise
                log.debug("hermes: probe launch of %s not run in the worker: %s", name, exc)
                return
            self._mark(key, since)

    def _run(self, name: str, variant: str, source_path: Any, job: str, *args: Any) -> Any:
        """One worker job; a crash is retried once after dropping the driver's cache
        (a half-written entry crashes a driver on load), then reported."""
        for attempt in (0, 1):
            try:
                with self.cache_lock.shared():
                    return isolation.worker().call(job, *args, device=self.device_id,
                                                   kernel=name)
            except isolation.WorkerJobError as exc:
                if attempt == 0 and "error:" not in exc.message:
                    # a failure without a compiler diagnostic: a damaged cache entry, not the source
                    self.clear_driver_cache()
                    continue
                path = source_path()
                raise KernelBuildError(
                    f"OpenCL build of kernel {name!r} failed on {self.device_id}; source saved "
                    f"to {path}\n{short_log(exc.message)}", log=exc.message,
                    source_path=str(path)) from None
            except isolation.WorkerCancelled:
                raise KeyboardInterrupt(f"build of kernel {name!r} on {self.device_id} "
                                        "abandoned") from None
            except isolation.WorkerCrashed as exc:
                if attempt == 0 and not isinstance(exc, isolation.WorkerTimeout):
                    # a driver that crashed may have loaded a damaged entry; a worker killed
                    # from outside (its notebook's kernel shutting down) says nothing of
                    # the cache that other processes share: tried again as it is
                    if not exc.killed_from_outside:
                        self.clear_driver_cache()
                    continue
                path = source_path()
                what = ("timed out" if isinstance(exc, isolation.WorkerTimeout) else
                        f"was killed ({exc.signal_name})" if exc.killed_from_outside else
                        f"crashed the driver ({exc.signal_name})")
                raise KernelCrashError(
                    f"OpenCL kernel {name!r} ({variant}) {what} on {self.device_id} in the "
                    f"isolated build worker; source saved to {path}", log=exc.log_tail,
                    source_path=str(path), signal=exc.signal_name) from None
        raise AssertionError("unreachable")

    def clear_driver_cache(self) -> None:
        """Empty the driver's cache folder (only a folder Hermes owns) and the markers, once
        no other process is building into it."""
        self._verified.clear()
        with self.cache_lock.exclusive():
            if (self.driver_cache / OWNED_FILE).exists():
                log.warning("hermes: %s: the driver failed on its cache; emptied %s",
                            self.device_id, self.driver_cache)
                for child in self.driver_cache.iterdir():
                    if child.name in (OWNED_FILE, LOCK_FILE):
                        continue
                    shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
            else:
                shutil.rmtree(self._markers, ignore_errors=True)


# PoCL specialises a kernel's machine code on its local size, on a zero global offset and on
# a "small grid" (its CPU drivers: the widest global dimension below USHRT_MAX, 65535 itself
# is large), and caches each variant apart: the probe launch keeps all three, with as few
# work-groups as that allows.
_SMALL_GRID = (1 << 16) - 1
MAX_DEFAULT_LOCAL = 256


def default_local_size(global_size: Any) -> tuple[int, ...]:
    """The local size Hermes launches with when the caller leaves it open: the largest
    divisor of the first dimension up to MAX_DEFAULT_LOCAL, 1 elsewhere. A driver choosing
    it compiles a variant per global size, which the worker's probe would not have run."""
    return _default_local(tuple(int(g) for g in global_size))


@functools.lru_cache(maxsize=1024)  # on every launch without a local size: found once
def _default_local(sizes: tuple[int, ...]) -> tuple[int, ...]:
    first = next((d for d in range(min(sizes[0], MAX_DEFAULT_LOCAL), 0, -1)
                  if sizes[0] % d == 0), 1)
    return (first, *([1] * (len(sizes) - 1)))


def small_grid(global_size: Any) -> bool:
    """Whether PoCL compiles a launch of this global size as a "small grid" variant."""
    return all(int(g) < _SMALL_GRID for g in global_size)


def _probe_grid(global_size: tuple[int, ...], local: tuple[int, ...] | None) -> tuple[int, ...]:
    """A global size with the real one's specialisation class and few work-groups."""
    group = local or (1,) * len(global_size)
    out = []
    for g, loc in zip(global_size, group):
        if g < _SMALL_GRID:
            out.append(min(g, loc) if local else min(g, 64))
        else:
            out.append(-(-_SMALL_GRID // loc) * loc)
    return tuple(out)


def short_log(text: str, limit: int = 1500) -> str:
    """The compiler's log without PyOpenCL's repeated headers, bounded in size."""
    lines = [ln for ln in text.splitlines() if ln.strip() and "BUILD_PROGRAM_FAILURE" not in ln]
    out = "\n".join(lines)
    return out if len(out) <= limit else out[:limit] + " …"


def describe(arg: Any, queue: Any) -> tuple[Any, ...]:
    """A kernel argument as the worker rebuilds it: buffers by size (small ones with their
    contents, e.g. shapes and strides), local memory by size, scalars by value."""
    import numpy as np
    import pyopencl as cl

    if arg is None:
        return ("none",)
    if isinstance(arg, cl.LocalMemory):
        return ("local", int(arg.size))
    if isinstance(arg, cl.MemoryObjectHolder):
        size = int(arg.size)
        data = None
        if size <= _SMALL:
            host = np.empty(size, np.uint8)
            cl.enqueue_copy(queue, host, arg)
            data = host.tobytes()
        return ("buf", size, data)
    return ("scalar", arg)


class GuardedKernel:
    """A PyOpenCL kernel whose first launch per geometry happens in the worker first."""

    def __init__(self, kernel: Any, guard: Guard, source: str, source_path: Any) -> None:
        self._kernel = kernel
        self._guard = guard
        self._source = source
        self._source_path = source_path
        self._launched: set[tuple[Any, bool]] = set()  # geometries already safe

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)

    def __call__(self, queue: Any, global_size: Any, local_size: Any, *args: Any,
                 global_offset: Any = None, **kwargs: Any) -> Any:
        if local_size is None:  # the driver would pick one per global size, unprobed
            local_size = default_local_size(global_size)
        # each is a machine-code variant of its own in PoCL (guarded apart)
        geometry = (tuple(local_size),
                    bool(global_offset is not None and any(global_offset)),
                    small_grid(global_size))
        if geometry in self._launched:
            return self._kernel(queue, global_size, local_size, *args,
                                global_offset=global_offset, **kwargs)
        from hermes_nb.compiler.progress import building

        name = self._kernel.function_name
        # shared until the driver has compiled this geometry here (it does so as the launch
        # runs): no other process empties the cache between the worker's launch and ours
        with self._guard.cache_lock.shared():
            with building(f"first launch of {name} on {self._guard.device_id} in the build worker",
                          kind="self-test"):
                self._guard.launch(self._source, name, global_size, local_size, global_offset,
                                   args, queue, self._source_path)
            event = self._kernel(queue, global_size, local_size, *args,
                                 global_offset=global_offset, **kwargs)
            event.wait()
        self._launched.add(geometry)
        return event
