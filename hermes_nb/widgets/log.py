"""The log view: Hermes' records as a table with device, level, kernel and category filters.

``hm.logs().view()``, ``profile.log.view()`` and ``%hermes log`` show it. It is plain
ipywidgets (dropdowns over an HTML table, like the pipeline builder), so it needs no
BokehJS and its HTML output stays readable in a saved notebook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w

from hermes_nb.logrecords import CATEGORIES, Record, Records, html_table, records

ANY = "any"
LEVELS = ("debug", "info", "warning", "error")


def _choices(values: Sequence[str]) -> list[str]:
    return [ANY, *sorted({v for v in values if v})]


class LogView(w.VBox):
    """A filterable table of log records; ``source`` gives them anew on :meth:`refresh`
    (the process's recent records when none are given)."""

    def __init__(self, shown: Sequence[Record] | None = None,
                 source: Callable[[], Sequence[Record]] | None = None, *,
                 device: str | None = None, level: str | None = None,
                 kernel: str | None = None, category: str | None = None) -> None:
        self._source = source if source is not None else (
            (lambda: shown) if shown is not None else records)
        self._all: Records = Records(self._source())
        self.device = w.Dropdown(description="device", layout=w.Layout(width="220px"))
        self.level = w.Dropdown(description="level", options=[ANY, *LEVELS],
                                layout=w.Layout(width="170px"))
        self.kernel = w.Dropdown(description="kernel", layout=w.Layout(width="260px"))
        self.category = w.Dropdown(description="category",
                                   options=[ANY, *CATEGORIES], layout=w.Layout(width="200px"))
        self.refresh_button = w.Button(description="refresh", icon="refresh",
                                       layout=w.Layout(width="100px"))
        self.table = w.HTML()
        self._fill_choices()
        for control, value in ((self.device, device), (self.level, level),
                               (self.kernel, kernel), (self.category, category)):
            if value:
                if value not in control.options:
                    control.options = [*control.options, value]
                control.value = value
            control.observe(lambda _change: self._draw(), names="value")
        self.refresh_button.on_click(lambda _button: self.refresh())
        super().__init__([w.HBox([self.device, self.level, self.kernel, self.category,
                                  self.refresh_button]), self.table])
        self.add_class("hermes-log-view")
        self._draw()

    def _fill_choices(self) -> None:
        for control, values in ((self.device, [r.device for r in self._all]),
                                (self.kernel, [r.kernel for r in self._all])):
            keep = control.value
            control.options = _choices(values)
            control.value = keep if keep in control.options else ANY

    def filtered(self) -> Records:
        """The records the filters let through."""
        def pick(control: w.Dropdown) -> str | None:
            return None if control.value in (ANY, None) else control.value

        return self._all.filter(device=pick(self.device), level=pick(self.level),
                                kernel=pick(self.kernel), category=pick(self.category))

    def _draw(self) -> None:
        shown = self.filtered()
        self.table.value = html_table(shown) if shown else "<i>no records</i>"

    def refresh(self) -> None:
        """Read the records again (new ones since the view was made appear)."""
        self._all = Records(self._source())
        self._fill_choices()
        self._draw()

    @property
    def summary(self) -> str:
        return f"Log: {len(self.filtered())} of {len(self._all)} record(s)"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict):  # a saved notebook without its kernel shows the table
            data.setdefault("text/plain", self.summary)
            data.setdefault("text/html", html_table(self.filtered()))
        return bundle


def log_view(device: str | None = None, level: str | None = None, kernel: str | None = None,
             category: str | None = None) -> LogView:
    """The process's recent records, filtered to start with (``%hermes log``)."""
    return LogView(device=device, level=level, kernel=kernel, category=category)
