"""What the notebook layer costs: the ``%%hermes`` magic's overhead on a cell whose kernels
are already compiled, what ``--report`` adds to it (the hotspot report made and rendered as
HTML after the cell), what counting the kernels' FLOPs and the unfused graph adds to each
run, and the live load monitor's CPU use at 2 Hz.

    python -m benchmarks.notebook [--size 1024] [--repeats 200] [--monitor-seconds 10] [--json F]

The magic is compared with the same work written without it (``hm.compute`` of the same
tensors) in one IPython shell, rounds interleaved (the order turns each round); the overhead
is the difference of medians. Outputs travel as in a notebook's kernel (IPython's display
formatter, ipykernel's display publisher, a signed message on a ZeroMQ socket). What
``--report`` adds is the median over rounds of the
difference between the report cell and the plain ``%%hermes`` cell of the same round, in wall
time and in CPU time (the process's, and the main thread's, which runs the report and is the
least noisy figure on a shared machine), as a share of the plain cell's median on the same
clock (the main thread's as a share of the wall time: it idles while the devices run); the
report's making, and the formatting and sending of the cell's output with and without it,
timed inside the cell, are printed too.
The monitor's cost is the CPU time its sampling thread used (sampling, updating the Bokeh
document and serialising the update for the comm) per second of wall time.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from typing import Any

CELL = """\
img = hm.asarray(image)
edges = pipeline(img)
total = (edges * 2.0).sum()
"""


def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    _publish_as_a_kernel(shell)
    shell.run_cell("import numpy as np\nimport hermes_nb as hm\n%load_ext hermes_nb",
                   store_history=False)
    return shell


def _publish_as_a_kernel(shell: Any) -> None:
    """Send the shell's outputs as ipykernel sends them to a notebook: formatted by IPython,
    signed and serialised by ipykernel's display publisher, written to a PUB socket (no one
    listens, so ZeroMQ drops them). What the report costs includes showing it."""
    import secrets

    import zmq
    from ipykernel.zmqshell import ZMQDisplayPublisher
    from jupyter_client.session import Session

    socket = zmq.Context.instance().socket(zmq.PUB)
    socket.bind(f"inproc://hermes-benchmark-{secrets.token_hex(4)}")
    shell.display_pub = ZMQDisplayPublisher(shell=shell, pub_socket=socket,
                                            session=Session(key=secrets.token_bytes(16)))


#: the clocks each cell is timed on, in the order of the figures a timing holds
CLOCKS = ("wall", "cpu", "thread")


def _timed(shell: Any, cell: str) -> tuple[float, float, float]:
    """The cell's wall, process CPU and main-thread CPU seconds. The young generation is
    collected first: a cell allocates fewer objects than start a collection, so none lands
    in one cell of a pair and not the other (:func:`_gc_share` counts what they cost)."""
    gc.collect(0)
    wall, cpu, thread = time.perf_counter(), time.process_time(), time.thread_time()
    assert shell.run_cell(cell, store_history=False).success
    thread, cpu = time.thread_time() - thread, time.process_time() - cpu
    return time.perf_counter() - wall, cpu, thread


def _gc_share(shell: Any, cell: str, runs: int = 20) -> dict[str, float]:
    """What the young-generation collections a report's allocations bring cost per cell:
    the container objects making and rendering one report allocates (the gen-0 count,
    collections off), over the collection threshold, times what one young collection after
    a cell takes."""
    from hermes_nb.runtime.profile import last_profile
    from hermes_nb.runtime.report import report

    took = []
    for _ in range(runs):
        assert shell.run_cell(cell, store_history=False).success
        start = time.perf_counter()
        gc.collect(0)
        took.append(time.perf_counter() - start)
    gc.disable()
    try:
        before = gc.get_count()[0]
        made = report(last_profile())
        made._repr_html_()
        objects = gc.get_count()[0] - before  # counted while the report is alive
        del made
    finally:
        gc.enable()
    collection = statistics.median(took)
    return {"report_objects": objects, "young_collection_us": collection * 1e6,
            "report_gc_us": objects / gc.get_threshold()[0] * collection * 1e6}


def _timers(inside: dict[str, list[float]]) -> tuple[Any, Any]:
    """``magic._report`` and ``magic._show`` wrapped to record the main-thread CPU each call
    takes (the report made; the cell's output formatted and sent), as the cell runs them."""
    import hermes_nb.notebook.magic as magic

    made, shown = magic._report, magic._show

    def timed_report(*args: Any) -> Any:
        start = time.thread_time()
        result = made(*args)
        inside["made"].append(time.thread_time() - start)
        return result

    def timed_show(*args: Any) -> None:
        start = time.thread_time()
        shown(*args)
        inside["shown_with" if len(args) > 1 else "shown_without"].append(
            time.thread_time() - start)

    magic._report, magic._show = timed_report, timed_show
    return made, shown


def magic_overhead(size: int, repeats: int) -> dict[str, float]:
    shell = _shell()
    shell.run_cell(
        f"image = np.random.default_rng(0).random(({size}, {size}), dtype=np.float32)\n"
        "pipeline = hm.compose(hm.gaussian_blur(kernel_size=5), hm.sobel_edge_detection())",
        store_history=False)
    plain = CELL + "img, edges, total = hm.compute(img, edges, total)\n"
    magic = "%%hermes\n" + CELL
    report = "%%hermes --report\n" + CELL
    cells = (("plain", plain), ("magic", magic), ("report", report))
    for _ in range(3):  # compile and calibrate first; the first report measures the peaks
        for _name, cell in cells:
            assert shell.run_cell(cell, store_history=False).success
    import hermes_nb.notebook.magic as magic_module

    inside: dict[str, list[float]] = {"made": [], "shown_with": [], "shown_without": []}
    made, shown = _timers(inside)
    times: dict[str, list[tuple[float, ...]]] = {name: [] for name, _ in cells}
    try:
        for i in range(repeats):
            for name, cell in (cells if i % 2 else cells[::-1]):
                times[name].append(_timed(shell, cell))
    finally:
        magic_module._report, magic_module._show = made, shown
    med = statistics.median
    figures = {f"{name}_{clock}_ms": 1e3 * med(t[c] for t in times[name])
               for name, _ in cells for c, clock in enumerate(CLOCKS)}
    plain_s, magic_s, report_s = (figures[f"{n}_wall_ms"] / 1e3 for n, _ in cells)
    result = {"plain_ms": plain_s * 1e3, "magic_ms": magic_s * 1e3,
              "overhead_ms": (magic_s - plain_s) * 1e3, "report_ms": report_s * 1e3,
              "report_overhead_ms": (report_s - magic_s) * 1e3,
              "rounds": repeats, **figures,
              **{f"report_{part}_us": 1e6 * med(t) for part, t in inside.items()}}
    for c, clock in enumerate(CLOCKS):  # the median of each round's difference
        added = med(r[c] - m[c] for r, m in zip(times["report"], times["magic"]))
        # the main thread idles while the devices run: its share is of the cell's wall time
        base = figures[f"magic_{'wall' if clock == 'thread' else clock}_ms"] / 1e3
        result[f"report_added_{clock}_us"] = added * 1e6
        result[f"report_added_{clock}_percent"] = 100 * added / base
    result["report_overhead_percent"] = result["report_added_wall_percent"]
    result.update(_gc_share(shell, magic))
    result["run_work_us"] = _run_work_cost(shell) * 1e6
    result["run_work_percent"] = 100 * result["run_work_us"] / (magic_s * 1e6)
    return result


def _run_work_cost(shell: Any, repeats: int = 200) -> float:
    """Seconds per run that counting the kernels' FLOPs and the unfused graph takes (what
    each profile holds for a report), on the cell's graph."""
    from hermes_nb.compiler import optimize
    from hermes_nb.compiler.rewrite import origin
    from hermes_nb.ir.node import toposort
    from hermes_nb.runtime.targets import compile_target
    from hermes_nb.runtime.work import run_work

    shell.run_cell(CELL, store_history=False)
    ns = shell.user_ns
    outputs = [ns["edges"].node, ns["total"].node]
    optimized = optimize(outputs, compile_target())
    members = {m for n in toposort(optimized) for m in origin(n)}
    start = time.perf_counter()
    for _ in range(repeats):
        run_work(outputs, optimized, members)
    return (time.perf_counter() - start) / repeats


def monitor_cost(seconds: float) -> dict[str, float]:
    import hermes_nb as hm

    monitor = hm.load_monitor(interval_s=0.5)
    try:
        time.sleep(1.0)  # the first update pays one-off imports
        cpu0, updates0, start = monitor.cpu_seconds, monitor.updates, time.perf_counter()
        time.sleep(seconds)
        wall = time.perf_counter() - start
        cpu, updates = monitor.cpu_seconds - cpu0, monitor.updates - updates0
    finally:
        monitor.close()
    return {"updates_per_s": updates / wall, "core_percent": 100 * cpu / wall,
            "ms_per_update": 1e3 * cpu / max(updates, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=200, help="interleaved rounds")
    parser.add_argument("--monitor-seconds", type=float, default=10.0)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args(argv)

    from benchmarks import machine

    facts = machine.facts(bandwidth=False)
    print("\n".join(machine.describe(facts)))
    magic = magic_overhead(args.size, args.repeats)
    print(f"%%hermes cell, {args.size}² blur+Sobel and a sum, kernels compiled "
          f"(medians of {args.repeats} interleaved rounds):")
    print(f"  hm.compute without the magic {magic['plain_ms']:8.2f} ms")
    print(f"  %%hermes                     {magic['magic_ms']:8.2f} ms")
    print(f"  overhead                     {magic['overhead_ms']:8.2f} ms  (target ≤ 50 ms)")
    print(f"  %%hermes --report            {magic['report_ms']:8.2f} ms; the report adds "
          "when asked (median of the rounds' differences):")
    for clock, what, of in (("wall", "wall time", "the cell's wall time"),
                            ("cpu", "process CPU", "the cell's process CPU"),
                            ("thread", "main-thread CPU", "the cell's wall time")):
        base = magic[f"magic_{'wall' if clock == 'thread' else clock}_ms"]
        print(f"    {what:<16} {magic[f'report_added_{clock}_us']:7.1f} µs  "
              f"{magic[f'report_added_{clock}_percent']:5.2f}% of {of} ({base:.2f} ms)")
    print(f"    timed inside the cell (main-thread CPU): the report made "
          f"{magic['report_made_us']:.1f} µs; the cell's one output formatted and sent "
          f"{magic['report_shown_with_us']:.1f} µs with it, {magic['report_shown_without_us']:.1f}"
          " µs without")
    print(f"    young-generation collections its {magic['report_objects']:.0f} objects bring: "
          f"{magic['report_gc_us']:.1f} µs per cell (one takes {magic['young_collection_us']:.0f}"
          " µs after a cell; the young generation is collected before each timed cell)")
    print(f"  collected for a report on every run (FLOP and unfused counts kept in the profile): "
          f"{magic['run_work_us']:.1f} µs = {magic['run_work_percent']:.2f}% of the cell's wall time "
          "(target ≤ 2%; log collection: python -m benchmarks.log_overhead)")
    monitor = monitor_cost(args.monitor_seconds)
    print(f"live load monitor over {args.monitor_seconds:g} s: {monitor['updates_per_s']:.2f} "
          f"updates/s, {monitor['core_percent']:.2f}% of one core "
          f"({monitor['ms_per_update']:.2f} ms per update; target < 3%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": facts, "magic": magic, "monitor": monitor}, f, indent=1)


if __name__ == "__main__":
    main()
