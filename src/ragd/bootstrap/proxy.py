"""Wiring of ``ragd proxy``: the services of ``ragd serve`` plus one folder mirrored into one collection."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from ragd.bootstrap import Services, serve_services
from ragd.bootstrap.knowledge import _watch
from ragd.ingest.mirror import FolderMirror
from ragd.observe.metrics import Metrics
from ragd.settings import Settings

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FolderProxy:
    """The folder ``ragd proxy`` serves and its collection; ``mirror`` is set while services are up."""

    folder: Path
    collection: str
    ignore: tuple[str, ...] = ()
    mirror: FolderMirror | None = None

    def pending(self) -> str | None:
        """Why the proxy is not ready yet: until its first sync has ended, it is syncing."""
        if self.mirror is None or not self.mirror.first_sync.is_set():
            return "syncing: the folder's first sync is under way"
        return None


def proxy_services(
    proxy: FolderProxy,
) -> Callable[[Settings, Metrics], AbstractAsyncContextManager[Services]]:
    """A services factory for ``create_app``: ``ragd serve``'s, with the folder synced at start and
    after every burst of changes (watched with ``watchfiles``) while they are up."""

    @asynccontextmanager
    async def open_proxy(settings: Settings, metrics: Metrics) -> AsyncIterator[Services]:
        async with serve_services(settings, metrics) as services:
            mirror = FolderMirror(
                proxy.folder,
                proxy.collection,
                ingestor=services.ingestor,
                store=services.store,
                watch=_watch if settings.worker.watch else None,
                ignore=proxy.ignore,
                concurrency=settings.ingest_concurrency,
                debounce_ms=settings.worker.debounce_ms,
            )
            stop = asyncio.Event()
            task = asyncio.create_task(mirror.run(stop), name="ragd-folder-mirror")
            told = asyncio.create_task(_ready_once_synced(mirror), name="ragd-folder-ready")
            proxy.mirror = mirror
            try:
                yield services
            finally:
                proxy.mirror = None
                stop.set()
                told.cancel()
                task.cancel()  # a sync under way stops at once: a file's old version stays whole
                await asyncio.gather(task, told, return_exceptions=True)

    return open_proxy


async def _ready_once_synced(mirror: FolderMirror) -> None:
    await mirror.first_sync.wait()
    log.info("ragd is ready: the folder's first sync is done")
