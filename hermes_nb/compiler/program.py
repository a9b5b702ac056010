"""Moved to :mod:`hermes_nb.ir.program` (kept until every importer follows)."""

from hermes_nb.ir.program import *  # noqa: F403
from hermes_nb.ir.program import Instr, Program, single_op  # noqa: F401
