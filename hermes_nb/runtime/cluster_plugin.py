"""The worker plugin that publishes a worker's devices (imported only where
``distributed`` is: a client, a worker)."""

from __future__ import annotations

import asyncio
from typing import Any

from distributed import WorkerPlugin

from hermes_nb.runtime.cluster_devices import PLUGIN_NAME, inventory, publish, resources_of


class HermesDevices(WorkerPlugin):
    """Discovers the worker's devices and publishes them as worker resources and as
    metadata (``cluster_devices.published``)."""

    name = PLUGIN_NAME

    async def setup(self, worker: Any) -> None:
        # discovery initialises drivers (seconds for OpenCL): not on the worker's event loop
        entries = await asyncio.get_running_loop().run_in_executor(None, inventory, worker.address)
        publish(worker.address, entries)
        await worker.set_resources(**resources_of(entries, worker.state.nthreads))
