"""Thin request handlers of the server extension, every one authenticated and authorised;
what they answer comes from ``manager``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from tornado import web

from hermes_nb.server.manager import (
    LOG_LIMIT,
    bokehjs_root,
    check_log_query,
    device_rows,
    history_summary,
    live_load,
    log_records,
)

#: the resource name Jupyter's authorizer is asked about
AUTH_RESOURCE = "hermes"
#: the BokehJS files the lab extension loads, by their path under Bokeh's static folder
BOKEHJS_PATH = r"(js/bokeh(?:-[a-z]+)?\.min\.js)"


class _Handler(APIHandler):
    auth_resource = AUTH_RESOURCE

    async def _reply(self, compute: Any) -> None:
        # device discovery and SQLite reads block: keep them off the server's event loop
        try:
            body = await asyncio.get_running_loop().run_in_executor(None, compute)
        except Exception as exc:  # the client shows the message; the server keeps serving
            raise web.HTTPError(500, reason=f"hermes: {type(exc).__name__}: {exc}") from exc
        self.finish(json.dumps(body))


class DevicesHandler(_Handler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self._reply(lambda: {"devices": device_rows()})


class HistoryHandler(_Handler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self._reply(history_summary)


class LoadHandler(_Handler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self._reply(live_load)


class LogsHandler(_Handler):
    """``logs?since=&level=&device=&kernel=&limit=``: the stored log records, newest first."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        args = {name: self.get_query_argument(name, None) or None
                for name in ("level", "device", "kernel")}
        try:
            since = self.get_query_argument("since", None)
            args["since"] = float(since) if since else None
            args["limit"] = int(self.get_query_argument("limit", None) or LOG_LIMIT)
            check_log_query(args["level"], args["limit"])
        except ValueError as exc:
            raise web.HTTPError(400, reason=f"hermes logs: {exc}") from exc
        notebooks = await self._notebooks()
        await self._reply(lambda: log_records(**args, notebooks=notebooks))

    async def _notebooks(self) -> dict[str, str]:
        """Kernel id -> the path of its notebook, from the server's sessions."""
        sessions = self.settings.get("session_manager")
        if sessions is None:
            return {}
        try:
            found = await sessions.list_sessions()
        except Exception:  # a source shown as a kernel id is no reason to fail
            return {}
        return {s["kernel"]["id"]: s.get("path", "") for s in found if s.get("kernel")}


class BokehJSHandler(JupyterHandler, web.StaticFileHandler):
    """BokehJS from the installed ``bokeh`` package (the version the kernels' views are made
    with), for the lab extension to put in the page: the views never need a CDN."""

    auth_resource = AUTH_RESOURCE

    @web.authenticated
    @authorized
    def get(self, path: str, include_body: bool = True) -> Any:  # type: ignore[override]
        return web.StaticFileHandler.get(self, path, include_body)

    @web.authenticated
    @authorized
    def head(self, path: str) -> Any:  # type: ignore[override]
        return web.StaticFileHandler.get(self, path, include_body=False)


def handlers() -> list[tuple[str, type[APIHandler]]]:
    """The JSON endpoints, under ``<base_url>/hermes/api/``."""
    return [("devices", DevicesHandler), ("history", HistoryHandler), ("load", LoadHandler),
            ("logs", LogsHandler)]


def static_handlers() -> list[tuple[str, type[web.RequestHandler], dict[str, Any]]]:
    """The files served under ``<base_url>/hermes/bokeh/``."""
    return [(BOKEHJS_PATH, BokehJSHandler, {"path": str(bokehjs_root())})]
