"""A planned graph run again on new inputs, kernel after kernel, with nothing re-planned.

A compute of a lazy graph builds its nodes, optimises them (from a template when the graph
was seen before), places every kernel, makes a Dask graph and records each run: a few
milliseconds before and between kernels, however small they are. An inference session
(``hm.onnx``'s) runs one graph many times on inputs of the same shapes: a :class:`Replay`
keeps what was decided once (the fused kernels, where each runs, constants already on their
devices). A run uploads the inputs (and the arrays of borrowed constants, which the caller
may change between runs, as a compute reads them, unless the graph's builder owns them),
launches the kernels in order on the calling thread through each device's ``execute`` (the
kernels a compute runs, on the same devices, each kernel's launcher made once with
``Device.launcher``; a replay on one device is handed to it once, as one unit of its load)
and brings the outputs back. Runs are not profiled or recorded for
the scheduler, and nothing is re-placed: the placement is the one the replay was made with.
The values that change from run to run (the inputs, the borrowed constants read anew) are
``VARIABLE`` constants in the planned graph: the compiler folds, merges and writes into
kernels only what is the same at every run.

Graphs that a replay cannot run as they were planned give no replay (:func:`replay_of`
returns None): split (co-executed) kernels, values held on a cluster's workers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_nb.backends import Device, get_device
from hermes_nb.compiler.rewrite import rebuild
from hermes_nb.context import current_options
from hermes_nb.ir.node import VARIABLE, Node, OpSpec, is_borrowed, toposort
from hermes_nb.runtime import fork, graph_cache
from hermes_nb.runtime.cluster_inventory import active_client
from hermes_nb.runtime.lower import check_integer_powers, has_integer_pow, host_source_value
from hermes_nb.runtime.placement import place
from hermes_nb.runtime.remote import is_remote
from hermes_nb.runtime.resident import Resident
from hermes_nb.runtime.targets import compile_target


@dataclass(frozen=True)
class _Step:
    device: Device
    spec: OpSpec | None  # the kernel; None for a value that is uploaded
    launch: Any = None  # the kernel's launcher (Device.launcher): a function of its inputs
    inputs: tuple[int, ...] = ()  # the steps whose values the kernel reads
    value: Any = None  # a constant's buffer, uploaded once
    array: np.ndarray | None = None  # a borrowed constant's array, read at every run
    feed: int = -1  # the input it takes, or -1
    checked: bool = False  # an integer power: negative exponents raise, as in a compute
    sources: tuple[str, ...] = ()  # the device each input is computed on
    moves: bool = False  # some input is computed on another device: copied here first
    #: the launcher without its own ``np.errstate`` (a NumPy op's), for a run under one
    bare: Any = None


@dataclass(frozen=True)
class Replay:
    """The kernels of one planned graph, in order, each on its device."""

    steps: tuple[_Step, ...]
    outputs: tuple[int, ...]  # the steps whose values are the results
    shapes: tuple[tuple[tuple[int, ...], np.dtype], ...]  # each input's shape and dtype
    #: ``fork.forks_seen`` when the launchers were made: a forked child decides anew (its
    #: ``cpu:0`` may no longer run parallel Numba kernels)
    forks: int = 0

    @property
    def kernels(self) -> int:
        return sum(s.spec is not None for s in self.steps)

    def run(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The outputs for ``arrays`` (shaped as the inputs the replay was made with), as
        NumPy arrays of their own."""
        for i, ((shape, dtype), a) in enumerate(zip(self.shapes, arrays)):
            if a.shape != shape or a.dtype != dtype:
                raise ValueError(f"replay input {i}: expected {dtype.name}{list(shape)}, got "
                                 f"{a.dtype.name}{list(a.shape)}")
        return self.run_planned(arrays)

    def run_planned(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """``run`` for NumPy arrays of the shapes and dtypes the replay was made with,
        which the caller has matched (an inference session, by its key)."""
        device = self._only_device
        if device is not None:  # one hand-over to the device for the whole run, not per step
            return device.run(self._quiet_run, arrays)
        return self._run(arrays, _on_its_device)

    # NaN/Inf/overflow follow IEEE/NumPy, silently, as each kernel's launch would have it:
    # set once for a run on one device (on its thread), whose steps launch without their own
    @np.errstate(all="ignore")
    def _quiet_run(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        direct = self._direct_steps if self.forks == fork.forks_seen else None
        if direct is None:
            return self._run(arrays, _direct)
        return self._direct_run(arrays, *direct)

    @functools.cached_property
    def _direct_steps(self) -> tuple[list[Any], tuple[tuple[int, Any], ...],
                                     tuple[tuple[int, Any, tuple[int, ...]], ...]] | None:
        """For a run on one device where no kernel checks its powers or copies an input
        from another device: every step's value as far as it is known before the run (a
        constant's buffer), the steps that upload (their slot, and the input they take or
        the borrowed array they read) and the kernels (slot, launcher without errstate,
        input slots), in order. None where a run takes ``_value``'s way."""
        if any(s.checked or s.moves for s in self.steps):
            return None
        known = [s.value if s.spec is None else None for s in self.steps]
        uploads = tuple((i, s.feed if s.feed >= 0 else s.array) for i, s in enumerate(self.steps)
                        if s.spec is None and s.value is None)
        kernels = tuple((i, s.bare if s.bare is not None else s.launch, s.inputs)
                        for i, s in enumerate(self.steps) if s.spec is not None)
        return known, uploads, kernels

    def _direct_run(self, arrays: Sequence[np.ndarray], known: list[Any],
                    uploads: tuple[tuple[int, Any], ...],
                    kernels: tuple[tuple[int, Any, tuple[int, ...]], ...]) -> list[np.ndarray]:
        """``_run`` on this thread, already the device's, with nothing to decide per step:
        a replay of small kernels spends as long in its loop as in some of them."""
        values = known.copy()
        upload = self.steps[0].device.from_host
        for i, source in uploads:
            values[i] = upload(arrays[source] if type(source) is int else source)
        for i, launch, inputs in kernels:
            values[i] = launch([values[j] for j in inputs])
        return self._outputs_of(values, arrays, _direct)

    @functools.cached_property
    def _only_device(self) -> Device | None:
        """The device every step runs on, or None where they are several."""
        devices = {s.device for s in self.steps}
        return next(iter(devices)) if len(devices) == 1 else None

    def _run(self, arrays: Sequence[np.ndarray], call: Any) -> list[np.ndarray]:
        values: list[Any] = []  # each step's buffer, on its step's device
        made_here = self.forks == fork.forks_seen
        for step in self.steps:
            values.append(_value(step, values, arrays, call, made_here))
        return self._outputs_of(values, arrays, call)

    def _outputs_of(self, values: list[Any], arrays: Sequence[np.ndarray], call: Any
                    ) -> list[np.ndarray]:
        """The output steps' values on the host, none a view of an input."""
        out = []
        for i in self.outputs:
            device = self.steps[i].device
            host = call(device, device.to_host, values[i])
            if any(np.may_share_memory(host, a) for a in arrays):  # a view of an input
                host = host.copy()
            out.append(host)
        return out


def _direct(device: Device, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` where the run is on ``device`` already."""
    return fn(*args)


def _on_its_device(device: Device, fn: Any, *args: Any) -> Any:
    return device.run(fn, *args)


def _value(step: _Step, values: list[Any], arrays: Sequence[np.ndarray], call: Any,
           made_here: bool) -> Any:
    device, spec = step.device, step.spec
    if spec is None:
        if step.value is not None:
            return step.value
        return call(device, device.from_host,
                    arrays[step.feed] if step.feed >= 0 else step.array)
    buffers = [values[i] for i in step.inputs]
    if step.checked:
        check_integer_powers(spec, tuple(map(Resident, step.sources, buffers)))
    if step.moves:
        here = device.id
        buffers = [b if d == here else Resident(d, b).on(here)
                   for d, b in zip(step.sources, buffers)]
    if made_here:
        if call is _direct and step.bare is not None:  # under the run's errstate
            return step.bare(buffers)
        return call(device, step.launch, buffers)
    return call(device, device.execute, spec, buffers)


def replay_of(outputs: Sequence[Node], inputs: Sequence[Node], *, owned: bool = False
              ) -> Replay | None:
    """A replay of the graph behind ``outputs`` whose ``inputs`` (leaves of the graph, such
    as borrowed constants) take new arrays at each run; placed now, as a compute would
    place it. The graph's other borrowed constants are read again at each run, unless
    ``owned``: their arrays are the graph builder's own, which nothing changes (a model's
    weights and what was derived from them), uploaded once. None where the graph cannot
    be replayed as planned."""
    if active_client() is not None:
        return None
    outputs, inputs = _with_variables(outputs, inputs, owned)
    optimized = graph_cache.optimized(outputs, compile_target(), current_options())
    placed = place(optimized)
    feeds = {id(n): i for i, n in enumerate(inputs)}
    slots: dict[int, int] = {}
    steps: list[_Step] = []
    for node in toposort(optimized):
        where = placed[id(node)]
        if where.tiles or (node.op == "buffer" and is_remote(node.attrs["handle"])):
            return None
        device = get_device(where.device)
        if node.op == "buffer":  # a computed tensor's value, where it lives
            step = _Step(device, None, value=node.attrs["handle"].on(device.id))
        elif id(node) in feeds:
            step = _Step(device, None, feed=feeds[id(node)])
        elif is_borrowed(node) and not owned:
            step = _Step(device, None, array=node.attrs["value"])  # the caller may change it
        elif node.op in ("constant", "random"):
            spec = OpSpec.of(node, device.id)
            step = _Step(device, None, value=device.run(device.from_host, host_source_value(spec)))
        else:
            spec = OpSpec.of(node, device.id)
            ins = tuple(slots[id(i)] for i in node.inputs)
            sources = tuple(steps[i].device.id for i in ins)
            launch = device.launcher(spec)
            step = _Step(device, spec, launch, ins, checked=has_integer_pow(spec),
                         sources=sources, moves=any(d != device.id for d in sources),
                         bare=getattr(launch, "unguarded", None))
        slots[id(node)] = len(steps)
        steps.append(step)
    return Replay(tuple(steps), tuple(slots[id(n)] for n in optimized),
                  tuple((tuple(n.shape), n.dtype) for n in inputs), fork.forks_seen)


def _with_variables(outputs: Sequence[Node], inputs: Sequence[Node], owned: bool
                    ) -> tuple[list[Node], list[Node]]:
    """The graph with the values that change from run to run (``inputs``, and the borrowed
    constants unless ``owned``) as ``VARIABLE`` constants, and those inputs: a compute
    folds small constants and merges equal ones by the values it reads, which would fix a
    replay's first values for good (an input of a few elements folded into its result, two
    inputs equal at the first run made one)."""
    variable = {id(n) for n in inputs}

    def mark(node: Node, new_inputs: tuple[Node, ...]) -> Node | None:
        if node.op != "constant" or not (id(node) in variable or
                                         (is_borrowed(node) and not owned)):
            return None
        return Node(node.op, (), node.shape, node.dtype, {**node.attrs, VARIABLE: True},
                    node.device)

    mapped: dict[int, Node] = {}
    marked = rebuild(list(outputs), mark, mapped)
    # an input no output reads stays as it is: no step takes it
    return marked, [mapped.get(id(n), n) for n in inputs]
