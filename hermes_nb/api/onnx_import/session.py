"""An inference session: a loaded model planned once per input shapes, then replayed.

``session.run(None, {"x": x})`` takes NumPy arrays and returns NumPy arrays of their own
(writable), as onnxruntime's ``InferenceSession.run`` does. The first run with new input
shapes (or dtypes) computes the model's graph as a lazy compute would (fusing, placing,
compiling, calibrating) and keeps a :class:`~hermes_nb.runtime.replay.Replay` of it; later
runs with those shapes launch the same kernels on the same devices with nothing re-planned,
which saves the milliseconds a compute spends before and between its kernels. A replay
that fails (a device lost, a driver crash) is dropped with a warning and the run computed
again the lazy way, which falls back to another device. A session's replays are not
profiled (its first run is).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from hermes_nb import context
from hermes_nb.api.creation import asarray
from hermes_nb.api.tensor import Tensor, compute
from hermes_nb.logrecords import extra
from hermes_nb.runtime.replay import Replay, replay_of

log = logging.getLogger("hermes_nb.api")
_NO_REPLAY = object()  # a graph a replay cannot run: always computed


class Session:
    """``model`` as an inference session on ``device`` (None: where the scheduler places
    each kernel, decided once per input shapes)."""

    def __init__(self, model: Any, device: str | None = None) -> None:  # an hm.onnx.Model
        self.model = model
        self.device = device
        self._replays: dict[tuple[Any, ...], Any] = {}

    def __repr__(self) -> str:
        return (f"<hm.onnx.Session {self.model.name!r} on {self.device or 'any device'}; "
                f"{len(self._replays)} planned input shape(s)>")

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]
            ) -> list[np.ndarray]:
        """The outputs named (``None``: all, in the graph's order) for the inputs in
        ``input_feed`` (name -> array), as NumPy arrays."""
        picked = None if output_names is None else self._indices(output_names)
        planned = self._planned(input_feed)
        if planned is None:  # checked against the graph's inputs
            bound = self.model._bind((), input_feed)
            arrays = [np.asarray(v.numpy() if isinstance(v, Tensor) else v)
                      for v in bound.values()]
            planned = arrays, _key(arrays)
        outputs = self._outputs(*planned)
        return outputs if picked is None else [outputs[i] for i in picked]

    def _indices(self, output_names: Sequence[str]) -> list[int]:
        """Where each named output is among the graph's."""
        outputs = self.model.outputs
        unknown = [n for n in output_names if n not in outputs]
        if unknown:
            raise ValueError(f"onnx session: the model has no output {unknown[0]!r}; its "
                             f"outputs: {', '.join(outputs)}")
        return [outputs.index(n) for n in output_names]

    def _planned(self, input_feed: Mapping[str, Any]
                 ) -> tuple[list[np.ndarray], tuple[Any, ...]] | None:
        """The feed's arrays in the graph's order and their key where it is one NumPy array
        for each input, shaped as an earlier run's (checked then), else None: a run with
        planned shapes goes straight to its replay (the checks cost a batch-8 CNN's run 2%)."""
        inputs = self.model.inputs
        if len(input_feed) != len(inputs):
            return None
        arrays = [input_feed.get(i.name) for i in inputs]
        if not all(type(a) is np.ndarray for a in arrays):
            return None
        key = _key(arrays)
        return (arrays, key) if key in self._replays else None

    def _outputs(self, arrays: list[np.ndarray], key: tuple[Any, ...]) -> list[np.ndarray]:
        replay = self._replays.get(key)
        if isinstance(replay, Replay):
            try:  # the key is the arrays' shapes and dtypes: the replay's own
                return replay.run_planned(arrays)
            except Exception as exc:  # the lazy compute below retries on another device
                log.warning("hermes: onnx session %r: a replayed run failed (%s: %s); "
                            "computing it again and planning anew", self.model.name,
                            type(exc).__name__, exc, extra=extra(category="fallback"))
                del self._replays[key]
        with context.device(self.device) if self.device is not None else nullcontext():
            inputs = [asarray(a) for a in arrays]
            outputs = self.model(*inputs)
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            results = [np.array(t.numpy(), copy=True) for t in compute(*outputs)]
            if key not in self._replays:
                # every array in the graph but the inputs is the model's own (its weights,
                # what the import derived from them): uploaded once
                made = replay_of([t.node for t in outputs], [t.node for t in inputs],
                                 owned=True)
                # a replay runs arrays of its key's shapes and dtypes unchecked: none where
                # the graph's inputs are others (an input asarray converted)
                self._replays[key] = made if made is not None and made.shapes == key \
                    else _NO_REPLAY
        return results


def _key(arrays: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """The input shapes and dtypes a replay is planned for."""
    return tuple((a.shape, a.dtype) for a in arrays)
