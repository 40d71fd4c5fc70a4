"""Export one dataset as a portable archive (:mod:`ragd.kb.archive_format`), streamed part by part.

What a reader of the dataset may read, it may export (another tenant's dataset is NOT_FOUND).  The
archive is what the dataset holds while it streams: a file indexed meanwhile may be in or out.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ragd import __version__
from ragd.kb import archive_format as af
from ragd.kb import audit
from ragd.kb.access import readable, require_chunk_reader
from ragd.kb.context import KbContext
from ragd.kb.indexing import served_generation
from ragd.kb_types import Dataset, FileEntry, Principal
from ragd.types import IndexManifest, PointFilter

_READ = 1 << 20


@dataclass(frozen=True, slots=True)
class DatasetExport:
    dataset: Dataset
    #: the tar's bytes, member by member (nothing is read before the first is asked for)
    stream: AsyncIterator[bytes]

    @property
    def filename(self) -> str:
        return f"ragd-dataset-{self.dataset.id}.tar"


@audit.audited("dataset.export", "dataset", "dataset_id")
async def export_dataset(
    ctx: KbContext, principal: Principal, dataset_id: str, manifest: IndexManifest
) -> DatasetExport:
    require_chunk_reader(principal)
    dataset = await readable(principal, ctx.catalog, dataset_id)
    audit.note(tenant_id=dataset.tenant_id, name=dataset.name)
    model = af.model_entry(manifest, dataset.embedding)
    files = await ctx.catalog.list_files(dataset.id, limit=10_000_000)
    audit.note(files=len(files))
    return DatasetExport(dataset, _stream(ctx, dataset, files, model))


def dataset_settings(dataset: Dataset) -> dict[str, Any]:
    chunking = dataset.chunking
    return {
        "id": dataset.id,
        "name": dataset.name,
        "description": dataset.description,
        "chunking": {
            "strategy": chunking.strategy.value if chunking.strategy else None,
            "size": chunking.size,
            "overlap": chunking.overlap,
        },
        "allowed_roles": list(dataset.allowed_roles),
        "reranker": dataset.reranker,
        "embedding": dataset.embedding,
    }


async def _stream(
    ctx: KbContext, dataset: Dataset, files: Sequence[FileEntry], model: dict[str, Any]
) -> AsyncIterator[bytes]:
    now = time.time()
    parts: list[dict[str, Any]] = []
    stored = await asyncio.to_thread(_stored_uploads, ctx, dataset, files)
    types = await ctx.catalog.field_types(dataset.id)  # so an importer reads a date as a date
    listing = "".join(af.encode_file(f, f.id in stored, types) + "\n" for f in files).encode("utf-8")
    for piece in _member(af.FILES, listing, now, parts):
        yield piece
    points, n, cursor = 0, 0, None
    # the version the dataset serves (a migration's other version stays behind)
    scope = PointFilter(collection_names=(dataset.collection_name,), generation=served_generation(dataset))
    while True:
        page, cursor = await ctx.store.scroll(
            scope, limit=af.POINTS_PER_PART, offset=cursor, with_vectors=True
        )
        if page:
            n, points = n + 1, points + len(page)
            data = "".join(af.encode_point(p) + "\n" for p in page).encode("utf-8")
            for piece in _member(af.points_part(n), data, now, parts):
                yield piece
        if cursor is None:
            break
    for file_id, path in stored.items():
        async for piece in _upload_member(f"{af.UPLOADS}{file_id}", path, now, parts):
            yield piece
    head = {
        "format": af.FORMAT,
        "ragd_version": __version__,
        "created_at": now,
        "dataset": dataset_settings(dataset),
        "model": model,
        "files": len(files),
        "points": points,
        "parts": parts,
    }
    body = (json.dumps(head, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    yield af.tar_header(af.MANIFEST, len(body), now) + body + af.tar_padding(len(body)) + af.tar_end()


def _stored_uploads(ctx: KbContext, dataset: Dataset, files: Sequence[FileEntry]) -> dict[str, Path]:
    paths = {f.id: ctx.upload_path(dataset.id, f.id) for f in files}
    return {file_id: path for file_id, path in paths.items() if path.is_file()}


def _member(name: str, data: bytes, mtime: float, parts: list[dict[str, Any]]) -> list[bytes]:
    parts.append({"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return [af.tar_header(name, len(data), mtime), data, af.tar_padding(len(data))]


async def _upload_member(
    name: str, path: Path, mtime: float, parts: list[dict[str, Any]]
) -> AsyncIterator[bytes]:
    """One stored upload, read in blocks; its size is the one it had when opened."""
    fh: IO[bytes] = await asyncio.to_thread(path.open, "rb")
    try:
        size = os.fstat(fh.fileno()).st_size
        digest, left = hashlib.sha256(), size
        yield af.tar_header(name, size, mtime)
        while left > 0:
            block = await asyncio.to_thread(fh.read, min(_READ, left))
            if not block:
                raise OSError(f"{name} shrank while it was exported")
            digest.update(block)
            left -= len(block)
            yield block
        yield af.tar_padding(size)
        parts.append({"path": name, "bytes": size, "sha256": digest.hexdigest()})
    finally:
        await asyncio.to_thread(fh.close)
