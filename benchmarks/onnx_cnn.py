"""A small CNN as an ONNX model: Hermes's fused run on cpu:0 against onnxruntime's CPU run,
NumPy in and NumPy out, medians of interleaved rounds, and their ratios.

    python -m benchmarks.onnx_cnn [--repeat 60] [--block-seconds 0.05] [--batch 8,256]
                                  [--device cpu:0]

The model (built with ``onnx.helper``, seeded random weights, no downloads) is
Conv → BatchNormalization → Relu → MaxPool → Conv(group=2, strides, pads, dilations) →
GlobalAveragePool → Flatten → Gemm → Softmax; ``tests/backend/test_onnx.py`` checks it
against onnxruntime. Hermes runs it on ``cpu:0`` as 4 kernels (the first Conv with its
bias, folded batch norm, ReLU and MaxPool one ``fused_conv``, the second with its bias, the
global pool and the Flatten another, Gemm a ``fused_matmul``, Softmax a ``fused_softmax``). Two Hermes runs
are timed: ``session.run`` (``model.session(device)``: NumPy in and out like onnxruntime's
``InferenceSession.run``, the kernels planned once and replayed) and the lazy
``model(x).numpy()``, which builds, plans, places and schedules the graph on every run; its
kernels' own time is printed too. The session and onnxruntime are timed in interleaved
rounds of a block of runs each, then the lazy run and onnxruntime apart (a lazy run's
garbage and background work would otherwise fall on the session's rounds). A block lasts at
least ``--block-seconds`` (a batch-8 session's: some 400 runs), so both runtimes are timed
in the steady state of a serving loop, not in the first runs after a pause, where either
one's idle threads are still waking. The machine's CPU and vector extensions are printed
first.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def small_cnn(seed: int = 0, channels: int = 3, classes: int = 10) -> Any:
    """The benchmark's model as an ``onnx.ModelProto`` with an input ``x`` of shape
    (N, channels, 32, 32) (N symbolic) and an output ``probs`` of shape (N, classes)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)

    def weight(name: str, *shape: int, scale: float = 0.2, low: float | None = None) -> Any:
        value = rng.uniform(low, 1.0, shape) if low is not None else rng.normal(0, scale, shape)
        return numpy_helper.from_array(value.astype(np.float32), name)

    inits = [
        weight("w1", 8, channels, 3, 3), weight("b1", 8),
        weight("gamma", 8, low=0.5), weight("beta", 8), weight("mu", 8),
        weight("sigma2", 8, low=0.5),
        weight("w2", 16, 4, 3, 3), weight("b2", 16),
        weight("w3", classes, 16), weight("b3", classes),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mu", "sigma2"], ["n1"],
                         name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", group=2,
                         strides=[2, 2], pads=[2, 2, 2, 2], dilations=[2, 2]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", channels, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", classes])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


#: rounds of a block of runs of each candidate
ROUNDS = 6
#: seconds each block waits first: a runtime's idle threads spin on after its last run
#: (onnxruntime's pool ~45 ms, the OpenMP threads of Numba's parallel kernels ~10 ms, both
#: measured here), and would take a core from the other's runs
SETTLE_S = 0.1
#: untimed runs of each block after its pause: the first runs after an idle pause find
#: caches cold and threads asleep (a batch-8 run takes twice as long), for either runtime
WARM_RUNS = 5
#: seconds a block of runs lasts at least (its runs counted from the slower candidate's
#: time): blocks of 10 batch-8 runs, 2 ms, measured mostly how fast each runtime wakes
BLOCK_S = 0.05


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=60, help="runs of each candidate, at least")
    parser.add_argument("--block-seconds", type=float, default=BLOCK_S,
                        help="how long a block of runs lasts at least")
    parser.add_argument("--batch", default="8,256", help="comma-separated batch sizes")
    parser.add_argument("--device", default="cpu:0")
    args = parser.parse_args(argv)

    import onnxruntime as ort

    import hermes_nb as hm
    from benchmarks import machine

    print("\n".join(machine.describe(machine.facts(bandwidth=False))))
    proto = small_cnn()
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    model = hm.onnx.load(proto)
    with hm.options(progress=False):
        for batch in (int(b) for b in args.batch.split(",")):
            _compare(hm, model, session, batch, args.repeat, args.device, args.block_seconds)


def _compare(hm: Any, model: Any, session: Any, batch: int, repeat: int, device: str,
             block_s: float) -> None:
    from hermes_nb.runtime import explore
    from hermes_nb.runtime.profile import last_profile

    x = np.random.default_rng(1).normal(size=(batch, 3, 32, 32)).astype(np.float32)
    replayed = model.session(device)

    def hermes_run() -> np.ndarray:
        with hm.device(device):
            out = model(x)
        return out.numpy()

    def session_run() -> np.ndarray:
        return replayed.run(None, {"x": x})[0]

    def ort_run() -> np.ndarray:
        return session.run(None, {"x": x})[0]

    # the first runs compile the kernels; the session's first run plans its replay
    expected, got, replay = ort_run(), hermes_run(), (session_run(), session_run())[1]
    err = max(float(np.max(np.abs(r - expected))) for r in (got, replay))
    # the steady state: the first lazy run's background calibration of its new kernels on
    # the other devices (a compile on opencl:0 takes the cores for seconds) done first
    explore.wait(timeout_s=300)
    kernel_times = []

    def hermes_timed() -> None:
        hermes_run()
        kernel_times.append(sum(k.seconds for k in last_profile().kernels))

    # session against onnxruntime, then the lazy run against it: apart, since a lazy run's
    # garbage and background work would land on the session's runs timed after it
    (session_s, ort_s), rounds, runs = _interleaved(
        {"session": session_run, "ort": ort_run}, repeat, block_s)
    (lazy_s, ort_lazy_s), _, lazy_runs = _interleaved(
        {"lazy": hermes_timed, "ort": ort_run}, repeat, block_s)
    kernels_s = statistics.median(kernel_times)
    print(f"small CNN, batch {batch}, 3x32x32 float32, medians of {runs} runs ({lazy_runs} for "
          f"the lazy pair) in {ROUNDS} interleaved rounds of each pair, blocks of at least "
          f"{block_s} s (max |hermes - onnxruntime| = {err:.1e})")
    print(f"  hermes session {device}:  {session_s * 1e3:8.3f} ms  (session.run: the planned "
          "kernels replayed)")
    print(f"  onnxruntime CPU:        {ort_s * 1e3:8.3f} ms")
    print(f"  ratio session/ort:      {session_s / ort_s:8.2f}  (below 1: Hermes is faster; "
          f"{min(rounds):.2f} to {max(rounds):.2f} round by round)")
    print(f"  hermes lazy {device}:     {lazy_s * 1e3:8.3f} ms  (model(x).numpy(): built, "
          "planned, placed and scheduled on every run)")
    print(f"  onnxruntime CPU:        {ort_lazy_s * 1e3:8.3f} ms  (in the lazy run's rounds)")
    print(f"  ratio lazy/ort:         {lazy_s / ort_lazy_s:8.2f}")
    print(f"  hermes kernels only:    {kernels_s * 1e3:8.3f} ms  (sum of a lazy run's kernel "
          "times)")
    print(f"  ratio kernels/ort:      {kernels_s / ort_lazy_s:8.2f}")


def _block_runs(runs: dict[str, Callable[[], Any]], repeat: int, block_s: float) -> int:
    """Runs a block: ``repeat`` over the rounds, or more where the slower candidate's runs
    would end a block before ``block_s`` (timed on a few runs of each)."""
    slowest = 0.0
    for fn in runs.values():
        times = []
        for _ in range(WARM_RUNS):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        slowest = max(slowest, statistics.median(times))
    return max(1, repeat // ROUNDS, math.ceil(block_s / max(slowest, 1e-9)))


def _interleaved(runs: dict[str, Callable[[], Any]], repeat: int, block_s: float
                 ) -> tuple[list[float], list[float], int]:
    """Each candidate's median time (``_rounds``), the first's over the second's round by
    round (their spread shows how much the machine moved during the run), and the runs of
    each."""
    block = _block_runs(runs, repeat, block_s)
    times = _rounds(runs, block)
    first, second = (times[name] for name in runs)
    medians = [statistics.median(t for timed in times[name] for t in timed) for name in runs]
    return (medians, [statistics.median(a) / statistics.median(b) for a, b in zip(first, second)],
            block * ROUNDS)


def _rounds(runs: dict[str, Callable[[], Any]], block: int) -> dict[str, list[list[float]]]:
    """Each candidate's times, block by block, in rounds of a block of runs each, the order turning
    each round: a block, not single runs in turn, started ``SETTLE_S`` after the other's,
    since each runtime's threads spin for a while after a run (onnxruntime's pool, the
    OpenMP threads of Numba's kernels) and would slow the other's runs: each candidate is
    timed on a machine as quiet as a program using it alone would find it."""
    times: dict[str, list[list[float]]] = {name: [] for name in runs}
    for i in range(ROUNDS):
        for name, fn in (list(runs.items()) if i % 2 else list(runs.items())[::-1]):
            time.sleep(SETTLE_S)
            for _ in range(WARM_RUNS):  # caches and clocks back after the pause, not timed
                fn()
            times[name].append([])
            for _ in range(block):
                start = time.perf_counter()
                fn()
                times[name][-1].append(time.perf_counter() - start)
    return times


if __name__ == "__main__":
    main()
