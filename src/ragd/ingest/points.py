"""Chunks + vectors -> the points one file version is stored as (domain side of the payload)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragd.ingest.ids import chunk_id, sha256_hex
from ragd.language import detect_language
from ragd.types import Chunk, DenseVector, Document, FileRef, SparseVector, StoredChunk

#: meta key of a file switched off for search (``VectorStore.set_disabled``); absent means enabled
DISABLED = "disabled"


def chunk_meta(
    ref: FileRef,
    document: Document,
    chunk: Chunk,
    *,
    file_hash: str,
    version: str,
    total: int,
    disabled: bool = False,
) -> dict[str, Any]:
    """``meta`` of one point: the ingestion-service keys plus ragd's bookkeeping.

    ``disabled`` is the stored file's flag, carried over: ``ref.extra`` cannot set or clear it."""
    meta: dict[str, Any] = {
        **ref.extra,
        "collection_name": ref.collection_name,
        "file_id": ref.file_id,
        "name": ref.name,
        "source": ref.source,
        "split_id": chunk.split_id,
        "extractor": document.extractor,
        "file_hash": file_hash,
        "pipeline": version,
        "ingest_version": sha256_hex(f"{file_hash}|{version}")[:32],
        "chunk_count": total,
    }
    if chunk.headers:
        meta["headers"] = list(chunk.headers)
        meta["headers_breadcrumb"] = chunk.breadcrumb
    if chunk.page is not None:
        meta["page"] = chunk.page
    language = detect_language(chunk.text)
    if language is not None:  # the chunk's own; else the document's, when its reader detected any
        meta.setdefault("languages", [language])
    for key in ("title", "languages", "page_count"):
        if document.meta.get(key):
            meta.setdefault(key, document.meta[key])
    meta.pop(DISABLED, None)
    if disabled:
        meta[DISABLED] = True
    return meta


def build_points(
    ref: FileRef,
    document: Document,
    chunks: Sequence[Chunk],
    dense: Sequence[DenseVector],
    sparse: Sequence[SparseVector] | None,
    *,
    file_hash: str,
    version: str,
    disabled: bool = False,
) -> list[StoredChunk]:
    points = []
    for i, chunk in enumerate(chunks):
        meta = chunk_meta(
            ref, document, chunk, file_hash=file_hash, version=version, total=len(chunks), disabled=disabled
        )
        points.append(
            StoredChunk(
                id=chunk_id(ref.collection_name, ref.file_id, chunk.split_id, sha256_hex(chunk.text)),
                content=chunk.text,
                meta=meta,
                dense=dense[i],
                sparse=sparse[i] if sparse is not None else None,
            )
        )
    return points


def is_disabled(points: Sequence[StoredChunk]) -> bool:
    """True when a stored version of a file is switched off (any of its points is flagged)."""
    return any(p.meta.get(DISABLED) is True for p in points)


def is_current(points: Sequence[StoredChunk], *, file_hash: str, version: str) -> bool:
    """True when ``points`` are one complete version of the file made from these bytes this way."""
    if not points:
        return False

    def same(meta: Mapping[str, Any]) -> bool:
        return meta.get("file_hash") == file_hash and meta.get("pipeline") == version

    return all(same(p.meta) for p in points) and points[0].meta.get("chunk_count") == len(points)
