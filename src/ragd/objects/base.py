"""The object-store port: read files by (bucket, key) from S3 or an S3-compatible server.

Used by ``PUT /api/v1/ingest`` in its S3-reference form and by S3 sources.
No vendor type crosses this line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ragd.errors import Forbidden


def check_bucket(bucket: str, allowed: Sequence[str]) -> None:
    """Refuse a bucket outside ``RAGD_S3__ALLOWED_BUCKETS`` (empty: every bucket is allowed).

    The one check behind S3 ingest references, S3 sources (at creation) and the adapter itself."""
    if allowed and bucket not in allowed:
        raise Forbidden(f"bucket {bucket!r} is not allowed", hint="add it to RAGD_S3__ALLOWED_BUCKETS")


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    key: str
    size: int
    etag: str
    #: the object's user metadata (``x-amz-meta-<name>``: value), when the call returns it (GET)
    metadata: Mapping[str, str] = field(default_factory=dict)


class ObjectStore(Protocol):
    """Errors: :class:`ragd.errors.ObjectFetchFailed` (missing key, auth, network);
    :class:`ragd.errors.PayloadTooLarge` when an object exceeds ``max_bytes``;
    :class:`ragd.errors.Forbidden` for a bucket the settings do not allow."""

    async def head(self, bucket: str, key: str) -> ObjectInfo:
        """Size and ETag without downloading."""
        ...

    async def download(self, bucket: str, key: str, dest: Path, *, max_bytes: int) -> ObjectInfo:
        """Stream the object to ``dest`` (never whole in memory); refuse past ``max_bytes``."""
        ...

    async def tags(self, bucket: str, key: str) -> dict[str, str]:
        """The object's tags (GetObjectTagging), ``{key: value}``."""
        ...

    def list(self, bucket: str, prefix: str = "") -> AsyncIterator[ObjectInfo]:
        """Every object under ``prefix``, paginated lazily."""
        ...

    async def aclose(self) -> None: ...
