"""What every Numba code generator shares: the threading layer, the LLVM intrinsics the
generated code calls, the header of generated modules, and building a generated module into
a compiled kernel with caches in memory and on disk.

Generated sources are written to ``<cache>/numba/<prefix>k_<hash>.py`` and imported, so
that Numba's ``cache=True`` lets a new process skip compilation. ``<cache>`` is
``$HERMES_NB_CACHE_DIR`` if set, else ``platformdirs.user_cache_dir("hermes_nb")``.

Threading layer: Numba's default ``workqueue`` layer aborts when parallel kernels are
entered from two threads at once. Hermes calls a device's kernels from that device's worker
thread, but several devices or user threads may run kernels concurrently, so on import we
select ``tbb`` if its library loads, else ``omp`` (both thread-safe; GNU OpenMP is not
fork-safe after first use, so use ``spawn``/``forkserver`` for worker processes), else leave
``workqueue``. ``NUMBA_THREADING_LAYER`` set by the user wins. OpenMP's idle spinning is
kept short (``GOMP_SPINCOUNT``) unless the user sets ``OMP_WAIT_POLICY`` or it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from hermes_nb.cache import private_dir, temporary_private_dir

# GNU OpenMP's idle workers spin ~300k iterations after each parallel region; on a machine
# with few (or shared) cores that spinning steals the time the next kernel, another device's
# driver thread or the caller needs (W4 back to back: 12.0 ms spinning, 5.4 ms without).
# A short spin keeps the wake-up fast. Read by libgomp when it loads; a user's setting wins.
_GOMP_SPINCOUNT = "10000"


def _limit_openmp_spinning() -> None:
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", _GOMP_SPINCOUNT)


def _choose_threading_layer() -> str:
    if os.environ.get("NUMBA_THREADING_LAYER") or numba.config.THREADING_LAYER != "default":
        return str(numba.config.THREADING_LAYER)
    _limit_openmp_spinning()
    for layer, module in (("tbb", "tbbpool"), ("omp", "omppool")):
        try:
            importlib.import_module(f"numba.np.ufunc.{module}")
        except (ImportError, OSError):
            continue
        numba.config.THREADING_LAYER = layer
        return layer
    return "workqueue"


THREADING_LAYER = _choose_threading_layer()


# ---- LLVM intrinsics the generated code calls ------------------------------------------
# Numba maps np.floor & co. through its ufunc machinery (slow to type) and has no fma;
# these lower to single LLVM intrinsics, which the loop vectoriser understands.
def _float_intrinsic(name: str, llvm_name: str, arity: int) -> Any:
    def typer(typingctx: Any, *args: Any) -> Any:
        if not all(isinstance(a, types.Float) and a == args[0] for a in args):
            return None

        def codegen(context: Any, builder: Any, sig: Any, llargs: Any) -> Any:
            t = llargs[0].type
            fn = builder.module.declare_intrinsic(llvm_name, [t], ir.FunctionType(t, [t] * arity))
            return builder.call(fn, llargs)

        return args[0](*args), codegen

    # numba's @intrinsic needs explicit parameters
    params = ", ".join(f"a{i}" for i in range(arity))
    namespace: dict[str, Any] = {"typer": typer}
    exec(f"def {name}(typingctx, {params}):\n    return typer(typingctx, {params})\n", namespace)
    return intrinsic(namespace[name])


floor_ = _float_intrinsic("floor_", "llvm.floor", 1)
ceil_ = _float_intrinsic("ceil_", "llvm.ceil", 1)
rint_ = _float_intrinsic("rint_", "llvm.rint", 1)  # default rounding mode: half to even
trunc_ = _float_intrinsic("trunc_", "llvm.trunc", 1)
fma_ = _float_intrinsic("fma_", "llvm.fma", 3)
pow_ = _float_intrinsic("pow_", "llvm.pow", 2)  # C pow, as NumPy's float power
copysign_ = _float_intrinsic("copysign_", "llvm.copysign", 2)


@intrinsic
def pow2_f32_(typingctx: Any, n: Any) -> Any:
    """2**n as float32 for an integral float32 n in [-126, 127], by building the exponent bits."""
    if n != types.float32:
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        i32 = ir.IntType(32)
        bits = builder.add(builder.fptosi(args[0], i32), ir.Constant(i32, 127))
        return builder.bitcast(builder.shl(bits, ir.Constant(i32, 23)), ir.FloatType())

    return types.float32(types.float32), codegen


def _f32_bits_intrinsic(name: str, doc: str, lower: Callable[[Any, Any], Any]) -> Any:
    """A float32 -> float32 intrinsic computed on the bits as int32 (vectorises as lanes)."""
    def typer(typingctx: Any, x: Any) -> Any:
        if x != types.float32:
            return None

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            bits = builder.bitcast(args[0], ir.IntType(32))
            return lower(builder, bits)

        return types.float32(types.float32), codegen

    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(typer)


def _i32(value: int) -> Any:
    return ir.Constant(ir.IntType(32), value)


frexp_mantissa_f32_ = _f32_bits_intrinsic(
    "frexp_mantissa_f32_", "m of a normal float32 x = m * 2**e, 0.5 <= |m| < 1 (sign kept)",
    lambda b, bits: b.bitcast(b.or_(b.and_(bits, _i32(-0x7F800001)), _i32(0x3F000000)),
                              ir.FloatType()))
frexp_exponent_f32_ = _f32_bits_intrinsic(
    "frexp_exponent_f32_", "e of a normal float32 x = m * 2**e, 0.5 <= |m| < 1, as float32",
    lambda b, bits: b.sitofp(b.sub(b.and_(b.lshr(bits, _i32(23)), _i32(0xFF)), _i32(126)),
                             ir.FloatType()))


class _WideVectorAttributes(ir.values.FunctionAttributes):
    """A function's attributes plus LLVM's ``"prefer-vector-width"="512"``, which llvmlite's
    set of known attribute names cannot spell."""

    def __bool__(self) -> bool:  # always written, even with no other attribute
        return True

    def _to_list(self, ret_type: Any) -> list[str]:
        return [*super()._to_list(ret_type), '"prefer-vector-width"="512"']


@intrinsic
def wide_vectors_(typingctx: Any) -> Any:
    """Lets LLVM vectorise the calling function's loops with 512-bit vectors where the CPU
    has them. LLVM's tuning for Intel's AVX-512 cores (Skylake-X to Emerald Rapids) caps its
    loops at 256 bits, against the clock drops of early AVX-512 parts; the conv kernels'
    loops of FMAs run ~30% faster at 512 bits on current ones. A no-op without AVX-512.
    Called in a ``prange`` body it marks that body's outlined function, where the loops are."""
    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        fn = builder.function
        if not isinstance(fn.attributes, _WideVectorAttributes):
            wide = _WideVectorAttributes(list(fn.attributes))
            wide.alignstack, wide.personality = fn.attributes.alignstack, fn.attributes.personality
            fn.attributes = wide
        return context.get_dummy_value()

    return types.none(), codegen


# ---- generated modules -------------------------------------------------------------------
INTRINSICS_IMPORT = ("from hermes_nb.codegen.numba_support import ceil_, copysign_, floor_, "
                     "fma_, frexp_exponent_f32_, frexp_mantissa_f32_, pow2_f32_, pow_, rint_, "
                     "trunc_, wide_vectors_")


def codegen_hash(*files: str) -> str:
    """A key for generated modules: the generator files' contents and this module's (whose
    intrinsics the generated code imports)."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    for f in files:
        h.update(Path(f).read_bytes())
    return h.hexdigest()[:16]


def module_header(generator: str, codegen: str, notes: Sequence[str], *,
                  extra_imports: Sequence[str] = ()) -> list[str]:
    """The first lines of a generated module: what made it, then the imports it needs."""
    return [
        f"# Generated by hermes_nb.codegen.{generator}; do not edit.",
        *(f"# {note}" for note in notes),
        f"# codegen: {codegen}, numba {numba.__version__}",
        "import cmath",
        "import math",
        "",
        "import numpy as np",
        "from numba import njit, prange",
        "",
        INTRINSICS_IMPORT,
        *extra_imports,
        "",
    ]


KERNEL_CACHE_SIZE = 256  # compiled kernels each KernelCache keeps in memory
DISK_CACHE_BYTES = 512 << 20  # generated modules and Numba's cache files, in all
DISK_CACHE_ENTRIES = 2048  # generated modules kept on disk


class KernelCache:
    """Compiled kernels by key, each built once even when several threads ask at once;
    at most ``capacity`` of them, the least recently used dropped first (with its
    generated module, so that nothing else keeps it alive)."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = KERNEL_CACHE_SIZE if capacity is None else capacity
        self._kernels: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kernels)

    def get(self, key: Any) -> Any:
        kernel = self._kernels.get(key)  # the common case takes no lock
        if kernel is not None:
            with contextlib.suppress(KeyError):  # dropped by another thread meanwhile
                self._kernels.move_to_end(key)
        return kernel

    def get_or_build(self, key: Any, build: Callable[[], Any], what: str = "kernel") -> Any:
        """The kernel of ``key``, built by ``build()`` on a miss (``what`` names it in
        the progress log of a long build)."""
        kernel = self.get(key)
        if kernel is None:
            with self._lock:
                kernel = self._kernels.get(key)
                if kernel is None:
                    from hermes_nb.compiler.progress import building

                    with building(what):
                        kernel = build()
                    self._kernels[key] = kernel
                    self._evict()
        return kernel

    def _evict(self) -> None:
        while len(self._kernels) > max(self.capacity, 1):
            _, old = self._kernels.popitem(last=False)
            name = getattr(getattr(old, "py_func", None), "__module__", "")
            if name.startswith("hermes_nb_numba_"):
                sys.modules.pop(name, None)


def _entries(directory: Path) -> dict[str, list[Path]]:
    """Generated module stem -> its files: the module and what was cached from it."""
    groups: dict[str, list[Path]] = {}
    for folder in (directory, directory / "__pycache__"):
        try:
            listing = list(os.scandir(folder))
        except OSError:
            continue
        for entry in listing:
            stem = entry.name.split(".", 1)[0]
            if stem.startswith("k_") and entry.is_file(follow_symlinks=False):
                groups.setdefault(stem, []).append(Path(entry.path))
    return groups


def trim_disk_cache(directory: Path, max_bytes: int | None = None,
                    max_entries: int | None = None, keep: frozenset[str] = frozenset()) -> int:
    """Remove the least recently used generated modules (and their cache files) in
    ``directory`` until at most ``max_entries`` and ``max_bytes`` remain; stems in
    ``keep`` stay. Recency: the newest mtime among an entry's files. Returns how many
    entries went."""
    max_bytes = DISK_CACHE_BYTES if max_bytes is None else max_bytes
    max_entries = DISK_CACHE_ENTRIES if max_entries is None else max_entries
    sized: list[tuple[float, int, str, list[Path]]] = []
    for stem, files in _entries(directory).items():
        stats = []
        for f in files:
            try:
                stats.append(f.stat())
            except OSError:
                continue
        sized.append((max((st.st_mtime for st in stats), default=0.0),
                      sum(st.st_size for st in stats), stem, files))
    total = sum(size for _, size, _, _ in sized)
    count = len(sized)
    removed = 0
    for _, size, stem, files in sorted(sized):
        if total <= max_bytes and count <= max_entries:
            break
        if stem in keep:
            continue
        for f in files:
            with contextlib.suppress(OSError):
                f.unlink()
        total -= size
        count -= 1
        removed += 1
    return removed


def _mark_used(path: Path) -> None:
    """Make a loaded module the most recently used entry. Only its cache files are
    touched: Numba keys its cache on the module's own mtime."""
    for f in (path.parent / "__pycache__").glob(f"{path.stem}.*"):
        with contextlib.suppress(OSError):
            os.utime(f)


def numba_array(dtype: str, readonly: bool) -> Any:
    """The Numba type of a 1-D C-contiguous array of ``dtype``."""
    return types.Array(numba.from_dtype(np.dtype(dtype)), 1, "C", readonly=readonly)


# ---- on-disk modules and the in-memory cache -------------------------------------------
def cache_dir() -> Path:
    """Where generated kernel modules (and Numba's caches, in __pycache__) live: a private
    folder (``hermes_nb.cache.private_dir``), never one another user could plant code in."""
    return private_dir("numba")


def _write_module(source: str, digest: str) -> Path:
    # the cache folder, else (full or unwritable) this process's own temporary folder
    for directory in (cache_dir(), temporary_private_dir("numba")):
        path = directory / f"k_{digest}.py"
        try:
            # rewriting an identical file would change its mtime and void Numba's cache
            if path.exists() and path.read_text() == source:
                return path
            tmp = directory / f".k_{digest}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(source)
            os.replace(tmp, path)  # atomic: concurrent processes never see half a file
            return path
        except OSError:
            continue
    raise OSError("hermes_nb: no writable directory for generated Numba kernels")


def build_kernel(source: str, prefix: str, signature: tuple[Any, ...]) -> Any:
    """Write generated ``source`` to the kernel cache, import it and compile its
    ``kernel`` for ``signature`` only (Numba's disk cache makes a new process skip this).

    A failure raises :class:`KernelBuildError` naming the saved file; nothing is cached.
    """
    digest = hashlib.sha256(source.encode()).hexdigest()[:32]
    path = _write_module(source, f"{prefix}{digest}")
    name = f"hermes_nb_numba_{prefix or 'k'}_{digest}"
    try:
        kernel = _load(name, path, signature)
    except Exception as exc:
        if not _drop_numba_cache(path):
            _build_failed(name, path, exc)
        try:  # a damaged cache file (a crash or a full disk left it half-written): once more
            kernel = _load(name, path, signature)
        except Exception as again:
            _build_failed(name, path, again)
    kernel.disable_compile()  # one machine-code version per variant, never per call
    _mark_used(path)
    trim_disk_cache(path.parent, keep=frozenset({path.stem}))
    return kernel


def _load(name: str, path: Path, signature: tuple[Any, ...]) -> Any:
    """Import the generated module and compile (or load from Numba's cache) its kernel."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        module.kernel.compile(signature)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module.kernel


def _drop_numba_cache(path: Path) -> bool:
    """Remove Numba's cache files of the module at ``path``; whether there were any."""
    import logging

    stale = list((path.parent / "__pycache__").glob(f"{path.stem}.*"))
    for f in stale:
        with contextlib.suppress(OSError):
            f.unlink()
    if stale:
        logging.getLogger("hermes_nb.codegen").warning(
            "hermes: Numba's cache of %s failed to load; dropped %s and rebuilding", path.name,
            stale[0])
    return bool(stale)


def _build_failed(name: str, path: Path, exc: BaseException) -> NoReturn:
    """A Numba typing/lowering error: report it, cache nothing."""
    from hermes_nb.errors import KernelBuildError

    sys.modules.pop(name, None)
    raise KernelBuildError(
        f"Numba build failed; source saved to {path}\n{type(exc).__name__}: {exc}",
        log=str(exc), source_path=str(path),
    ) from exc


