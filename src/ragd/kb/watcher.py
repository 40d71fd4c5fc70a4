"""Keeps folder sources in sync: a full sync at start, then one per burst of OS-level changes.

Every few seconds the catalog's folder sources are listed, so sources added
or removed through the API (on any replica) are picked up.  Changes only
queue SYNC jobs (folded into one already queued), so watching from several
replicas would be harmless, just wasteful: ``worker.watch`` picks who does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import suppress
from pathlib import Path

from ragd.errors import RagError
from ragd.kb.context import KbContext
from ragd.kb.sources import enqueue_sync
from ragd.kb_types import SourceKind, SourceSpec
from ragd.observe.logging import sanitize

log = logging.getLogger(__name__)

#: (root, ignore patterns, debounce ms, stop) -> batches of changed keys
WatchFn = Callable[[Path, Sequence[str], int, asyncio.Event], AsyncIterator[set[str]]]


class FolderWatcher:
    def __init__(
        self,
        ctx: KbContext,
        watch: WatchFn,
        *,
        debounce_ms: int,
        rescan_s: float = 5.0,
        on_queue: Callable[[], None],
    ) -> None:
        self._ctx, self._watch = ctx, watch
        self._debounce_ms, self._rescan_s = debounce_ms, rescan_s
        self._on_queue = on_queue
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def run(self, stop: asyncio.Event) -> None:
        try:
            while not stop.is_set():
                await self._refresh(stop)
                with suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._rescan_s)
        finally:
            for task in self._tasks.values():
                task.cancel()
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _refresh(self, stop: asyncio.Event) -> None:
        try:
            listed = await self._ctx.catalog.list_sources()
            sources = [s for s in listed if s.kind is SourceKind.FOLDER and not s.disabled]
        except RagError as exc:
            log.warning("folder watcher cannot list sources: %s", exc)
            return
        wanted = {s.id: s for s in sources}
        for source_id in set(self._tasks) - set(wanted):
            self._tasks.pop(source_id).cancel()
        for source_id, spec in wanted.items():
            task = self._tasks.get(source_id)
            if task is None or task.done():
                self._tasks[source_id] = asyncio.create_task(self._follow(spec, stop))

    async def _follow(self, spec: SourceSpec, stop: asyncio.Event) -> None:
        root = Path(str(spec.config["path"]))
        ignore = [str(p) for p in spec.config.get("ignore", [])]
        await self._queue(spec)  # changes made while nobody watched
        try:
            async for changed in self._watch(root, ignore, self._debounce_ms, stop):
                log.info("folder %s: %d changed paths", sanitize(str(root)), len(changed))
                await self._queue(spec)
        except RagError as exc:
            log.warning("cannot watch %s: %s", sanitize(str(root)), exc)
        except OSError as exc:
            log.warning("cannot watch %s: %s", sanitize(str(root)), sanitize(str(exc)))

    async def _queue(self, spec: SourceSpec) -> None:
        try:
            dataset = await self._ctx.catalog.get_dataset(spec.dataset_id)
            if dataset is not None:
                await enqueue_sync(self._ctx, dataset, spec)
                self._on_queue()
        except RagError as exc:
            log.warning("cannot queue a sync of source %s: %s", spec.id, exc)
