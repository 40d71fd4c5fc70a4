"""What the app holds between requests: settings, metrics, and the services once they are up.

Services are built in the background at start-up (loading the model takes
seconds), so ``/health`` answers at once and ``/health/ready`` says 503 until
they are ready; a request that needs them before then gets 503 ``NOT_READY``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from ragd.bootstrap import Services
from ragd.errors import NotReady
from ragd.observe.metrics import Metrics
from ragd.settings import Settings

log = logging.getLogger(__name__)

ServicesFactory = Callable[[Settings, Metrics], AbstractAsyncContextManager[Services]]


@dataclass(slots=True)
class AppState:
    settings: Settings
    metrics: Metrics
    services: Services | None = None
    startup_error: BaseException | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    #: called once when start-up fails for good (``ragd serve`` stops the server and exits non-zero)
    on_fatal: Callable[[BaseException], None] | None = None
    #: why ragd is not ready although its services are up (``ragd proxy``: its first sync), or None
    pending: Callable[[], str | None] | None = None
    #: called once the services are up, the index open (``ragd serve`` records its address then),
    #: and ``on_stopping`` once a stop begins, before the index is closed
    on_ready: Callable[[], None] | None = None
    on_stopping: Callable[[], None] | None = None

    def ready_services(self) -> Services:
        if self.services is None:
            if self.startup_error is not None:
                raise NotReady(f"ragd failed to start: {self.startup_error}")
            raise NotReady("ragd is still starting (loading the model, opening the index)")
        return self.services

    def start(self, factory: ServicesFactory) -> None:
        self._task = asyncio.create_task(self._hold(factory), name="ragd-services")

    async def _hold(self, factory: ServicesFactory) -> None:
        try:
            async with factory(self.settings, self.metrics) as services:
                self.services = services
                waiting = self.pending() if self.pending is not None else None
                if waiting is None:
                    log.info("ragd is ready")
                else:
                    log.info("ragd is up, not ready yet: %s", waiting)
                if self.on_ready is not None:
                    self.on_ready()
                try:
                    await self._stop.wait()
                finally:
                    if self.on_stopping is not None:
                        self.on_stopping()
        except Exception as exc:
            self.startup_error = exc
            log.error("ragd failed to start: %s", exc, exc_info=exc)
            if self.on_fatal is not None:
                self.on_fatal(exc)
        finally:
            self.services = None

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def wait_ready(self, timeout_s: float) -> Services:
        """For tests and the CLI: block until the services are up (or failed)."""
        async with asyncio.timeout(timeout_s):
            while self.services is None and self.startup_error is None:
                await asyncio.sleep(0.02)
        return self.ready_services()
