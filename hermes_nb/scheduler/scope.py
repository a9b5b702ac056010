"""The placement policy in force: its names and the scope that chooses one.

It lives with the scheduler, which reads it on every decision; ``hm.policy`` and
``hm.current_policy`` (``hermes_nb.context``) re-export it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

POLICIES = ("auto", "fastest", "round_robin", "cpu")

_policy: ContextVar[str] = ContextVar("hermes_policy", default="auto")


def check_policy(name: str) -> str:
    """``name`` if it is a policy, else ``ValueError`` naming the choices."""
    if name not in POLICIES:
        raise ValueError(f"policy: unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
    return name


@contextmanager
def policy(name: str) -> Iterator[str]:
    """Choose how unpinned kernels are placed inside the block."""
    token = _policy.set(check_policy(name))
    try:
        yield name
    finally:
        _policy.reset(token)


def current_policy() -> str:
    return _policy.get()
