"""The Jupyter server extension behind the Hermes JupyterLab extension.

Authenticated JSON endpoints under ``<base_url>/hermes/api/``:

- ``devices``: the devices Hermes finds on the server's machine;
- ``history``: what the scheduler has measured there (per kernel signature and device: runs and
  median time, from the shared SQLite history), and each device's measured host link;
- ``load``: each device's busy % over the last seconds and its memory, from the runs every
  Hermes process on the machine records in that history (what the lab panel polls).

and, under ``<base_url>/hermes/bokeh/``, the installed ``bokeh`` package's BokehJS
(``js/bokeh.min.js`` and its widgets, tables and WebGL parts), which the lab extension puts
into every page before any notebook opens: the views render after a reload, in a new tab and
from a saved notebook without a kernel. Kernels the server starts inherit
``HERMES_NB_BOKEHJS_URL`` (that folder's URL), which tells the views that the page has
BokehJS already, and where their static HTML fallback loads it from.

Enabled by the ``jupyter_server_config.d/hermes_nb.json`` file the package installs, or with
``jupyter server --ServerApp.jpserver_extensions="{'hermes_nb.server': True}"``.
"""

from __future__ import annotations

import os
from typing import Any

from hermes_nb.server.handlers import handlers, static_handlers

#: set for the kernels this server starts: the URL path BokehJS is served from
BOKEHJS_ENV = "HERMES_NB_BOKEHJS_URL"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "hermes_nb.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    base_url = serverapp.web_app.settings["base_url"]
    api = url_path_join(base_url, "hermes", "api")
    bokeh = url_path_join(base_url, "hermes", "bokeh")
    routes: list[tuple[Any, ...]] = [(url_path_join(api, path), handler) for path, handler in handlers()]
    routes += [(url_path_join(bokeh, path), handler, kwargs) for path, handler, kwargs in static_handlers()]
    serverapp.web_app.add_handlers(".*$", routes)
    # kernels are started with a copy of the server's environment
    os.environ[BOKEHJS_ENV] = bokeh + "/"
    serverapp.log.info("hermes_nb: serving %s and BokehJS under %s", api, bokeh)
