"""What each kind of job does, item by item, resumable: finished items are skipped on a retry.

    INGEST   uploaded files -> index (unchanged bytes are skipped)
    REINDEX  files -> index again from stored bytes or their source (forced)
    SYNC     a source's items vs its ledger -> new/changed indexed, vanished removed (never
             those under a prefix a failure hid from the scan)

A failing item (a corrupt file, a page answering 500) is recorded with its
error code and does not fail the job; an error of the whole source or of a
backend (store, catalog, model) does, and the worker retries it.

Cancelling takes effect between items: once a cancel is requested (:class:`CancelSignal`), no
new item starts, the items in flight finish (each one whole: indexed or failed, never half
written), and the job raises :class:`CancelRequested`.  The items never started are settled as
``CANCELLED`` by the catalog; a SYNC stopped early removes nothing (its scan saw only part of
the source).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace

from ragd.errors import NotFound, RagError
from ragd.kb.context import KbContext
from ragd.kb.files import remove_file, remove_source_files
from ragd.kb.grants import refuse_disabled
from ragd.kb.indexing import index_content, index_entry, source_file_id
from ragd.kb.source_metadata import apply_source_metadata, source_label
from ragd.kb_types import Dataset, FileEntry, ItemStage, ItemStatus, Job, JobKind, LedgerEntry, SourceSpec
from ragd.sources.base import ItemFailure, SourceItem, SourceReader
from ragd.types import Blob, IngestStatus

log = logging.getLogger(__name__)

#: items of one job in flight at once: their chunks share the model's batches
ITEM_CONCURRENCY = 16


class CancelRequested(Exception):
    """The job stopped between items because its cancel was requested."""


class CancelSignal:
    """Whether the job's cancel has been requested, asked before each item starts.

    ``raise_flag()`` (the worker's heartbeat) sets it; until then :meth:`requested` asks the
    catalog (one read by primary key per item), so the item after a cancel request never starts,
    however long the heartbeat interval."""

    def __init__(self, ask: Callable[[], Awaitable[bool]] | None = None) -> None:
        self._ask = ask
        self.is_set = False

    def raise_flag(self) -> None:
        self.is_set = True

    async def requested(self) -> bool:
        if not self.is_set and self._ask is not None:
            self.is_set = await self._ask()
        return self.is_set

    def check(self) -> None:
        """After the items: stop here when a cancel came in."""
        if self.is_set:
            raise CancelRequested("cancelled on request")


async def run_job(ctx: KbContext, job: Job, cancel: CancelSignal | None = None) -> None:
    cancel = cancel or CancelSignal()
    dataset = await ctx.catalog.get_dataset(job.dataset_id or "")
    if dataset is None:
        raise NotFound("the job's dataset was deleted")
    if job.kind is JobKind.SYNC:
        await run_sync(ctx, job, dataset, cancel)
    else:
        await run_files(ctx, job, dataset, cancel, force=job.kind is JobKind.REINDEX)
    cancel.check()


async def _pending(ctx: KbContext, job: Job) -> set[str]:
    return {i.key for i in await ctx.catalog.items(job.id) if not i.stage.finished}


async def bounded(keys: Iterable[str], work: Callable[[str], Awaitable[None]], cancel: CancelSignal) -> None:
    """``work`` on every key, ITEM_CONCURRENCY at a time; no key starts once a cancel came in."""
    gate = asyncio.Semaphore(ITEM_CONCURRENCY)

    async def one(key: str) -> None:
        async with gate:
            if not await cancel.requested():
                await work(key)

    try:
        async with asyncio.TaskGroup() as group:
            for key in keys:
                group.create_task(one(key))
    except ExceptionGroup as group_error:
        raise first_error(group_error) from group_error


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error to report for a failed task group: its first RagError, else its first error."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    return next((e for e in leaves if isinstance(e, RagError)), leaves[0])


async def run_files(ctx: KbContext, job: Job, dataset: Dataset, cancel: CancelSignal, *, force: bool) -> None:
    pending = await _pending(ctx, job)
    ids = [str(fid) for fid in job.payload.get("file_ids", []) if str(fid) in pending]

    async def one(file_id: str) -> None:
        entry = await ctx.catalog.get_file(file_id)
        if entry is None or entry.dataset_id != dataset.id:
            await ctx.catalog.update_item(job.id, file_id, ItemStage.DELETED)
            return
        await ctx.catalog.update_item(job.id, file_id, ItemStage.INDEXING, file_id=file_id)
        try:
            outcome = await index_entry(ctx, dataset, entry, force=force)
        except RagError as exc:
            await _item_failed(ctx, job, file_id, exc)
            return
        stage = ItemStage.UNCHANGED if outcome.status is IngestStatus.UNCHANGED else ItemStage.DONE
        await ctx.catalog.update_item(job.id, file_id, stage, file_id=file_id, chunks=outcome.chunks)

    await bounded(ids, one, cancel)


async def _item_failed(ctx: KbContext, job: Job, key: str, exc: RagError) -> None:
    if not _item_level(exc):
        raise exc
    await ctx.catalog.update_item(
        job.id, key, ItemStage.FAILED, error_code=exc.code, error_message=str(exc)[:2000]
    )


def _item_level(exc: RagError) -> bool:
    """A file's own fault (4xx: unreadable, unsupported, too large, gone) vs a backend's (5xx)."""
    return exc.http_status < 500


async def run_sync(ctx: KbContext, job: Job, dataset: Dataset, cancel: CancelSignal) -> None:
    source = await ctx.catalog.get_source(str(job.payload.get("source_id", "")))
    if source is None or source.dataset_id != dataset.id:
        raise NotFound("the job's source was removed")
    refuse_disabled(source)  # disabled after the job was queued: no grant covers it any more
    ledger = await ctx.catalog.ledger(source.id)
    finished = {i.key for i in await ctx.catalog.items(job.id) if i.stage.finished}
    sync = _Sync(ctx, job, dataset, source, ledger, cancel)
    try:
        async with ctx.reader_for(source) as reader:
            seen = await sync.scan(reader, finished)
        cancel.check()  # a scan stopped early saw part of the source: nothing has vanished
        for key in sorted(set(ledger) - seen - finished):
            if not key.startswith(sync.hidden):  # hidden from this scan by a failure: unknown
                await sync.vanished(ledger[key])
    except RagError as exc:
        await _unless_removed(ctx, dataset, source, exc)
        await ctx.catalog.mark_synced(source.id, time.time(), f"{exc.code}: {exc}"[:2000])
        raise
    except CancelRequested as exc:
        await _unless_removed(ctx, dataset, source, exc)
        raise
    await _unless_removed(ctx, dataset, source, None)
    await ctx.catalog.mark_synced(source.id, time.time(), None)


async def _unless_removed(
    ctx: KbContext, dataset: Dataset, source: SourceSpec, cause: BaseException | None
) -> None:
    """A source removed while it synced: the files its items wrote after the removal's sweep go
    too, and the sync ends cancelled (its items fail on the missing source, or nothing did)."""
    if await ctx.catalog.get_source(source.id) is not None:
        return
    removed = await remove_source_files(ctx, dataset, source.id)
    log.info("sync of removed source %s: %d file(s) written meanwhile removed", source.id, len(removed))
    raise CancelRequested("the source was removed while it synced") from cause


class _Sync:
    def __init__(
        self,
        ctx: KbContext,
        job: Job,
        dataset: Dataset,
        source: SourceSpec,
        ledger: dict[str, LedgerEntry],
        cancel: CancelSignal,
    ) -> None:
        self.ctx, self.job, self.dataset, self.source, self.ledger = ctx, job, dataset, source, ledger
        self.cancel = cancel
        #: key prefixes this scan could not see (a folder that cannot be listed, a page that failed)
        self.hidden: tuple[str, ...] = ()

    async def scan(self, reader: SourceReader, finished: set[str]) -> set[str]:
        """Handle every item the source has now (skipping ones a previous attempt finished)."""
        seen: set[str] = set()
        gate = asyncio.Semaphore(ITEM_CONCURRENCY)

        async def one(item: SourceItem | ItemFailure) -> None:
            async with gate:
                if not await self.cancel.requested():
                    await self.item(reader, item)

        try:
            async with asyncio.TaskGroup() as group:
                async for item in reader.scan():
                    if await self.cancel.requested():
                        break
                    seen.add(item.key)
                    if isinstance(item, ItemFailure) and item.hides is not None:
                        self.hidden += (item.hides,)
                    if item.key in finished:
                        continue
                    await self.ctx.catalog.set_items(self.job.id, [item.key])
                    await gate.acquire()  # back-pressure: do not list far ahead of the work
                    gate.release()
                    group.create_task(one(item))
        except ExceptionGroup as group_error:
            raise first_error(group_error) from group_error
        return seen

    async def item(self, reader: SourceReader, item: SourceItem | ItemFailure) -> None:
        catalog, key = self.ctx.catalog, item.key
        previous = self.ledger.get(key)
        file_id = previous.file_id if previous else source_file_id(self.source.id, key)
        if isinstance(item, ItemFailure):
            if not item.listing:  # a listing is no item of the ledger: the job lists it, nothing more
                old = previous.fingerprint if previous else ""
                await self._record(key, old, file_id, item.code, item.message)
            await catalog.update_item(
                self.job.id, key, ItemStage.FAILED, error_code=item.code, error_message=item.message
            )
            return
        if previous and previous.status is ItemStatus.INDEXED and previous.fingerprint == item.fingerprint:
            await self._record(key, item.fingerprint, file_id)
            await catalog.update_item(self.job.id, key, ItemStage.UNCHANGED, file_id=file_id)
            return
        try:
            await catalog.update_item(self.job.id, key, ItemStage.FETCHING, file_id=file_id)
            content = await reader.load(item)
            try:
                entry = await self._entry(file_id, item)
                entry = await apply_source_metadata(
                    self.ctx, self.dataset, await catalog.put_file(entry), await reader.item_metadata(item)
                )
                await catalog.update_item(self.job.id, key, ItemStage.INDEXING, file_id=file_id)
                outcome = await index_content(self.ctx, self.dataset, entry, content)
            finally:
                if isinstance(content, Blob):
                    await reader.release(content)
        except RagError as exc:
            if not _item_level(exc):
                raise
            await self._record(key, previous.fingerprint if previous else "", file_id, exc.code, str(exc))
            await _item_failed(self.ctx, self.job, key, exc)
            return
        await self._record(key, item.fingerprint, file_id)
        await catalog.update_item(self.job.id, key, ItemStage.DONE, file_id=file_id, chunks=outcome.chunks)

    async def _entry(self, file_id: str, item: SourceItem) -> FileEntry:
        entry = await self.ctx.catalog.get_file(file_id)
        now = time.time()
        if entry is None:
            entry = FileEntry(
                id=file_id,
                dataset_id=self.dataset.id,
                name=item.name,
                source_id=self.source.id,
                item_key=item.key,
                created_at=now,
            )
        return replace(
            entry,
            name=item.name,
            size=item.size,
            content_hash=item.fingerprint,
            source_label=entry.source_label or source_label(self.source),
        )

    async def _record(
        self, key: str, fingerprint: str, file_id: str, code: str | None = None, message: str | None = None
    ) -> None:
        await self.ctx.catalog.record_item(
            LedgerEntry(
                source_id=self.source.id,
                key=key,
                fingerprint=fingerprint,
                file_id=file_id,
                status=ItemStatus.FAILED if code else ItemStatus.INDEXED,
                last_seen=time.time(),
                error_code=code,
                error_message=(message or "")[:2000] or None,
            )
        )

    async def vanished(self, entry: LedgerEntry) -> None:
        """An item the source no longer has: its points, file record and ledger entry go."""
        await self.ctx.catalog.set_items(self.job.id, [entry.key])
        file = await self.ctx.catalog.get_file(entry.file_id)
        if file is not None:
            await remove_file(self.ctx, self.dataset, file)
        else:
            await self.ctx.ingestor.delete(entry.file_id, self.dataset.collection_name)
            await self.ctx.catalog.forget_item(self.source.id, entry.key)
        await self.ctx.catalog.update_item(self.job.id, entry.key, ItemStage.DELETED, file_id=entry.file_id)
