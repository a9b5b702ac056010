"""A tensor's value computed on the host, op by op, with NumPy and SciPy: no fusion, no
compile, no device thread.

What a result should be (tests, debugging), and an instant first answer where a compiled
kernel is still being built (the pipeline builder's preview shows it while the fused
kernels compile).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hermes_nb.ir.node import Node, OpSpec, toposort
from hermes_nb.runtime.lower import host_source_value


def _host_value(node: Node) -> Any:
    """A source node's value on the host, without going through any device's thread."""
    if node.op == "buffer":
        resident = node.attrs["handle"]
        # a cpu:0 buffer is a host array already; another device's copies back to the host
        return resident.buffer if resident.device == "cpu:0" else resident.host()
    return host_source_value(OpSpec.of(node, "cpu:0"))  # the draw the devices upload


def evaluate(node: Node) -> np.ndarray:
    """``node``'s value as a NumPy array, computed on the host op by op.

    >>> import hermes_nb as hm
    >>> evaluate((hm.arange(4) * 2 + 1).node).tolist()
    [1, 3, 5, 7]
    """
    from hermes_nb.compiler import simplify
    from hermes_nb.ir.array_ops import ArrayOps

    if not isinstance(node, Node):
        raise TypeError(f"evaluate: expected a graph Node (a tensor's .node), "
                        f"got {type(node).__name__}")
    host = ArrayOps(np, "scipy.ndimage")
    (root,) = simplify([node])
    values: dict[int, Any] = {}
    for n in toposort([root]):
        if n.op in ("buffer", "constant", "random"):
            values[id(n)] = _host_value(n)
        else:
            values[id(n)] = host.run(OpSpec.of(n, "cpu:0"), [values[id(i)] for i in n.inputs])
    return np.asarray(values[id(root)]).reshape(node.shape)
