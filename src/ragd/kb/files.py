"""A dataset's files: upload (kept for re-indexing), list, enable/disable, delete, re-index.

Uploads are moved into ``<files_dir>/<dataset>/<file>`` and indexed by a
durable INGEST job, so a restart never loses an accepted upload.  Disabling
flags the file's points (``meta.disabled``): searches skip them, nothing is
re-embedded, and enabling brings them back as they were.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ragd.errors import InvalidRequest, NotFound, RagError
from ragd.kb import audit
from ragd.kb.access import readable, writable
from ragd.kb.context import KbContext
from ragd.kb.grants import refuse_disabled
from ragd.kb.indexing import file_chunking
from ragd.kb.quota import check_storage
from ragd.kb_types import ChunkingSpec, Dataset, FileEntry, FileStatus, Job, JobKind, JobStatus, Principal

MAX_FILE_NAME = 255
MAX_SOURCE_LABEL = 200


@dataclass(frozen=True, slots=True)
class Upload:
    name: str
    path: Path
    size: int
    #: an archive member refused on its own (:mod:`ragd.kb.zip_uploads`): kept as a failed record
    refused: RagError | None = None


def clean_file_name(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not base or base in (".", "..") or len(base) > MAX_FILE_NAME or any(ord(c) < 32 for c in base):
        raise InvalidRequest(f"invalid file name {name[:80]!r}")
    return base


async def cancel_active_jobs(ctx: KbContext, dataset: Dataset, match: Callable[[Job], bool]) -> list[str]:
    """Ask every queued or running job of ``dataset`` that ``match``es to stop; their ids."""
    active = await ctx.catalog.list_jobs(
        dataset.tenant_id, limit=10_000, statuses=(JobStatus.QUEUED, JobStatus.RUNNING)
    )
    ids = [job.id for job in active if job.dataset_id == dataset.id and match(job)]
    for job_id in ids:
        await ctx.catalog.request_cancel(job_id)
    return ids


def new_job(dataset: Dataset, kind: JobKind, payload: dict[str, object], max_attempts: int) -> Job:
    now = time.time()
    return Job(
        id=str(uuid.uuid4()),
        tenant_id=dataset.tenant_id,
        kind=kind,
        status=JobStatus.QUEUED,
        dataset_id=dataset.id,
        payload=payload,
        max_attempts=max_attempts,
        created_at=now,
        updated_at=now,
    )


def clean_source_label(label: str | None) -> str | None:
    """A file's source label: 1-200 printable characters (None or blank: none)."""
    text = (label or "").strip()
    if not text:
        return None
    if len(text) > MAX_SOURCE_LABEL or any(ord(c) < 32 for c in text):
        raise InvalidRequest(f"a source_label is 1-{MAX_SOURCE_LABEL} printable characters")
    return text


@audit.audited("file.upload", "dataset", "dataset_id")
async def upload_files(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    uploads: Sequence[Upload],
    *,
    chunking: ChunkingSpec | None = None,
    source_label: str | None = None,
) -> tuple[list[FileEntry], Job]:
    """Keep the uploads and queue one job that indexes them all.  ``chunking``: the files' own
    (over the dataset's, kept on re-index), checked like a dataset's; ``source_label``: where
    they came from (shown in listings and in the hits' metadata)."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id)
    if not uploads:
        raise InvalidRequest("no files in the upload (multipart parts named 'files' or 'file')")
    label = clean_source_label(source_label)
    if chunking is not None:
        # sizes the model window cannot hold, or an overlap not below the size: refused before
        # anything is kept, exactly as for a dataset's chunking
        ctx.chunker_for(file_chunking(dataset, chunking), dataset.embedding)
    # bytes alone already over the quota: refused before anything is kept (chunks are counted later)
    total = sum(u.size for u in uploads if u.refused is None)
    await check_storage(ctx.catalog, ctx.limits, dataset.tenant_id, chunks=0, size=total)
    entries = []
    now = time.time()
    for upload in uploads:
        entry = FileEntry(
            id=str(uuid.uuid4()),
            dataset_id=dataset.id,
            name=clean_file_name(upload.name),
            size=upload.size,
            created_at=now,
            updated_at=now,
            chunking=chunking,
            source_label=label,
        )
        if upload.refused is not None:  # failed on its own, never indexed
            code, message = upload.refused.code, upload.refused.message
            entry = replace(entry, status=FileStatus.FAILED, error_code=code, error_message=message)
        else:
            dest = ctx.upload_path(dataset.id, entry.id)
            await asyncio.to_thread(_move, upload.path, dest)
        entries.append(await ctx.catalog.put_file(entry))
    ids = [e.id for e in entries if e.status is FileStatus.QUEUED]
    audit.note(files=len(ids), file_ids=ids[:50])
    job = new_job(dataset, JobKind.INGEST, {"file_ids": ids}, ctx.max_attempts)
    return entries, await ctx.catalog.enqueue(job, ids)


def _move(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(src, dest)


async def list_files(
    ctx: KbContext, principal: Principal, dataset_id: str, *, limit: int = 1000, offset: int = 0
) -> list[FileEntry]:
    await readable(principal, ctx.catalog, dataset_id)
    return await ctx.catalog.list_files(dataset_id, limit=limit, offset=offset)


async def file_of(ctx: KbContext, dataset: Dataset, file_id: str) -> FileEntry:
    """The dataset's file ``file_id`` (NOT_FOUND when it has none: check the dataset's access first)."""
    entry = await ctx.catalog.get_file(file_id)
    if entry is None or entry.dataset_id != dataset.id:
        raise NotFound(f"file {file_id!r} not found in this dataset")
    return entry


async def get_file(ctx: KbContext, principal: Principal, dataset_id: str, file_id: str) -> FileEntry:
    dataset = await readable(principal, ctx.catalog, dataset_id)
    return await file_of(ctx, dataset, file_id)


@audit.audited("file.enable", "file", "file_id")
async def set_enabled(
    ctx: KbContext, principal: Principal, dataset_id: str, file_id: str, enabled: bool
) -> FileEntry:
    audit.note(action="file.enable" if enabled else "file.disable")
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, dataset_id=dataset.id)
    entry = await file_of(ctx, dataset, file_id)
    source = await ctx.catalog.get_source(entry.source_id) if enabled and entry.source_id else None
    if source is not None:
        refuse_disabled(source)  # its files stay out of search until a grant covers the source
    # the catalog first: an ingest running meanwhile reads it and writes its points flagged alike
    updated = await ctx.catalog.put_file(replace(entry, enabled=enabled))
    await ctx.ingestor.set_disabled(entry.id, not enabled, dataset.collection_name)
    return updated


@audit.audited("file.delete", "file", "file_id")
async def delete_file(ctx: KbContext, principal: Principal, dataset_id: str, file_id: str) -> int:
    """Remove the file's points, stored bytes and records (a source's item is re-added by its next
    sync only if it is still there); returns the points removed."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, dataset_id=dataset.id)
    entry = await file_of(ctx, dataset, file_id)
    audit.note(name=entry.name)
    return await remove_file(ctx, dataset, entry)


async def remove_file(ctx: KbContext, dataset: Dataset, entry: FileEntry) -> int:
    removed = await ctx.ingestor.delete(entry.id, dataset.collection_name)
    if entry.source_id and entry.item_key is not None:
        await ctx.catalog.forget_item(entry.source_id, entry.item_key)
    await ctx.catalog.delete_file(entry.id)
    await asyncio.to_thread(ctx.upload_path(dataset.id, entry.id).unlink, True)
    return removed


async def remove_source_files(ctx: KbContext, dataset: Dataset, source_id: str) -> list[str]:
    """Every file ``source_id`` brought into ``dataset``, removed; returns their ids."""
    removed: list[str] = []
    for entry in await ctx.catalog.list_files(dataset.id, limit=1_000_000):
        if entry.source_id == source_id:
            await remove_file(ctx, dataset, entry)
            removed.append(entry.id)
    return removed


@audit.audited("file.reindex", "dataset", "dataset_id")
async def reindex(
    ctx: KbContext, principal: Principal, dataset_id: str, file_ids: Sequence[str] | None = None
) -> Job:
    """Queue a re-index of some files (or all) from their stored bytes or their source."""
    dataset = await writable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id)
    if file_ids:
        entries = [await file_of(ctx, dataset, fid) for fid in file_ids]
    else:
        entries = await ctx.catalog.list_files(dataset.id, limit=1_000_000)
    ids = [e.id for e in entries]
    audit.note(files=len(ids))
    for entry in entries:
        await ctx.catalog.put_file(replace(entry, status=FileStatus.QUEUED))
    job = new_job(dataset, JobKind.REINDEX, {"file_ids": ids}, ctx.max_attempts)
    return await ctx.catalog.enqueue(job, ids)
