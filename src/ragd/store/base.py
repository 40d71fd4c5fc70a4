"""The store port: one physical collection of chunks with dense + sparse vectors.

Records in, records out; no vendor type crosses this line.  The payload
layout (``content`` + ``meta``) is a contract of its own: see ``payload.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from ragd.store.payload import PayloadIndex
from ragd.types import Hit, IndexManifest, PointFilter, StoredChunk, StoreQuery


class VectorStore(Protocol):
    """Errors: :class:`ragd.errors.StoreError` subclasses, :class:`ragd.errors.IndexMismatch`.

    Disabled points (payload ``meta.disabled == true``, set by :meth:`set_disabled`) are
    left out of :meth:`search` only: ``count``, ``scroll``, ``delete`` and ``facet`` see
    every point, so the management layer can list, count and remove disabled files.
    A point without the key is enabled.  ``PointFilter`` has no field for it on purpose:
    a search can never include disabled points, and nothing else excludes them.
    """

    async def open(self, manifest: IndexManifest) -> None:
        """Create the collection, its vectors and payload indexes (before any write) and
        the manifest, or check an existing index's manifest: a mismatch raises IndexMismatch."""
        ...

    async def upsert(self, chunks: Sequence[StoredChunk]) -> None:
        """Insert or replace points by id.  Every chunk carries dense (and sparse when enabled)."""
        ...

    async def delete(self, flt: PointFilter) -> int:
        """Delete the matching points; returns how many there were."""
        ...

    async def set_disabled(self, flt: PointFilter, disabled: bool) -> int:
        """Set ``meta.disabled`` on the matching points, keeping their other meta keys and
        their vectors (no re-embedding); returns how many points matched.  An empty filter
        is refused (it would touch every point)."""
        ...

    async def set_meta(self, flt: PointFilter, values: Mapping[str, Any]) -> int:
        """Replace the ``meta`` keys in ``values`` (a file's ``tags`` and ``fields``) on the
        matching points, keeping their other meta keys and their vectors (no re-embedding);
        returns how many points matched.  An empty filter is refused."""
        ...

    async def ensure_index(self, index: PayloadIndex) -> bool:
        """Create a payload index unless the key has one (of any type); True when it was created.
        Indexes the points already there (blocking work runs off the event loop)."""
        ...

    async def count(self, flt: PointFilter) -> int: ...

    async def scroll(
        self, flt: PointFilter, *, limit: int, offset: str | None = None, with_vectors: bool = False
    ) -> tuple[list[StoredChunk], str | None]:
        """One page of points in id order, and the cursor of the next page (None at the end)."""
        ...

    async def search(self, query: StoreQuery) -> list[Hit]:
        """Dense, sparse, or both fused by weighted RRF inside the engine; never a disabled point.

        Hit.score is the engine's score; Hit.scores has dense/sparse/fused components."""
        ...

    async def facet(self, key: str, flt: PointFilter, *, limit: int = 1000) -> dict[str, int]:
        """Distinct values of a keyword payload key (e.g. ``meta.collection_name``) with counts.

        Only values that points still hold: an engine may keep a value whose points were all
        deleted (with a count of 0); adapters leave those out."""
        ...

    async def optimize(self) -> None:
        """Finish index building after a bulk write (blocking work runs off the event loop)."""
        ...

    def bulk(self) -> AbstractAsyncContextManager[None]:
        """Writes inside are one bulk load (a folder's ingest, a restore, an evaluation's corpus):
        a store that builds its indexes only when asked (Qdrant Edge) builds them every
        ``RAGD_STORE__BULK_SEGMENT_CHUNKS`` chunks written, so the unindexed write segment, and the
        memory of building it, stay bounded; the caller still optimizes at the end.  A server
        optimizes on its own: nothing to do there."""
        ...

    async def ready(self) -> bool:
        """True when the store answers."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class InProcessSearch(Protocol):
    """A store whose engine runs in this process on worker threads of its own (Qdrant Edge)."""

    async def search_after(self, prepare: Callable[[], StoreQuery]) -> tuple[StoreQuery, list[Hit]]:
        """Run ``prepare`` (blocking CPU work, such as embedding the query) on the store's
        worker thread, then :meth:`VectorStore.search` with the query it returns, on the
        same thread: no hand-off to the event loop in between.  Returns the query and hits."""
        ...
