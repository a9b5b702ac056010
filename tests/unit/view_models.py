"""Reading the Bokeh models a notebook view builds, shared by the view tests."""

from __future__ import annotations

from bokeh.models import ColumnDataSource


def find_source(model, name: str) -> ColumnDataSource:
    """The data source called ``name`` in ``model``; fails the test when there is none."""
    found = model.select_one({"name": name, "type": ColumnDataSource})
    assert isinstance(found, ColumnDataSource), f"no data source named {name!r}"
    return found
