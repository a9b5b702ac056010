"""Moved to :mod:`hermes_nb.ir.stencil` (kept until every importer follows)."""

from hermes_nb.ir.stencil import ConvStage, PointStage, StencilProgram  # noqa: F401
