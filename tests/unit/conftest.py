"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def shell() -> Iterator[object]:
    """A fresh IPython shell with Hermes and its magics loaded."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_cell("import hermes_nb as hm\n%load_ext hermes_nb", store_history=False)
    try:
        yield ip
    finally:
        InteractiveShell.clear_instance()  # the next test gets a fresh namespace
