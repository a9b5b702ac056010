"""Jupyter/IPython integration: the ``%hermes`` / ``%%hermes`` magics and rich tables.

``%load_ext hermes_nb`` registers the magics; nothing here is imported by ``import hermes_nb``,
so IPython stays optional.
"""

from __future__ import annotations

from hermes_nb.notebook.reprs import DeviceList, LoadTable, NamedPlans, RunSummary, device_table


def load_ipython_extension(ip: object) -> None:
    from hermes_nb.notebook.magic import load_ipython_extension as _load

    _load(ip)


__all__ = ["DeviceList", "LoadTable", "NamedPlans", "RunSummary", "device_table",
           "load_ipython_extension"]
