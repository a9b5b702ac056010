"""Each launch geometry PoCL compiles apart goes through the isolated worker first: local
size, a global offset, and a small or large grid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_nb.backends.opencl.guard import Guard, GuardedKernel, default_local_size, small_grid


class _Event:
    def wait(self) -> None:
        pass


class _RecordingGuard(Guard):
    """A guard whose worker launches are recorded, not run."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.probes: list[tuple[int, ...]] = []
        self.locals: list[tuple[int, ...]] = []

    def launch(self, source: str, name: str, global_size: Any, local_size: Any,
               *rest: Any) -> None:
        self.probes.append(tuple(global_size))
        self.locals.append(tuple(local_size))


def _recording_kernel(launched: list[tuple[Any, Any]]) -> Any:
    """A kernel that records each launch's (global size, local size)."""
    def kernel(queue: Any, global_size: Any, local_size: Any, *args: Any,
               global_offset: Any = None) -> _Event:
        launched.append((tuple(global_size), tuple(local_size)))
        return _Event()

    kernel.function_name = "k"  # type: ignore[attr-defined]
    return kernel


def test_a_large_grid_after_a_small_one_is_probed_again(tmp_path: Path) -> None:
    guard = _RecordingGuard((0, 0, "test"), "fp", tmp_path, "opencl:9")
    launched: list[tuple[Any, Any]] = []
    guarded = GuardedKernel(_recording_kernel(launched), guard, "src", lambda: tmp_path / "k.cl")
    sizes = [(256,), (512,), (1 << 17,), (1 << 18,), (128,)]
    for size in sizes:
        guarded(None, size, (64,))
        guarded(None, size, (64,), global_offset=(64,))
    assert [g for g, _ in launched] == [s for s in sizes for _ in (0, 1)]
    # one probe per variant PoCL builds: small and large grid, each with and without offset
    assert guard.probes == [(256,), (256,), (1 << 17,), (1 << 17,)]
    # PoCL's CPU drivers: small below USHRT_MAX (its width < 65535), so 65535 itself is large
    assert small_grid((65534, 3)) and not small_grid((65535, 1)) and not small_grid((3, 65535))


def test_an_open_local_size_is_chosen_here_and_probed_as_launched(tmp_path: Path) -> None:
    guard = _RecordingGuard((0, 0, "test"), "fp", tmp_path, "opencl:9")
    launched: list[tuple[Any, Any]] = []
    guarded = GuardedKernel(_recording_kernel(launched), guard, "src", lambda: tmp_path / "k.cl")
    for size in ((323,), (1024,), (323,), (7, 5)):
        guarded(None, size, None)
    # the driver never picks a local size (it would compile one variant per global size)
    assert [loc for _, loc in launched] == [(19,), (256,), (19,), (7, 1)]
    assert guard.locals == [(19,), (256,), (7, 1)]
    assert default_local_size((997,)) == (1,) and default_local_size((0,)) == (1,)
