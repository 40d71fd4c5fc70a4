"""Import a dataset archive (:mod:`ragd.kb.archive_format`) as a new dataset of a tenant.

Order: unpack and verify every part (ARCHIVE_INVALID), the model check (INDEX_MISMATCH unless
``reembed``), the tenant's storage quota (QUOTA_EXCEEDED) — all before anything is written; then
the dataset (new id and collection; a taken name is CONFLICT), its files (new ids) and stored
uploads, and its points as they are: nothing is embedded.  Any failure from there removes what was
written (points, records, uploads).  With ``reembed`` (the model differs) no point is written: the
files with a stored upload are queued for a re-index job with this instance's default model, those
without (they came from a source) are kept as FAILED.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragd.errors import ArchiveInvalid, IndexMismatch, RagError
from ragd.ingest.ids import chunk_id, sha256_hex
from ragd.kb import archive_format as af
from ragd.kb import audit
from ragd.kb import file_metadata as fm
from ragd.kb.access import owning_tenant, require_writer
from ragd.kb.archive_reader import ArchiveLimits, Unpacked, unpack
from ragd.kb.context import KbContext
from ragd.kb.datasets import clean_name, clean_roles, collection_name_for
from ragd.kb.files import clean_file_name, new_job
from ragd.kb.quota import check_storage
from ragd.kb_types import (
    ChunkingSpec,
    Dataset,
    FieldType,
    FileEntry,
    FileStatus,
    Job,
    JobKind,
    Principal,
)
from ragd.store.payload import GENERATION_FIELD
from ragd.types import ChunkStrategy, IndexManifest, PointFilter, StoredChunk

log = logging.getLogger(__name__)

UPSERT_BATCH = 256
INTERRUPTED = "INTERRUPTED"


@dataclass(frozen=True, slots=True)
class ImportResult:
    dataset: Dataset
    files: int
    points: int
    #: the re-index job of a ``reembed`` import, else None
    job: Job | None = None


@audit.audited("dataset.import", "dataset")
async def import_dataset(
    ctx: KbContext,
    principal: Principal,
    archive: Path,
    *,
    manifest: IndexManifest,
    limits: ArchiveLimits,
    tenant_id: str | None = None,
    name: str | None = None,
    reembed: bool = False,
) -> ImportResult:
    require_writer(principal)
    tenant = owning_tenant(principal, tenant_id)
    audit.note(tenant_id=tenant)
    with tempfile.TemporaryDirectory(prefix="ragd-import-") as tmp:
        unpacked = await asyncio.to_thread(unpack, archive, Path(tmp), limits)
        head = unpacked.manifest
        matched, space = af.matching_space(manifest, head["model"])
        if not matched and not reembed:
            raise IndexMismatch(
                f"the archive's vectors were made with {af.describe(head['model'])}; no model of this"
                f" index is that one (default {af.describe(af.model_entry(manifest, None))})",
                hint="import with ?reembed=true to index its stored uploads again with this instance's model",
            )
        reembed = reembed and not matched
        archived = await asyncio.to_thread(_read_files, unpacked)
        dataset = _new_dataset(ctx, tenant, head["dataset"], name, space)
        audit.note(name=dataset.name, files=len(archived), reembed=reembed)
        # what the archive holds, not what its manifest or records say, is counted against the quota
        points = 0 if reembed else await asyncio.to_thread(_count_points, unpacked)
        size = sum(f.entry.size for f in archived)
        await check_storage(ctx.catalog, ctx.limits, tenant, chunks=points, size=size)
        created = await ctx.catalog.create_dataset(dataset)
        audit.note(target_id=created.id)
        try:
            return await _fill(ctx, created, unpacked, archived, reembed=reembed)
        except BaseException:
            try:
                await asyncio.shield(_undo(ctx, created))
            except Exception:  # the import's own failure is the one to report
                log.exception("could not remove the failed import of dataset %s", created.id)
            raise


def _read_files(unpacked: Unpacked) -> list[af.ArchivedFile]:
    """The files' records; a stored upload's size is its bytes in the archive."""
    text = (unpacked.root / af.FILES).read_text(encoding="utf-8")
    files = [af.decode_file(line) for line in text.splitlines() if line.strip()]
    if len({f.entry.id for f in files}) != len(files):
        raise ArchiveInvalid("the archive lists a file twice")
    out = []
    for f in files:
        clean_file_name(f.entry.name)
        upload = unpacked.root / f"{af.UPLOADS}{f.entry.id}"
        if f.has_upload and not upload.is_file():
            raise ArchiveInvalid(f"the archive lacks the stored upload of {f.entry.name!r}")
        out.append(replace(f, entry=replace(f.entry, size=upload.stat().st_size)) if f.has_upload else f)
    return out


def _count_points(unpacked: Unpacked) -> int:
    total = 0
    for part in unpacked.point_parts:
        with part.open("rb") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def _new_dataset(
    ctx: KbContext, tenant: str, settings: Mapping[str, Any], name: str | None, space: str | None
) -> Dataset:
    try:
        raw = settings.get("chunking") or {}
        strategy = raw.get("strategy")
        chunking = ChunkingSpec(
            strategy=ChunkStrategy.parse(strategy) if strategy else None,
            size=None if raw.get("size") is None else int(raw["size"]),
            overlap=None if raw.get("overlap") is None else int(raw["overlap"]),
        )
        roles = tuple(str(r) for r in settings.get("allowed_roles") or ())
        title, description = str(name or settings["name"]), str(settings.get("description") or "")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ArchiveInvalid(f"the archive's dataset settings cannot be read ({exc!r:.200})") from exc
    ctx.chunker_for(chunking, space)  # sizes this instance's model cannot hold are refused here
    reranker = settings.get("reranker")
    dataset_id = str(uuid.uuid4())
    now = time.time()
    return Dataset(
        id=dataset_id,
        tenant_id=tenant,
        name=clean_name(title),
        collection_name=collection_name_for(dataset_id),
        description=description,
        chunking=chunking,
        allowed_roles=clean_roles(roles),
        # a reranker this instance does not have falls back to the service's default
        reranker=reranker if reranker == "none" or reranker in ctx.reranker_names else None,
        embedding=space,
        created_at=now,
        updated_at=now,
    )


async def _fill(
    ctx: KbContext,
    dataset: Dataset,
    unpacked: Unpacked,
    archived: Sequence[af.ArchivedFile],
    *,
    reembed: bool,
) -> ImportResult:
    """Points first (counted by file), then each file's record with its count of them, and uploads."""
    ids = {item.entry.id: str(uuid.uuid4()) for item in archived}
    counts: Counter[str] = Counter()
    if not reembed:
        for part in unpacked.point_parts:
            await _write_points(ctx, dataset, part, ids, counts)
    queued: list[str] = []
    for item in archived:
        entry = _imported_entry(item, dataset.id, ids[item.entry.id], counts, reembed=reembed)
        if item.has_upload:
            src = unpacked.root / f"{af.UPLOADS}{item.entry.id}"
            await asyncio.to_thread(_move, src, ctx.upload_path(dataset.id, entry.id))
        await ctx.catalog.put_file(entry)
        if item.tags or item.fields:
            await _restore_metadata(ctx, dataset, entry, item)
        if entry.status is FileStatus.QUEUED:
            queued.append(entry.id)
    points = sum(counts.values())
    audit.note(points=points)
    job = None
    if queued:
        job = await ctx.catalog.enqueue(
            new_job(dataset, JobKind.REINDEX, {"file_ids": queued}, ctx.max_attempts), queued
        )
    return ImportResult(dataset, len(archived), points, job)


async def _restore_metadata(
    ctx: KbContext, dataset: Dataset, entry: FileEntry, item: af.ArchivedFile
) -> None:
    """The file's tags and fields, checked as a PATCH would be (ARCHIVE_INVALID if they are not
    metadata), recorded with their types, indexed, and on its points."""
    try:
        declared = {n: FieldType.parse(str(t)) for n, t in (item.field_types or {}).items()}
        metadata, types = fm.check_metadata(item.tags, item.fields, declared)
    except (RagError, ValueError) as exc:
        raise ArchiveInvalid(f"the metadata of file {item.entry.name[:80]!r} cannot be read: {exc}") from exc
    await fm.store_metadata(ctx, dataset, entry, metadata, types)


def _imported_entry(
    item: af.ArchivedFile, dataset_id: str, file_id: str, counts: Counter[str], *, reembed: bool
) -> FileEntry:
    """The file's record here: its count of points is the number the archive held for it."""
    entry = replace(item.entry, id=file_id, dataset_id=dataset_id, chunks=counts[file_id])
    if reembed and item.has_upload:
        return replace(entry, status=FileStatus.QUEUED, chunks=0, error_code=None, error_message=None)
    if reembed:
        return replace(
            entry,
            status=FileStatus.FAILED,
            chunks=0,
            error_code="NOT_FOUND",
            error_message="it came from a source of the exporting instance: add the source here to index it",
        )
    if entry.status in (FileStatus.QUEUED, FileStatus.INDEXING):
        return replace(
            entry,
            status=FileStatus.FAILED,
            error_code=INTERRUPTED,
            error_message="it was being indexed when the dataset was exported: re-index it",
        )
    return entry


async def _write_points(
    ctx: KbContext, dataset: Dataset, part: Path, ids: Mapping[str, str], counts: Counter[str]
) -> None:
    lines = (await asyncio.to_thread(part.read_text, encoding="utf-8")).splitlines()
    batch: list[StoredChunk] = []
    for line in lines:
        if not line.strip():
            continue
        point = _rehomed(af.decode_point(line), dataset, ids)
        counts[str(point.meta["file_id"])] += 1
        batch.append(point)
        if len(batch) >= UPSERT_BATCH:
            await ctx.store.upsert(batch)
            batch = []
    if batch:
        await ctx.store.upsert(batch)


def _rehomed(point: StoredChunk, dataset: Dataset, ids: Mapping[str, str]) -> StoredChunk:
    """The point in its new collection under its new file's id, with the id ingest would give it."""
    meta = dict(point.meta)
    file_id = ids.get(str(meta.get("file_id")))
    split_id = meta.get("split_id")
    if file_id is None or not isinstance(split_id, int) or point.dense is None:
        raise ArchiveInvalid(
            "a point of the archive belongs to no file of it, or has no split_id or dense vector"
        )
    meta["collection_name"], meta["file_id"] = dataset.collection_name, file_id
    meta.pop(GENERATION_FIELD, None)  # the new dataset's one version: untagged
    new_id = chunk_id(dataset.collection_name, file_id, split_id, sha256_hex(point.content))
    return replace(point, id=new_id, meta=meta, space=dataset.embedding)


def _move(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(src, dest)


async def _undo(ctx: KbContext, dataset: Dataset) -> None:
    """Remove what a failed import wrote: its points, records (files go with the dataset) and uploads."""
    await ctx.store.delete(PointFilter(collection_names=(dataset.collection_name,)))
    await ctx.catalog.delete_dataset(dataset.id)
    await asyncio.to_thread(shutil.rmtree, ctx.files_dir / dataset.id, True)
