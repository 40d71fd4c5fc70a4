"""Wiring of ``ragd proxy``: the services of ``ragd serve`` plus one folder mirrored into one collection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from ragd.bootstrap import Services, serve_services
from ragd.bootstrap.knowledge import _watch
from ragd.ingest.mirror import FolderMirror
from ragd.observe.metrics import Metrics
from ragd.settings import Settings


@dataclass(slots=True)
class FolderProxy:
    """The folder ``ragd proxy`` serves and its collection; ``mirror`` is set while services are up."""

    folder: Path
    collection: str
    ignore: tuple[str, ...] = ()
    mirror: FolderMirror | None = None


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
            proxy.mirror = mirror
            try:
                yield services
            finally:
                proxy.mirror = None
                stop.set()
                task.cancel()  # a sync under way stops at once: a file's old version stays whole
                await asyncio.gather(task, return_exceptions=True)

    return open_proxy
