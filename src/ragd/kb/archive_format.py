"""The portable archive of one dataset (``GET /api/v1/datasets/{id}/export``): an uncompressed tar.

    files.jsonl             the files' records, one JSON object a line
    points-00001.jsonl …    its chunks: id, content, meta, dense (base64 little-endian float32),
                            sparse (indices, values); at most POINTS_PER_PART a part
    uploads/<file id>       the stored uploads (files that came from a source have none)
    manifest.json           written last: format, ragd version, the dataset's settings, the model
                            entry its vectors were made with, counts, and every other member's
                            path, size and SHA-256

Members are regular files with these names only; the tar is written member by member as it
streams out (a part is complete before its header is sent), never built whole in memory.
"""

from __future__ import annotations

import base64
import json
import re
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragd.errors import ArchiveInvalid, IndexMismatch
from ragd.kb_types import ChunkingSpec, FieldType, FileEntry, FileStatus
from ragd.types import ChunkStrategy, IndexManifest, SparseVector, StoredChunk

FORMAT = "ragd-dataset/1"
MANIFEST = "manifest.json"
FILES = "files.jsonl"
UPLOADS = "uploads/"
POINTS_PER_PART = 2000
BLOCK = tarfile.BLOCKSIZE
#: the names a member may have (anything else is refused before it is read)
MEMBER_NAME = re.compile(r"manifest\.json|files\.jsonl|points-\d{5}\.jsonl|uploads/[0-9a-f-]{36}")
#: what identifies the vectors' model: equal entries mean the points can be used as they are
MODEL_FIELDS = ("model", "dim", "query_prefix", "document_prefix", "sparse_model", "precision")
#: what an archive written before a field existed means by its absence
MODEL_DEFAULTS = {"precision": "fp32"}


def points_part(n: int) -> str:
    return f"points-{n:05d}.jsonl"


def tar_header(name: str, size: int, mtime: float) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(mtime), 0o644
    return info.tobuf(format=tarfile.PAX_FORMAT)


def tar_padding(size: int) -> bytes:
    return b"\0" * (-size % BLOCK)


def tar_end() -> bytes:
    return b"\0" * (2 * BLOCK)


def model_entry(manifest: IndexManifest, space: str | None) -> dict[str, Any]:
    """The manifest's record of a dense model (None: the default) and the sparse model beside it."""
    if space is None:
        model, dim, qp, dp, precision = (
            manifest.dense_model,
            manifest.dense_dim,
            manifest.query_prefix,
            manifest.document_prefix,
            manifest.dense_precision,
        )
    else:
        found = next((s for s in manifest.extra_dense if s.name == space), None)
        if found is None:
            raise IndexMismatch(f"the dataset's dense model {space[:64]!r} is not in the index manifest")
        model, dim, qp, dp = found.model, found.dim, found.query_prefix, found.document_prefix
        precision = found.precision
    return {
        "space": space,
        "model": model,
        "dim": dim,
        "query_prefix": qp,
        "document_prefix": dp,
        "precision": precision,
        "sparse_model": manifest.sparse_model,
        "chunker_version": manifest.chunker_version,
    }


def matching_space(manifest: IndexManifest, entry: Mapping[str, Any]) -> tuple[bool, str | None]:
    """Whether this index holds the model of ``entry`` and under which space (None: the default)."""
    for space in (None, *(s.name for s in manifest.extra_dense)):
        mine = model_entry(manifest, space)
        if all(mine[k] == entry.get(k, MODEL_DEFAULTS.get(k)) for k in MODEL_FIELDS):
            return True, space
    return False, None


def describe(entry: Mapping[str, Any]) -> str:
    return (
        f"{entry.get('model')!r} ({entry.get('dim')}-d, prefixes {entry.get('query_prefix')!r}/"
        f"{entry.get('document_prefix')!r}, {entry.get('precision', 'fp32')},"
        f" sparse {entry.get('sparse_model')!r})"
    )


def require_text(row: Any, what: str) -> None:
    """ArchiveInvalid when ``row``'s strings hold text no store can keep: a NUL or a lone surrogate."""
    for text in _strings(row):
        if "\x00" in text:
            raise ArchiveInvalid(f"{what} of the archive holds a NUL character")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ArchiveInvalid(f"{what} of the archive holds a lone surrogate") from exc


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def encode_point(chunk: StoredChunk) -> str:
    row: dict[str, Any] = {"id": chunk.id, "content": chunk.content, "meta": dict(chunk.meta)}
    if chunk.dense is not None:
        row["dense"] = base64.b64encode(np.asarray(chunk.dense, dtype="<f4").tobytes()).decode("ascii")
    if chunk.sparse is not None:
        row["sparse"] = {"indices": list(chunk.sparse.indices), "values": list(chunk.sparse.values)}
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def decode_point(line: str) -> StoredChunk:
    try:
        row = json.loads(line)
        require_text(row, "a point")
        dense = None
        if "dense" in row:
            dense = np.frombuffer(base64.b64decode(row["dense"]), dtype="<f4").astype(np.float32)
        sparse = None
        if row.get("sparse") is not None:
            sparse = SparseVector(
                tuple(int(i) for i in row["sparse"]["indices"]),
                tuple(float(v) for v in row["sparse"]["values"]),
            )
        if not isinstance(row["meta"], dict):
            raise TypeError("meta is not an object")
        return StoredChunk(
            id=str(row["id"]), content=str(row["content"]), meta=row["meta"], dense=dense, sparse=sparse
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ArchiveInvalid(f"a point of the archive cannot be read ({exc!r:.200})") from exc


def encode_file(entry: FileEntry, has_upload: bool, types: Mapping[str, FieldType] | None = None) -> str:
    row: dict[str, Any] = {
        "id": entry.id,
        "name": entry.name,
        "status": entry.status.value,
        "enabled": entry.enabled,
        "chunks": entry.chunks,
        "size": entry.size,
        "content_hash": entry.content_hash,
        "error_code": entry.error_code,
        "error_message": entry.error_message,
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "has_upload": has_upload,
    }
    if entry.source_label is not None:
        row["source_label"] = entry.source_label
    meta = entry.metadata
    if meta.tags or meta.fields:  # its user metadata, each field with its type in the dataset
        row["tags"] = list(meta.tags)
        row["fields"] = dict(meta.fields)
        row["field_types"] = {n: t.value for n, t in (types or {}).items() if n in meta.fields}
    if (c := entry.chunking) is not None:  # its own chunking (issue 34 §2), kept on re-index
        row["chunking"] = {
            "strategy": c.strategy.value if c.strategy else None,
            "size": c.size,
            "overlap": c.overlap,
        }
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def _chunking(raw: Any) -> ChunkingSpec | None:
    if raw is None:
        return None
    strategy, size, overlap = raw.get("strategy"), raw.get("size"), raw.get("overlap")
    return ChunkingSpec(
        ChunkStrategy.parse(str(strategy)) if strategy else None,
        None if size is None else int(size),
        None if overlap is None else int(overlap),
    )


@dataclass(frozen=True, slots=True)
class ArchivedFile:
    entry: FileEntry
    has_upload: bool
    #: its user metadata as archived (checked again when imported), and its fields' types
    tags: Any = None
    fields: Any = None
    field_types: Mapping[str, str] | None = None


def decode_file(line: str) -> ArchivedFile:
    try:
        row = json.loads(line)
        require_text(row, "a file record")
        entry = FileEntry(
            id=str(row["id"]),
            dataset_id="",
            name=str(row["name"]),
            status=FileStatus.parse(row["status"]),
            enabled=bool(row["enabled"]),
            chunks=int(row["chunks"]),
            size=int(row["size"]),
            content_hash=row.get("content_hash"),
            error_code=row.get("error_code"),
            error_message=row.get("error_message"),
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
            chunking=_chunking(row.get("chunking")),
            source_label=None if row.get("source_label") is None else str(row["source_label"])[:200],
        )
        types = row.get("field_types")
        if types is not None and not isinstance(types, dict):
            raise TypeError("field_types is not an object")
        return ArchivedFile(entry, bool(row["has_upload"]), row.get("tags"), row.get("fields"), types)
    except (KeyError, TypeError, ValueError) as exc:
        raise ArchiveInvalid(f"a file record of the archive cannot be read ({exc!r:.200})") from exc
