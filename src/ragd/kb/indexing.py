"""Index one file of a dataset and keep its catalog record in step with the store."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

from ragd.errors import NotFound, RagError
from ragd.ingest.pipeline import IngestOptions, Outcome
from ragd.kb.context import KbContext
from ragd.kb.grants import refuse_disabled
from ragd.kb.quota import storage_check
from ragd.kb_types import ChunkingSpec, Dataset, FileEntry, FileStatus
from ragd.sources.base import SourceItem
from ragd.types import Blob, Document, FileRef, PointFilter

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


async def index_content(
    ctx: KbContext, dataset: Dataset, entry: FileEntry, content: Blob | Document, *, force: bool = False
) -> Outcome:
    """Ingest ``content`` as ``entry``; the entry records the outcome (or the error, re-raised)."""
    entry = await ctx.catalog.put_file(replace(entry, status=FileStatus.INDEXING))
    size = entry.size or content_size(content)
    options = IngestOptions(
        chunker=ctx.chunker_for(file_chunking(dataset, entry.chunking), dataset.embedding),
        disabled=not entry.enabled,
        admit=storage_check(ctx.catalog, ctx.limits, dataset.tenant_id, entry.id, size),
    )
    ref = file_ref(dataset, entry)
    try:
        if isinstance(content, Document):
            outcome = await ctx.ingestor.ingest_document(content, ref, force=force, options=options)
        else:
            outcome = await ctx.ingestor.ingest(content, ref, force=force, options=options)
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
    return outcome


def content_size(content: Blob | Document) -> int:
    """The bytes a file's quota counts: the blob's, or an extracted document's text in UTF-8."""
    if isinstance(content, Document):
        return len(content.text.encode("utf-8", "surrogatepass"))
    if content.path is not None:
        return content.path.stat().st_size
    return len(content.data or b"")


async def index_entry(ctx: KbContext, dataset: Dataset, entry: FileEntry, *, force: bool) -> Outcome:
    """Index a file from its stored upload, or from its item fetched again from its source."""
    if entry.source_id is None:
        path = ctx.upload_path(dataset.id, entry.id)
        if not path.is_file():
            raise NotFound(f"the stored bytes of {entry.name!r} are gone; upload the file again")
        return await index_content(ctx, dataset, entry, Blob(name=entry.name, path=path), force=force)
    source = await ctx.catalog.get_source(entry.source_id)
    if source is None or entry.item_key is None:
        raise NotFound(f"the source of {entry.name!r} was removed")
    refuse_disabled(source)  # no grant covers it: its items are not read again
    item = SourceItem(key=entry.item_key, fingerprint=entry.content_hash or "", name=entry.name)
    async with ctx.reader_for(source) as reader:
        content = await reader.load(item)
        try:
            return await index_content(ctx, dataset, entry, content, force=force)
        finally:
            if isinstance(content, Blob):
                await reader.release(content)
