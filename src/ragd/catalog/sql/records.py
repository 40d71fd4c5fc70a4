"""Rows to records and back: the one place that knows both shapes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from ragd.kb_types import (
    ApiKeyInfo,
    ChunkingSpec,
    Dataset,
    FileEntry,
    FileMetadata,
    FileStatus,
    ItemStage,
    ItemStatus,
    Job,
    JobItem,
    JobKind,
    JobStatus,
    LedgerEntry,
    SourceGrant,
    SourceKind,
    SourceSchedule,
    SourceSpec,
    Tenant,
)
from ragd.types import ChunkStrategy


def tenant(row: RowMapping) -> Tenant:
    return Tenant(id=row["id"], name=row["name"], created_at=row["created_at"])


def api_key(row: RowMapping) -> ApiKeyInfo:
    return ApiKeyInfo(
        id=row["id"],
        tenant_id=row["tenant_id"],
        role=row["role"],
        name=row["name"],
        prefix=row["prefix"],
        created_at=row["created_at"],
    )


def dataset(row: RowMapping) -> Dataset:
    strategy = row["chunk_strategy"]
    return Dataset(
        id=row["id"],
        tenant_id=row["tenant_id"],
        name=row["name"],
        collection_name=row["collection_name"],
        description=row["description"],
        chunking=ChunkingSpec(
            strategy=ChunkStrategy.parse(strategy) if strategy else None,
            size=row["chunk_size"],
            overlap=row["chunk_overlap"],
        ),
        allowed_roles=tuple(row["allowed_roles"]),
        reranker=row["reranker"],
        embedding=row["embedding"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        generation=row["generation"] or "",
        hidden=tuple(row["hidden"] or ()),
    )


def dataset_values(ds: Dataset) -> dict[str, Any]:
    """The columns a dataset update replaces."""
    return {
        "name": ds.name,
        "description": ds.description,
        "chunk_strategy": ds.chunking.strategy.value if ds.chunking.strategy else None,
        "chunk_size": ds.chunking.size,
        "chunk_overlap": ds.chunking.overlap,
        "allowed_roles": list(ds.allowed_roles),
        "reranker": ds.reranker,
        "embedding": ds.embedding,
    }


def file_entry(row: RowMapping) -> FileEntry:
    return FileEntry(
        id=row["id"],
        dataset_id=row["dataset_id"],
        name=row["name"],
        status=FileStatus.parse(row["status"]),
        enabled=bool(row["enabled"]),
        chunks=row["chunks"],
        size=row["size"],
        content_hash=row["content_hash"],
        source_id=row["source_id"],
        item_key=row["item_key"],
        error_code=row["error_code"],
        error_message=row["error_message"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        chunking=_file_chunking(row),
        source_label=row["source_label"],
        metadata=file_metadata(row["tags"], row["fields"]),
    )


def file_metadata(tags: object, fields: object) -> FileMetadata:
    """A file's stored tags and fields (JSON columns; anything else reads as none)."""
    return FileMetadata(
        tags=tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else (),
        fields=(
            {str(k): v for k, v in fields.items() if isinstance(v, (str, int, float, bool))}
            if isinstance(fields, dict)
            else {}
        ),
    )


def _file_chunking(row: RowMapping) -> ChunkingSpec | None:
    strategy, size, overlap = row["chunk_strategy"], row["chunk_size"], row["chunk_overlap"]
    if strategy is None and size is None and overlap is None:
        return None
    return ChunkingSpec(ChunkStrategy.parse(strategy) if strategy else None, size, overlap)


def file_values(entry: FileEntry) -> dict[str, Any]:
    c = entry.chunking
    return {
        "id": entry.id,
        "dataset_id": entry.dataset_id,
        "name": entry.name,
        "status": entry.status.value,
        "enabled": entry.enabled,
        "chunks": entry.chunks,
        "size": entry.size,
        "content_hash": entry.content_hash,
        "source_id": entry.source_id,
        "item_key": entry.item_key,
        "error_code": entry.error_code,
        "error_message": entry.error_message,
        "chunk_strategy": c.strategy.value if c is not None and c.strategy else None,
        "chunk_size": c.size if c is not None else None,
        "chunk_overlap": c.overlap if c is not None else None,
        "source_label": entry.source_label,
    }


def source(row: RowMapping) -> SourceSpec:
    return SourceSpec(
        id=row["id"],
        dataset_id=row["dataset_id"],
        kind=SourceKind.parse(row["kind"]),
        config=dict(row["config"]),
        created_at=row["created_at"],
        last_synced_at=row["last_synced_at"],
        last_error=row["last_error"],
        disabled_reason=row["disabled_reason"],
        schedule=SourceSchedule.from_json(row["schedule"]) if row["schedule"] else None,
        paused=bool(row["paused"]),
        next_run_at=row["next_run_at"],
        last_run_at=row["last_run_at"],
    )


def grant(row: RowMapping) -> SourceGrant:
    return SourceGrant(
        id=row["id"],
        tenant_id=row["tenant_id"],
        kind=SourceKind.parse(row["kind"]),
        target=row["target"],
        shared=bool(row["shared"]),
        created_at=row["created_at"],
        created_by=row["created_by"],
        revoked_at=row["revoked_at"],
    )


def ledger_entry(row: RowMapping) -> LedgerEntry:
    return LedgerEntry(
        source_id=row["source_id"],
        key=row["key"],
        fingerprint=row["fingerprint"],
        file_id=row["file_id"],
        status=ItemStatus.parse(row["status"]),
        last_seen=row["last_seen"],
        error_code=row["error_code"],
        error_message=row["error_message"],
    )


def ledger_values(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "source_id": entry.source_id,
        "key": entry.key,
        "fingerprint": entry.fingerprint,
        "file_id": entry.file_id,
        "status": entry.status.value,
        "last_seen": entry.last_seen,
        "error_code": entry.error_code,
        "error_message": entry.error_message,
    }


def job(row: RowMapping) -> Job:
    return Job(
        id=row["id"],
        tenant_id=row["tenant_id"],
        kind=JobKind.parse(row["kind"]),
        status=JobStatus.parse(row["status"]),
        dataset_id=row["dataset_id"],
        payload=dict(row["payload"]),
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        cancel_requested=bool(row["cancel_requested"]),
        error_code=row["error_code"],
        error_message=row["error_message"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        updated_at=row["updated_at"],
        total=row["total"],
        done=row["done"],
        failed=row["failed"],
        chunks=row["chunks"],
    )


def job_item(row: RowMapping) -> JobItem:
    return JobItem(
        job_id=row["job_id"],
        key=row["key"],
        stage=ItemStage.parse(row["stage"]),
        file_id=row["file_id"],
        chunks=row["chunks"],
        error_code=row["error_code"],
        error_message=row["error_message"],
    )
