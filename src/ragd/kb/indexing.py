"""Index one file of a dataset and keep its catalog record in step with the store."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from ragd.errors import NotFound, RagError
from ragd.ingest.pipeline import IngestOptions, IngestVersion, Outcome
from ragd.kb.context import KbContext
from ragd.kb.grants import refuse_disabled
from ragd.kb.quota import storage_check
from ragd.kb_types import ChunkingSpec, Dataset, FileEntry, FileStatus, ItemStage, VersionSpec
from ragd.sources.base import SourceItem
from ragd.types import Blob, Document, FileRef, PointFilter

log = logging.getLogger(__name__)

#: file ids of source items derive from (source, key): a re-sync finds the same file
SOURCE_ITEMS = uuid.UUID("6f1c1a52-61f3-4d8e-9b8e-2d1f3c0a7a11")


def source_file_id(source_id: str, key: str) -> str:
    return str(uuid.uuid5(SOURCE_ITEMS, f"{source_id}\n{key}"))


def file_ref(dataset: Dataset, entry: FileEntry) -> FileRef:
    extra: dict[str, object] = {"dataset_id": dataset.id, "tenant_id": dataset.tenant_id}
    if entry.source_label:
        extra["source_label"] = entry.source_label
    extra.update(entry.metadata.payload())  # meta.tags and meta.fields (user metadata)
    return FileRef(
        file_id=entry.id,
        collection_name=dataset.collection_name,
        name=entry.name,
        source=entry.item_key or entry.name,
        extra=extra,
    )


def file_chunking(dataset: Dataset, own: ChunkingSpec | None) -> ChunkingSpec:
    """A file's chunking: its own fields (given at upload) over its dataset's."""
    if own is None:
        return dataset.chunking
    base = dataset.chunking
    return ChunkingSpec(
        strategy=own.strategy or base.strategy,
        size=own.size if own.size is not None else base.size,
        overlap=own.overlap if own.overlap is not None else base.overlap,
    )


def serving_version(dataset: Dataset) -> IngestVersion | None:
    """The version a write of ``dataset`` goes to: None while it has only ever had one (the
    collection's points, as always), else the one it serves, so a migration's other version of
    the same file is neither read nor replaced."""
    if not dataset.generation and not dataset.hidden:
        return None
    return IngestVersion(dataset.generation, dataset.embedding)


def served_generation(dataset: Dataset) -> str | None:
    """The generation a read of ``dataset``'s chunks is scoped to (None: it has only one version)."""
    return None if not dataset.generation and not dataset.hidden else dataset.generation


async def _ingest(
    ctx: KbContext, content: Blob | Document, ref: FileRef, *, force: bool, options: IngestOptions
) -> Outcome:
    if isinstance(content, Document):
        return await ctx.ingestor.ingest_document(content, ref, force=force, options=options)
    return await ctx.ingestor.ingest(content, ref, force=force, options=options)


async def index_version(
    ctx: KbContext,
    dataset: Dataset,
    entry: FileEntry,
    content: Blob | Document,
    version: VersionSpec,
    *,
    force: bool = False,
) -> Outcome:
    """Write ``content`` as ``entry``'s chunks of one version of ``dataset`` (a migration's new
    one: its model and chunking, the file's own chunking fields over the version's); the
    catalog entry is not touched (it describes the version served)."""
    shaped = replace(dataset, chunking=version.chunking, embedding=version.embedding)
    options = IngestOptions(
        chunker=ctx.chunker_for(file_chunking(shaped, entry.chunking), version.embedding),
        disabled=not entry.enabled,
        version=IngestVersion(version.generation, version.embedding),
    )
    return await _ingest(ctx, content, file_ref(dataset, entry), force=force, options=options)


async def index_content(
    ctx: KbContext, dataset: Dataset, entry: FileEntry, content: Blob | Document, *, force: bool = False
) -> Outcome:
    """Ingest ``content`` as ``entry``; the entry records the outcome (or the error, re-raised).

    While a migration builds the dataset's next version the file is written into both."""
    dataset = await ctx.catalog.get_dataset(dataset.id) or dataset  # its version now, not the caller's
    entry = await ctx.catalog.put_file(replace(entry, status=FileStatus.INDEXING))
    size = entry.size or content_size(content)
    options = IngestOptions(
        chunker=ctx.chunker_for(file_chunking(dataset, entry.chunking), dataset.embedding),
        disabled=not entry.enabled,
        admit=storage_check(ctx.catalog, ctx.limits, dataset.tenant_id, entry.id, size),
        version=serving_version(dataset),
    )
    ref = file_ref(dataset, entry)
    try:
        outcome = await _ingest(ctx, content, ref, force=force, options=options)
    except RagError as exc:
        await ctx.catalog.put_file(
            replace(entry, status=FileStatus.FAILED, error_code=exc.code, error_message=str(exc)[:2000])
        )
        raise
    fresh = await ctx.catalog.get_file(entry.id)
    if fresh is not None and fresh.metadata != entry.metadata:  # changed while it was indexed
        await ctx.store.set_meta(
            PointFilter(collection_names=(dataset.collection_name,), file_id=entry.id),
            fresh.metadata.payload(),
        )
    await ctx.catalog.put_file(
        replace(
            entry,
            status=FileStatus.INDEXED,
            chunks=outcome.chunks,
            error_code=None,
            error_message=None,
            updated_at=time.time(),
        )
    )
    if dataset.hidden:
        await _into_building(ctx, dataset, entry, content, force=force)
    return outcome


async def _into_building(
    ctx: KbContext, dataset: Dataset, entry: FileEntry, content: Blob | Document, *, force: bool
) -> None:
    """A file written while a migration builds the dataset's next version lands in it too (and is
    counted among the migration job's items while that job runs)."""
    latest = await ctx.catalog.list_migrations(dataset.id, limit=1)
    if not latest or not latest[0].state.in_flight or latest[0].target.generation not in dataset.hidden:
        return
    migration = latest[0]
    job = await ctx.catalog.get_job(migration.job_id) if migration.job_id else None
    running = job is not None and not job.status.finished
    try:
        outcome = await index_version(ctx, dataset, entry, content, migration.target, force=force)
    except RagError as exc:  # the served version is written: the migration's last sweep tries again
        log.warning("migration %s: %s not written into the new version: %s", migration.id, entry.id, exc)
        if running:
            await ctx.catalog.update_item(
                migration.job_id or "",
                entry.id,
                ItemStage.FAILED,
                file_id=entry.id,
                error_code=exc.code,
                error_message=str(exc)[:2000],
            )
        return
    if running:
        await ctx.catalog.update_item(
            migration.job_id or "", entry.id, ItemStage.DONE, file_id=entry.id, chunks=outcome.chunks
        )


@asynccontextmanager
async def entry_content(ctx: KbContext, entry: FileEntry) -> AsyncIterator[Blob | Document]:
    """A file's content: its stored upload, or its item fetched again from its source."""
    if entry.source_id is None:
        path = ctx.upload_path(entry.dataset_id, entry.id)
        if not path.is_file():
            raise NotFound(f"the stored bytes of {entry.name!r} are gone; upload the file again")
        yield Blob(name=entry.name, path=path)
        return
    source = await ctx.catalog.get_source(entry.source_id)
    if source is None or entry.item_key is None:
        raise NotFound(f"the source of {entry.name!r} was removed")
    refuse_disabled(source)  # no grant covers it: its items are not read again
    item = SourceItem(key=entry.item_key, fingerprint=entry.content_hash or "", name=entry.name)
    async with ctx.reader_for(source) as reader:
        content = await reader.load(item)
        try:
            yield content
        finally:
            if isinstance(content, Blob):
                await reader.release(content)


def content_size(content: Blob | Document) -> int:
    """The bytes a file's quota counts: the blob's, or an extracted document's text in UTF-8."""
    if isinstance(content, Document):
        return len(content.text.encode("utf-8", "surrogatepass"))
    if content.path is not None:
        return content.path.stat().st_size
    return len(content.data or b"")


async def index_entry(ctx: KbContext, dataset: Dataset, entry: FileEntry, *, force: bool) -> Outcome:
    """Index a file from its stored upload, or from its item fetched again from its source."""
    async with entry_content(ctx, entry) as content:
        return await index_content(ctx, dataset, entry, content, force=force)
