"""The user-facing layer: lazy ``Tensor``, the array API's functions, image ops, ``explain()``.

Every function here only builds IR nodes (``hermes_nb.api.graph.make_node``); nothing runs
until ``compute``/``numpy()``, which hand the nodes to :mod:`hermes_nb.runtime`."""

from hermes_nb.api import methods as _methods  # noqa: F401  (installs Tensor's operators)
