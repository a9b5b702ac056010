"""The ``binder`` marker: tests that build the Binder environment (minutes, needs PyPI)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "binder: builds a fresh virtual environment from binder/ (needs PyPI, takes minutes); "
        "deselect with -m 'not binder'",
    )
