"""The on-disk shape of a backup, and its check before anything is restored.

<dest>/backup.json          written last: format, ragd version, the index manifest, and every
                            part's relative path, size and SHA-256 (no backup.json: incomplete)
<dest>/catalog.db           the SQLite catalog, one committed state (``"catalog": "sqlite"``)
<dest>/catalog.pgdump       or a PostgreSQL catalog: ``pg_dump --format=custom`` of its database
                            (``"catalog": "postgresql"``; a backup.json without it is SQLite's)
<dest>/index.jsonl          every point, one JSON object a line (id, content, meta, space,
                            dense as base64 little-endian float32, sparse indices and values)
                            (``"index": "jsonl"``: the embedded engine's points, scrolled)
<dest>/index.snapshot       or a Qdrant server's own snapshot of the collection, every tenant's
                            points (``"index": "qdrant-snapshot"``; a backup.json without it: jsonl)
<dest>/files/<dataset>/<file>   the stored uploads
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ragd.errors import BackupInvalid
from ragd.types import SparseVector, StoredChunk

FORMAT = "ragd-backup/1"
MANIFEST = "backup.json"
CATALOG = "catalog.db"
CATALOG_PG = "catalog.pgdump"
SQLITE = "sqlite"
POSTGRESQL = "postgresql"
#: the catalog part of each catalog kind
CATALOG_PARTS = {SQLITE: CATALOG, POSTGRESQL: CATALOG_PG}
INDEX = "index.jsonl"
SNAPSHOT = "index.snapshot"
JSONL = "jsonl"
QDRANT_SNAPSHOT = "qdrant-snapshot"
#: the index part of each index kind
INDEX_PARTS = {JSONL: INDEX, QDRANT_SNAPSHOT: SNAPSHOT}
FILES = "files"
_READ = 1 << 20


@dataclass(frozen=True, slots=True)
class Part:
    path: str
    bytes: int
    sha256: str


@dataclass(frozen=True, slots=True)
class BackupInfo:
    """A verified backup: where it is, what the index was built with, its parts."""

    root: Path
    created_at: float
    ragd_version: str
    index_manifest: Mapping[str, Any]
    points: int
    parts: tuple[Part, ...]
    #: the catalog's kind: ``sqlite`` or ``postgresql`` (its part: :data:`CATALOG_PARTS`)
    catalog: str = SQLITE
    #: how the index was copied: ``jsonl`` (scrolled points) or ``qdrant-snapshot`` (:data:`INDEX_PARTS`)
    index: str = JSONL

    @property
    def catalog_part(self) -> str:
        return CATALOG_PARTS[self.catalog]

    @property
    def index_part(self) -> str:
        return INDEX_PARTS[self.index]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_READ):
            digest.update(block)
    return digest.hexdigest()


def encode_point(chunk: StoredChunk) -> str:
    row: dict[str, Any] = {"id": chunk.id, "content": chunk.content, "meta": dict(chunk.meta)}
    if chunk.space is not None:
        row["space"] = chunk.space
    if chunk.dense is not None:
        row["dense"] = base64.b64encode(np.asarray(chunk.dense, dtype="<f4").tobytes()).decode("ascii")
    if chunk.sparse is not None:
        row["sparse"] = {"indices": list(chunk.sparse.indices), "values": list(chunk.sparse.values)}
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def decode_point(line: str) -> StoredChunk:
    row = json.loads(line)
    dense = None
    if "dense" in row:
        dense = np.frombuffer(base64.b64decode(row["dense"]), dtype="<f4").astype(np.float32)
    sparse = None
    if "sparse" in row:
        sparse = SparseVector(tuple(row["sparse"]["indices"]), tuple(row["sparse"]["values"]))
    return StoredChunk(
        id=row["id"],
        content=row["content"],
        meta=row["meta"],
        dense=dense,
        sparse=sparse,
        space=row.get("space"),
    )


def write_info(root: Path, info: BackupInfo) -> None:
    """``backup.json``, written to a temporary name and renamed: it exists only when complete."""
    data = {
        "format": FORMAT,
        "created_at": info.created_at,
        "ragd_version": info.ragd_version,
        "index_manifest": dict(info.index_manifest),
        "points": info.points,
        "catalog": info.catalog,
        "index": info.index,
        "parts": [{"path": p.path, "bytes": p.bytes, "sha256": p.sha256} for p in info.parts],
    }
    tmp = root / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(root / MANIFEST)


def verify_backup(root: Path) -> BackupInfo:
    """Read ``backup.json`` and check every part's size and SHA-256; BackupInvalid on any doubt."""
    info = _read_info(root)
    for part in info.parts:
        path = root / part.path
        if not path.is_file():
            raise BackupInvalid(f"the backup at {root} lacks its part {part.path}")
        size = path.stat().st_size
        if size != part.bytes:
            raise BackupInvalid(
                f"the backup part {part.path} has {size} bytes, not the {part.bytes} it was written with"
            )
        if sha256_of(path) != part.sha256:
            raise BackupInvalid(f"the backup part {part.path} does not match its SHA-256")
    names = {p.path for p in info.parts}
    for needed in (info.catalog_part, info.index_part):
        if needed not in names:
            raise BackupInvalid(f"the backup at {root} lists no {needed}")
    return info


def _read_info(root: Path) -> BackupInfo:
    path = root / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupInvalid(
            f"no {MANIFEST} in {root}: not a ragd backup, or one that did not finish"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackupInvalid(f"{path} is unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BackupInvalid(f"{path} is not a {FORMAT} manifest")
    try:
        parts = tuple(_part(p) for p in data["parts"])
        return BackupInfo(
            root=root,
            created_at=float(data["created_at"]),
            ragd_version=str(data["ragd_version"]),
            index_manifest=dict(data["index_manifest"]),
            points=int(data["points"]),
            parts=parts,
            catalog=_catalog_kind(data.get("catalog", SQLITE)),
            index=_index_kind(data.get("index", JSONL)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BackupInvalid(f"{path} is incomplete ({exc!r})") from exc


def _part(raw: Mapping[str, Any]) -> Part:
    rel = PurePosixPath(str(raw["path"]))
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise BackupInvalid(f"the backup part path {str(rel)[:200]!r} leaves the backup folder")
    return Part(path=str(rel), bytes=int(raw["bytes"]), sha256=str(raw["sha256"]))


def _index_kind(raw: object) -> str:
    if raw not in INDEX_PARTS:
        raise BackupInvalid(f"the backup's index kind {str(raw)[:50]!r} is not one of {sorted(INDEX_PARTS)}")
    return str(raw)


def _catalog_kind(raw: object) -> str:
    if raw not in CATALOG_PARTS:
        raise BackupInvalid(
            f"the backup's catalog kind {str(raw)[:50]!r} is not one of {sorted(CATALOG_PARTS)}"
        )
    return str(raw)
