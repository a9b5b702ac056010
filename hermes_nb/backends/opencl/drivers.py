"""Which OpenCL drivers Hermes trusts, and with which features.

- PoCL gets its own cache folder under Hermes's cache directory, keyed by the installed
  OpenCL drivers, so one driver's cache never feeds another (``POCL_CACHE_DIR``).
- Each device is self-tested once per machine fingerprint (platform, driver and device
  versions, the CPU's feature flags) in the isolated worker; the verdict is kept as JSON
  and read back by later processes.
- Two platforms exposing the same physical device (two PoCLs on the same cores) give one
  ``opencl:N``: the newest driver that passed its self-test. The others are listed with
  the reason by ``hermes devices --all`` (``HERMES_OPENCL_ALL_DRIVERS=1`` exposes healthy
  duplicates too, so the test suite runs on every driver).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import sysconfig
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb import logrecords
from hermes_nb.backends import isolation
from hermes_nb.backends.opencl.cache_lock import OWNED_FILE
from hermes_nb.cache import cache_dir, private_dir
from hermes_nb.settings import env_flag

log = logging.getLogger("hermes_nb.backends")

SELFTEST_VERSION = "1"


@dataclass
class Verdict:
    """What the self-test found for one device under one fingerprint."""

    fingerprint: str
    healthy: bool
    float32_width: int = 0
    float64_width: int = 0
    local_memory: bool = False
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        if not self.healthy:
            return "failed: " + "; ".join(self.reasons)
        parts = [f"float32 vectors ×{self.float32_width or 'none'}",
                 f"float64 vectors ×{self.float64_width or 'none'}",
                 "local memory" if self.local_memory else "no local memory"]
        return "passed (" + ", ".join(parts) + ")" + (
            "; off: " + "; ".join(self.reasons) if self.reasons else "")


@dataclass
class Candidate:
    """One OpenCL device as one platform exposes it."""

    platform_index: int
    device_index: int
    platform: Any
    device: Any

    @property
    def ref(self) -> tuple[int, int, str]:
        return (self.platform_index, self.device_index, self.device.name.strip())

    @property
    def driver(self) -> str:
        """A short driver name: ``PoCL 3.1+debian (LLVM 15.0.6)``, else platform and version."""
        version = self.platform.version
        pocl, llvm = re.search(r"PoCL \S+", version), re.search(r"LLVM [\d.]+", version)
        if pocl:
            return pocl.group(0) + (f" ({llvm.group(0)})" if llvm else "")
        return f"{self.platform.name.strip()} {self.device.driver_version.strip()}"

    def version_key(self) -> tuple[int, ...]:
        """Numbers of the driver version, newest first when sorted descending."""
        text = f"{self.device.driver_version} {self.platform.version}"
        return tuple(int(n) for n in re.findall(r"\d+", text)[:6])

    def physical_key(self) -> tuple[Any, ...]:
        """Same key for the same hardware seen through two drivers."""
        import pyopencl as cl

        dev = self.device
        if dev.type & cl.device_type.CPU:
            return ("host-cpu",)  # every CPU driver runs on the same cores
        try:
            bus = dev.pci_bus_info_khr
            return ("pci", bus.pci_domain, bus.pci_bus, bus.pci_device, bus.pci_function)
        except Exception:  # no cl_khr_pci_bus_info
            return ("device", int(dev.vendor_id), dev.name.strip(), int(dev.global_mem_size))


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor()


def fingerprint(candidate: Candidate) -> str:
    d, p = candidate.device, candidate.platform
    parts = [SELFTEST_VERSION, p.name, p.version, d.name, d.driver_version, d.version,
             hashlib.sha256(_cpu_flags().encode()).hexdigest()]
    return hashlib.sha256("\0".join(str(x).strip() for x in parts).encode()).hexdigest()[:20]


# ---- the driver cache ----------------------------------------------------------------------

def _icd_libraries() -> list[str]:
    """The driver libraries the ICD loader will open (system vendors and PyOpenCL's own)."""
    folders = [Path(os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors"))]
    spec = importlib.util.find_spec("pyopencl")
    if spec and spec.origin:
        folders.append(Path(spec.origin).parent / ".libs")
    libs = []
    for folder in folders:
        for icd in sorted(folder.glob("*.icd")) if folder.is_dir() else []:
            try:
                name = icd.read_text().strip()
            except OSError:
                continue
            path = Path(name) if Path(name).is_absolute() else _library_path(folder, name)
            size = path.stat().st_size if path.exists() else 0
            # the file's name and size, not its folder or mtime: a new virtual environment
            # (pip's copy of a wheel's driver, whose name holds a hash of its contents, is
            # dated at install) keeps the kernels its driver built before
            libs.append(f"{path.name}:{size}")
    return libs


def _library_path(icd_folder: Path, name: str) -> Path:
    """Where a driver named in an ICD file is: beside the file (a wheel's), else in the
    system's library folders (an ICD file of the system names a bare soname)."""
    beside = icd_folder / name
    if beside.exists() or "/" in name:
        return beside
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for lib in (f"/usr/lib/{multiarch}", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        if (Path(lib) / name).exists():
            return Path(lib) / name
    return beside


@functools.cache
def configure_driver_cache() -> Path:
    """Point PoCL's cache at a folder of Hermes's own (unless the user chose one); once per
    process, since PoCL reads it once."""
    chosen = os.environ.get("POCL_CACHE_DIR")
    if chosen:
        return Path(chosen)
    key = hashlib.sha256("\n".join(_icd_libraries()).encode()).hexdigest()[:16]
    folder = cache_dir("pocl", key)
    try:
        folder = private_dir("pocl", key)  # machine code is loaded from here: never planted
        (folder / OWNED_FILE).touch()
    except OSError as exc:  # unwritable cache: PoCL builds in memory
        log.warning("hermes: cannot use %s for OpenCL kernels (%s); building without a disk "
                    "cache", folder, exc)
        os.environ["POCL_KERNEL_CACHE"] = "0"
        return folder
    os.environ["POCL_CACHE_DIR"] = str(folder)
    if env_flag("HERMES_DRIVER_CACHE_TRIM", True):
        from hermes_nb.backends.opencl.cache_trim import trim_in_background

        trim_in_background(folder)
    return folder


def _pytools_cache() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "pytools"
    import platformdirs

    return Path(platformdirs.user_cache_dir("pytools", "pytools"))


def heal_pyopencl_cache() -> list[Path]:
    """Move aside PyOpenCL's kernel-invoker databases (pytools) that SQLite cannot read:
    a damaged one makes ``import pyopencl`` or every first kernel call fail for good."""
    import sqlite3

    moved = []
    for db in sorted(_pytools_cache().glob("pdict-*pyopencl*.sqlite")):
        try:
            with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
                ok = conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        except sqlite3.Error:
            ok = False
        if not ok:
            aside = db.with_name(f"{db.name}.corrupt-{os.getpid()}")
            with contextlib.suppress(OSError):
                db.replace(aside)
                moved.append(aside)
                log.warning("hermes: PyOpenCL's cache %s was damaged; moved it to %s", db, aside.name)
    return moved


# ---- the self-test -------------------------------------------------------------------------

def _verdict_path(fp: str) -> Path:
    return cache_dir("selftest", f"{fp}.json")


def load_verdict(fp: str) -> Verdict | None:
    try:
        data = json.loads(_verdict_path(fp).read_text())
        verdict = Verdict(**data)
    except (OSError, ValueError, TypeError):
        return None
    return verdict if verdict.fingerprint == fp else None


def _store(verdict: Verdict) -> None:
    path = _verdict_path(verdict.fingerprint)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(verdict)))
        tmp.replace(path)
    except OSError as exc:
        log.debug("hermes: cannot keep the self-test verdict: %s", exc)


def _feature(candidate: Candidate, feature: str) -> str:
    """``""`` when the feature works, else why not (wrong values, error, crash)."""
    try:
        return isolation.worker().call("opencl_feature", candidate.ref, feature, timeout=60)
    except isolation.WorkerJobError as exc:
        first = next((ln for ln in exc.message.splitlines() if "error" in ln.lower()), exc.message)
        return f"{feature}: {first.strip()[:200]}"
    except isolation.WorkerCrashed as exc:
        what = "timed out" if isinstance(exc, isolation.WorkerTimeout) else f"crashed ({exc.signal_name})"
        return f"{feature}: {what}"


def _widest(candidate: Candidate, dtype: str, native: int, reasons: list[str]) -> int:
    for width in (16, 8, 4):
        if width > native:
            continue
        problem = _feature(candidate, f"{dtype}x{width}")
        if not problem:
            return width
        reasons.append(problem)
    return 0


def run_selftest(candidate: Candidate) -> Verdict:
    """Probe the features the code generators use, in the isolated worker."""
    start = time.perf_counter()
    fp = fingerprint(candidate)
    dev = candidate.device
    problem = _feature(candidate, "scalar")
    if problem:
        return Verdict(fp, False, reasons=[problem], seconds=time.perf_counter() - start)
    reasons: list[str] = []
    local_problem = _feature(candidate, "local")
    if local_problem:
        reasons.append(local_problem)
    f32 = _widest(candidate, "float32", int(dev.native_vector_width_float), reasons)
    fp64 = bool(getattr(dev, "double_fp_config", 0))
    f64 = _widest(candidate, "float64", int(dev.native_vector_width_double), reasons) if fp64 else 0
    return Verdict(fp, True, f32, f64, not local_problem, reasons, time.perf_counter() - start)


def verdict_for(candidate: Candidate) -> Verdict:
    """The stored verdict for this fingerprint, or a new self-test (kept for next time)."""
    fp = fingerprint(candidate)
    verdict = load_verdict(fp)
    if verdict is None:
        verdict = run_selftest(candidate)
        _store(verdict)
        logrecords.emit(logging.INFO, f"hermes: OpenCL device {candidate.device.name.strip()!r} "
                        f"({candidate.driver}) self-test: {verdict.summary()}",
                        logger=log.name, category="selftest")
        if not verdict.healthy or verdict.reasons:
            # logged, not warnings.warn: a warnings filter set to "error" must not lose devices
            log.warning("hermes: OpenCL device %r (%s) self-test %s", candidate.device.name.strip(),
                        candidate.driver, verdict.summary())
    return verdict


# ---- choosing one driver per device ----------------------------------------------------------

@dataclass
class Hidden:
    """A device Hermes does not use, and why (for ``hermes devices --all``)."""

    name: str
    driver: str
    reason: str


def choose(candidates: list[Candidate]) -> tuple[list[tuple[Candidate, Verdict]], list[Hidden]]:
    """The candidates to use (one per physical device, newest healthy driver first) and
    the ones left out with the reason."""
    expose_all = env_flag("HERMES_OPENCL_ALL_DRIVERS", False)
    groups: dict[tuple[Any, ...], list[Candidate]] = {}
    for c in candidates:
        groups.setdefault(c.physical_key(), []).append(c)
    chosen: list[tuple[Candidate, Verdict]] = []
    hidden: list[Hidden] = []
    for group in groups.values():
        group.sort(key=Candidate.version_key, reverse=True)
        primary: Candidate | None = None
        for c in group:
            name = c.device.name.strip()
            if primary is not None and not expose_all:
                hidden.append(Hidden(name, c.driver, f"same device as {primary.device.name.strip()!r} "
                                                     f"through a newer driver ({primary.driver})"))
                continue
            verdict = verdict_for(c)
            if not verdict.healthy:
                hidden.append(Hidden(name, c.driver, f"self-test {verdict.summary()}"))
                continue
            chosen.append((c, verdict))
            primary = primary or c
    return chosen, hidden
