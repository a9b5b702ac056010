"""The builder's pipeline as a self-contained Python snippet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_nb.widgets.builder_catalogue import stage_code


def pipeline_code(stages: Sequence[tuple[str, dict[str, Any]] | None], device: str = "auto",
                  policy: str = "auto") -> str:
    """Code that assigns the pipeline to ``pipeline``; ``None`` marks a stage with no code.

    An empty list gives ``hm.compose()``, the identity pipeline.
    """
    missing = [i + 1 for i, s in enumerate(stages) if s is None]
    if missing:
        raise ValueError(
            f"to_code: stage(s) {missing} are custom Stage objects outside the builder's "
            "catalogue, so they cannot be written as code; remove them or rebuild them in code"
        )
    lines = ["import hermes_nb as hm", ""]
    body = [_wrap(f"    {stage_code(*s)},") for s in stages if s is not None]
    lines += ["pipeline = hm.compose(", *body, ")"] if body else ["pipeline = hm.compose()"]
    scope = [f"hm.device({device!r})"] if device != "auto" else []
    if policy != "auto":
        scope.append(f"hm.policy({policy!r})")
    run = "result = pipeline(image).numpy()"
    lines += ["", f"# with {', '.join(scope)}:  # where the preview ran", f"#     {run}"] if scope \
        else ["", f"# {run}"]
    return "\n".join(lines) + "\n"


def _wrap(line: str, width: int = 100) -> str:
    """Put a long ``hm.Stage(...)``'s lambda on its own line, under its first argument."""
    head, sep, tail = line.partition(", lambda img: ")
    if len(line) <= width or not sep:
        return line
    indent = " " * (line.index("hm.Stage(") + len("hm.Stage("))
    return f"{head},\n{indent}lambda img: {tail}"
