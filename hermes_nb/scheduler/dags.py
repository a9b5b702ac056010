"""Task graphs for the simulator: tiled Cholesky, random layered DAGs, image pipelines.

A task's cost is ``work`` seconds on the reference device (speed 1.0, a multicore
CPU); a simulated device runs it in ``work / speed`` where ``speed`` is looked up by
the task's ``kind``, then its ``cls`` (op class), then ``"default"``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Task:
    """One kernel of a DAG.

    ``deps`` are indices of the tasks whose outputs it reads (each an input of
    ``out_bytes`` of that task); ``host_bytes`` are inputs that start on the host.
    """

    name: str
    kind: str
    cls: str
    work: float
    out_bytes: int
    deps: tuple[int, ...] = ()
    host_bytes: tuple[int, ...] = ()
    flops: float = 0.0
    size: str = ""


@dataclass(frozen=True)
class DAG:
    name: str
    tasks: tuple[Task, ...]
    successors: tuple[tuple[int, ...], ...] = field(default=(), compare=False)

    @staticmethod
    def build(name: str, tasks: list[Task]) -> DAG:
        succ: list[list[int]] = [[] for _ in tasks]
        for i, t in enumerate(tasks):
            for d in t.deps:
                if d >= i:
                    raise ValueError(
                        f"{name}: task {i} depends on later task {d} (tasks must be in topological order)"
                    )
                succ[d].append(i)
        return DAG(name, tuple(tasks), tuple(tuple(s) for s in succ))

    def __len__(self) -> int:
        return len(self.tasks)


#: reference (multicore CPU) rates in GFLOP/s per Cholesky kernel
CHOLESKY_GFLOPS = {"potrf": 40.0, "trsm": 80.0, "syrk": 80.0, "gemm": 100.0}


def cholesky_dag(n_tiles: int, tile: int = 2048, itemsize: int = 8) -> DAG:
    """Right-looking tiled Cholesky of an ``n_tiles × n_tiles`` tile matrix (lower).

    POTRF(k); TRSM(i, k) for i > k; SYRK(i, k) on the diagonal; GEMM(i, j, k) below it.
    Every task reads the current version of the tile it updates plus its operands.
    """
    b = float(tile)
    tile_bytes = tile * tile * itemsize
    flops = {"potrf": b**3 / 3, "trsm": b**3, "syrk": b**3, "gemm": 2 * b**3}
    tasks: list[Task] = []
    last: dict[tuple[int, int], int] = {}  # tile -> task that wrote it last

    def add(name: str, kind: str, writes: tuple[int, int], reads: list[tuple[int, int]]) -> None:
        deps, host = [], []
        for t in [writes, *reads]:
            if t in last:
                deps.append(last[t])
            else:
                host.append(tile_bytes)
        cls = "matmul" if kind in ("gemm", "syrk") else kind
        work = flops[kind] / (CHOLESKY_GFLOPS[kind] * 1e9)
        tasks.append(Task(name, kind, cls, work, tile_bytes, tuple(dict.fromkeys(deps)), tuple(host),
                          flops[kind], f"b{tile}"))
        last[writes] = len(tasks) - 1

    for k in range(n_tiles):
        add(f"potrf({k})", "potrf", (k, k), [])
        for i in range(k + 1, n_tiles):
            add(f"trsm({i},{k})", "trsm", (i, k), [(k, k)])
        for i in range(k + 1, n_tiles):
            add(f"syrk({i},{k})", "syrk", (i, i), [(i, k)])
            for j in range(k + 1, i):
                add(f"gemm({i},{j},{k})", "gemm", (i, j), [(i, k), (j, k)])
    return DAG.build(f"cholesky-{n_tiles}x{tile}", tasks)


#: (class, reference seconds, output bytes) of the random layered DAG's kernels
LAYERED_KINDS = (
    ("matmul", 20e-3, 8 << 20),
    ("elementwise", 4e-3, 4 << 20),
    ("stencil", 8e-3, 4 << 20),
    ("reduce", 3e-3, 1 << 20),
)


def random_layered_dag(layers: int, width: int, seed: int = 0, max_deps: int = 3) -> DAG:
    """``layers`` layers of ``width/2 … width`` tasks, each reading 1–``max_deps`` tasks of
    the layer before (the first layer reads host data); kinds drawn from ``LAYERED_KINDS``,
    costs jittered ±50%."""
    rng = random.Random(seed)
    tasks: list[Task] = []
    previous: list[int] = []
    for layer in range(layers):
        current = []
        for j in range(rng.randint(max(1, width // 2), width)):
            cls, ref, out = rng.choice(LAYERED_KINDS)
            work = ref * rng.uniform(0.5, 1.5)
            if previous:
                deps = tuple(sorted(rng.sample(previous, rng.randint(1, min(max_deps, len(previous))))))
                host: tuple[int, ...] = ()
            else:
                deps, host = (), (out,)
            size = f"{round(work / ref * 10)}"  # ten size classes per kind
            tasks.append(Task(f"L{layer}.{j}:{cls}", cls, cls, work, out, deps, host, work * 1e11, size))
            current.append(len(tasks) - 1)
        previous = current
    return DAG.build(f"layered-{layers}x{width}-s{seed}", tasks)


def image_pipelines(n_images: int, width: int = 1920, height: int = 1080) -> DAG:
    """``n_images`` independent chains: decode (host only) → blur → sobel → threshold → histogram."""
    pixels = width * height
    rgb, gray = pixels * 3, pixels * 4
    scale = pixels / (1920 * 1080)
    stages = (  # name, class, reference seconds at 1080p, output bytes
        ("decode", "decode", 6e-3, rgb),
        ("blur", "stencil", 10e-3, gray),
        ("sobel", "stencil", 8e-3, gray),
        ("threshold", "elementwise", 2e-3, pixels),
        ("histogram", "reduce", 2e-3, 1024),
    )
    tasks: list[Task] = []
    for i in range(n_images):
        prev = None
        for name, cls, ref, out in stages:
            deps = () if prev is None else (prev,)
            host = (rgb // 4,) if prev is None else ()  # compressed bytes come from the host
            tasks.append(Task(f"{name}[{i}]", name, cls, ref * scale, out, deps, host, ref * scale * 1e11,
                              f"{width}x{height}"))
            prev = len(tasks) - 1
    return DAG.build(f"images-{n_images}x{width}x{height}", tasks)
