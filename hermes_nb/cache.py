"""Where Hermes keeps files between processes: generated kernels, failed sources, history."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``$HERMES_NB_CACHE_DIR`` or the user cache directory (platformdirs), joined with ``parts``."""
    root = os.environ.get("HERMES_NB_CACHE_DIR")
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("hermes_nb")
    return Path(root).joinpath(*parts)


def save_source(source: str, suffix: str, kind: str = "failed") -> Path:
    """Write generated source to a file named by its hash, so an error can point at it."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    directory = cache_dir(kind)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{digest}{suffix}"
    path.write_text(source)
    return path
