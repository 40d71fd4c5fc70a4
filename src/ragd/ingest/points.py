"""Chunks + vectors -> the points one file version is stored as (domain side of the payload)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragd.ingest.ids import chunk_id, sha256_hex
from ragd.ingest.layout import chunk_boxes, region_of
from ragd.language import detect_language
from ragd.types import Chunk, ChunkMeta, DenseVector, Document, FileRef, SparseVector, StoredChunk


def chunk_meta(
    ref: FileRef,
    document: Document,
    chunk: Chunk,
    *,
    file_hash: str,
    version: str,
    total: int,
    disabled: bool = False,
) -> ChunkMeta:
    """The metadata of one point: the ingestion-service keys plus ragd's bookkeeping.

    ``ref.extra`` rides along (its ``title``, ``languages`` and ``page_count`` win over the
    document's); ``disabled`` is the stored file's flag, carried over: ``ref.extra`` cannot set or
    clear it."""
    given = ChunkMeta.parse(ref.extra)
    from_document = ChunkMeta.parse(document.meta)
    language = detect_language(chunk.text)
    region = region_of(document.regions, chunk.start, chunk.end)
    return ChunkMeta(
        collection_name=ref.collection_name,
        file_id=ref.file_id,
        name=ref.name,
        source=ref.source,
        split_id=chunk.split_id,
        chunk_count=total,
        extractor=region.extractor if region else document.extractor,
        vision_profile=region.profile if region else from_document.vision_profile,
        boxes=chunk_boxes(document.boxes, chunk.start, chunk.end),
        file_hash=file_hash,
        pipeline=version,
        ingest_version=sha256_hex(f"{file_hash}|{version}")[:32],
        headers=tuple(chunk.headers) or given.headers,
        headers_breadcrumb=chunk.breadcrumb if chunk.headers else given.headers_breadcrumb,
        page=chunk.page if chunk.page is not None else given.page,
        page_count=given.page_count or from_document.page_count,
        title=given.title or from_document.title,
        # the chunk's own language; else the document's, when its reader detected any
        languages=given.languages or ((language,) if language else from_document.languages),
        disabled=disabled,
        extra={**_carried(document), **given.extra},
    )


#: the ``auto`` router's decision for a file (``Document.meta`` key and payload key)
ROUTE_META = "extraction_route"
#: what an extractor says of the whole file that every chunk carries as it is (docs/payload.md):
#: the router's decision and the warnings of a reading that fell short
CARRIED_META = (ROUTE_META, "extraction_warnings")


def _carried(document: Document) -> dict[str, Any]:
    return {key: document.meta[key] for key in CARRIED_META if document.meta.get(key)}


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
    # a migration's version of the file has ids of its own (it is written beside the serving one)
    generation = str(ref.extra.get("generation") or "")
    version_key = f"{ref.collection_name}\x1e{generation}" if generation else ref.collection_name
    points = []
    for i, chunk in enumerate(chunks):
        meta = chunk_meta(
            ref, document, chunk, file_hash=file_hash, version=version, total=len(chunks), disabled=disabled
        ).to_payload()
        points.append(
            StoredChunk(
                id=chunk_id(version_key, ref.file_id, chunk.split_id, sha256_hex(chunk.text)),
                content=chunk.text,
                meta=meta,
                dense=dense[i],
                sparse=sparse[i] if sparse is not None else None,
            )
        )
    return points


def is_disabled(points: Sequence[StoredChunk]) -> bool:
    """True when a stored version of a file is switched off (any of its points is flagged)."""
    return any(ChunkMeta.parse(p.meta).disabled for p in points)


def is_current(points: Sequence[StoredChunk], *, file_hash: str, version: str) -> bool:
    """True when ``points`` are one complete version of the file made from these bytes this way."""
    if not points:
        return False
    metas = [ChunkMeta.parse(p.meta) for p in points]
    same = all(m.file_hash == file_hash and m.pipeline == version for m in metas)
    return same and metas[0].chunk_count == len(points)


def stored_route(points: Sequence[StoredChunk]) -> Mapping[str, Any] | None:
    """The router's decision recorded on a stored version of a file, if any."""
    route = points[0].meta.get(ROUTE_META) if points else None
    return route if isinstance(route, Mapping) else None
