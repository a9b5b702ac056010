"""Thin request handlers of the server extension, every one authenticated and authorised;
what they answer comes from ``manager``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from hermes_nb.server.manager import device_rows, history_summary

#: the resource name Jupyter's authorizer is asked about
AUTH_RESOURCE = "hermes"
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


def handlers() -> list[tuple[str, type[APIHandler]]]:
    return [("devices", DevicesHandler), ("history", HistoryHandler)]
