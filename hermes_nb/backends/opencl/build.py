"""Building an OpenCL program from source with only the options Hermes asks for.

``pyopencl.Program.build`` adds ``-I <site-packages>/pyopencl/cl`` to every build. PoCL
keys its program cache by the build options as well as the source, so that path, which
differs in every virtual environment, made each new environment rebuild every kernel
(each CI clone, each user's new venv). Hermes sources include none of PyOpenCL's
headers, so they are built through PyOpenCL's one-argument ``Program`` form, which wraps
a program built here; errors and ``CompilerWarning`` come from PyOpenCL as before.
"""

from __future__ import annotations

from typing import Any


def build_program(cl: Any, context: Any, source: str, options: str = "") -> Any:
    """``source`` built for every device of ``context`` with exactly ``options``.

    A failed build raises ``pyopencl.RuntimeError`` holding each device's build log."""
    program = cl._cl._Program(context, source)  # wrapped below: the documented form
    program.build(options.encode(), None)
    return cl.Program(program)
