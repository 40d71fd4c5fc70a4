"""An S3 prefix as a source: every object under it, fingerprinted by its ETag.

Keys are the full object keys; the prefix is matched as S3 does, character
by character (``docs`` also covers ``docs2/...``: end it with ``/`` to mean
a folder).  "Folder" placeholder keys ending in ``/`` are skipped; an object
over ``max_bytes`` is reported as an :class:`ItemFailure` (``FILE_TOO_LARGE``)
without being downloaded.  Listing goes through the
:class:`ragd.objects.base.ObjectStore` port, so its errors
(``S3_FETCH_FAILED``, ``FORBIDDEN``) end the scan: the whole source is unusable.

Temporary files.  :meth:`S3PrefixSource.load` downloads the object to a new
private file in ``scratch_dir`` and returns a Blob on it.  **The caller owns
that file** and frees it with :meth:`S3PrefixSource.release` (or uses
:meth:`S3PrefixSource.loaded`, which releases on exit); :meth:`aclose`
deletes whatever is still outstanding, so nothing outlives the source.  A
failed or cancelled download leaves no file behind.  The source never closes
the object store it was given.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path, PurePosixPath
from typing import TypeVar

from ragd.errors import Forbidden, NotFound, ObjectFetchFailed, PayloadTooLarge, RagError
from ragd.objects.base import ObjectStore
from ragd.sources.base import ItemFailure, ItemMetadata, SourceItem
from ragd.types import Blob

__all__ = ["S3PrefixSource"]

logger = logging.getLogger(__name__)

_SAFE_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,16}")

T = TypeVar("T")


class S3PrefixSource:
    """:class:`ragd.sources.base.SourceReader` over the objects under ``s3://bucket/prefix``."""

    def __init__(
        self, objects: ObjectStore, bucket: str, prefix: str, *, max_bytes: int, scratch_dir: Path
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.scratch_dir = scratch_dir
        self._objects = objects
        self._outstanding: set[Path] = set()
        #: the user metadata of each object loaded, until :meth:`item_metadata` takes it
        self._user_meta: dict[str, Mapping[str, str]] = {}

    async def scan(self) -> AsyncIterator[SourceItem | ItemFailure]:
        async with _closing(self._objects.list(self.bucket, self.prefix)) as listing:
            async for info in listing:
                if info.key.endswith("/"):
                    continue
                if info.size > self.max_bytes:
                    message = f"{info.size:,} bytes, over the {self.max_bytes:,}-byte limit"
                    yield ItemFailure(info.key, PayloadTooLarge.code, message)
                    continue
                name = PurePosixPath(info.key).name or info.key
                yield SourceItem(key=info.key, fingerprint=info.etag, name=name, size=info.size)

    async def load(self, item: SourceItem) -> Blob:
        """Download the object to a temp file the caller must :meth:`release`.

        Raises Forbidden for a key outside the prefix, NotFound when the object
        is gone, or the store's errors (ObjectFetchFailed, PayloadTooLarge).
        """
        if not item.key.startswith(self.prefix) or item.key.endswith("/"):
            raise Forbidden(f"{item.key!r} is not an object under the source's prefix")
        path = self._new_scratch_file(item.name)
        try:
            info = await self._objects.download(self.bucket, item.key, path, max_bytes=self.max_bytes)
        except ObjectFetchFailed as exc:
            self._discard(path)
            if not await self._exists(item.key):
                raise NotFound(f"s3://{self.bucket}/{item.key} no longer exists") from exc
            raise
        except BaseException:
            self._discard(path)
            raise
        self._user_meta[item.key] = info.metadata
        return Blob(name=item.name, path=path)

    async def item_metadata(self, item: SourceItem) -> ItemMetadata:
        """The object's user metadata (from its download, ``-`` in a name read as ``_``) as string
        fields and its tags as tags
        (``key=value``, or ``key`` alone for an empty value): one GetObjectTagging request, whose
        failure leaves the tags out with a warning (the item is indexed all the same)."""
        # S3 lower-cases the names and people write them with hyphens: project-id -> project_id
        strings = {k.replace("-", "_"): v for k, v in self._user_meta.pop(item.key, {}).items()}
        try:
            tags = await self._objects.tags(self.bucket, item.key)
        except RagError as exc:
            logger.warning(
                "cannot read the tags of s3://%s/%s, indexed without them: %s",
                self.bucket,
                item.key,
                exc.code,
            )
            tags = {}
        return ItemMetadata(tags=tuple(f"{k}={v}" if v else k for k, v in tags.items() if k), strings=strings)

    async def release(self, blob: Blob) -> None:
        """Delete the temp file behind a Blob from :meth:`load`; other Blobs are left alone."""
        if blob.path is not None and blob.path in self._outstanding:
            self._discard(blob.path)

    @asynccontextmanager
    async def loaded(self, item: SourceItem) -> AsyncIterator[Blob]:
        """``async with source.loaded(item) as blob``: load, and release on exit whatever happens."""
        blob = await self.load(item)
        try:
            yield blob
        finally:
            await self.release(blob)

    async def aclose(self) -> None:
        """Delete every temp file not yet released (the object store stays open)."""
        self._user_meta.clear()
        for path in list(self._outstanding):
            self._discard(path)

    def _new_scratch_file(self, name: str) -> Path:
        suffix = PurePosixPath(name).suffix
        self.scratch_dir.mkdir(parents=True, exist_ok=True)
        fd, raw = tempfile.mkstemp(
            dir=self.scratch_dir,
            prefix="s3-",
            suffix=suffix if _SAFE_SUFFIX.fullmatch(suffix) else "",
        )
        os.close(fd)
        path = Path(raw)
        self._outstanding.add(path)
        return path

    def _discard(self, path: Path) -> None:
        self._outstanding.discard(path)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            logger.warning("cannot delete the scratch file %r: %s", str(path), type(exc).__name__)

    async def _exists(self, key: str) -> bool:
        """Whether ``key`` is still listed (the first key listed under itself is itself, if present)."""
        try:
            async with _closing(self._objects.list(self.bucket, key)) as listing:
                async for info in listing:
                    return info.key == key
        except ObjectFetchFailed:
            return True  # cannot tell: keep the original error
        return False


@asynccontextmanager
async def _closing(iterator: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """Close an async generator (the port promises only an AsyncIterator) when the block ends."""
    try:
        yield iterator
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
