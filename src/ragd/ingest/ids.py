"""Identities derived from content, so re-ingesting upserts the same points.

chunk id = uuid5(NAMESPACE, collection / file id / split id / content hash).
The collection is part of the id because one file may be indexed into several
logical collections (knowledge bases) whose copies must not overwrite each other.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from ragd.types import Blob

NAMESPACE = uuid.UUID("6f1c2a8e-5b0d-4f7e-9a43-2d8c51e0b7a9")


def sha256_hex(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def chunk_id(collection_name: str, file_id: str, split_id: int, content_hash: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{collection_name}\x1f{file_id}\x1f{split_id}\x1f{content_hash}"))


def file_id_for_path(path: Path) -> str:
    """A stable file id for a local file: the same path always gets the same id."""
    return str(uuid.uuid5(NAMESPACE, f"file://{path.resolve().as_posix()}"))


def blob_hash(blob: Blob) -> str:
    """sha256 of a file's bytes, streamed from disk when the blob has a path."""
    if blob.data is None and blob.path is not None:
        with blob.path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    return sha256_hex(blob.read())
