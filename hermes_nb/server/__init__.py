"""The Jupyter server extension behind the Hermes JupyterLab extension.

Authenticated JSON endpoints under ``<base_url>/hermes/api/``:

- ``devices``: the devices Hermes finds on the server's machine;
- ``history``: what the scheduler has measured there (per kernel signature and device: runs and
  median time, from the shared SQLite history), and each device's measured host link.

Enabled by the ``jupyter_server_config.d/hermes_nb.json`` file the package installs, or with
``jupyter server --ServerApp.jpserver_extensions="{'hermes_nb.server': True}"``.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.server.handlers import handlers


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "hermes_nb.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from jupyter_server.utils import url_path_join

    base = url_path_join(serverapp.web_app.settings["base_url"], "hermes", "api")
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, path), handler)
                                           for path, handler in handlers()])
    serverapp.log.info("hermes_nb: serving %s", base)
