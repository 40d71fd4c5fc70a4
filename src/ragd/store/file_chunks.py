"""One file's chunks in one collection, in document order (``split_id``), read with the store port.

The store scrolls in point-id order (content-derived uuids), so what is read is sorted here: the
whole file (at most ``max_chunks`` points), or only the chunks whose ``split_id`` lies in a range.
Used to reassemble a document for a model (:func:`ragd.answer.documents.read_document`) and to page
through a file's chunks on the knowledge-base API.
"""

from __future__ import annotations

from ragd.store.base import VectorStore
from ragd.types import ChunkMeta, PointFilter, StoredChunk

SCROLL_PAGE = 256
MAX_CHUNKS = 20_000


def split_id(chunk: StoredChunk) -> int:
    """A chunk's position in its file (0 when a point written by another tool lacks it)."""
    return ChunkMeta.parse(chunk.meta).split_id or 0


async def file_chunks(
    store: VectorStore,
    collection: str,
    file_id: str,
    *,
    include_disabled: bool = False,
    max_chunks: int = MAX_CHUNKS,
    split_ids: tuple[int, int] | None = None,
    generation: str | None = None,
) -> list[StoredChunk]:
    """The points stored as ``file_id`` in ``collection``, by ``split_id``; a disabled file's
    points only with ``include_disabled`` (they are out of search, and so out of what a model reads);
    with ``split_ids`` only those whose ``split_id`` lies in ``[first, last]`` (read by the engine's
    filter, not sliced from the whole file)."""
    flt = PointFilter(
        collection_names=(collection,), file_id=file_id, split_ids=split_ids, generation=generation
    )
    chunks: list[StoredChunk] = []
    offset: str | None = None
    while len(chunks) < max_chunks:
        page, offset = await store.scroll(flt, limit=SCROLL_PAGE, offset=offset)
        chunks.extend(c for c in page if include_disabled or not ChunkMeta.parse(c.meta).disabled)
        if offset is None:
            break
    chunks.sort(key=split_id)
    return one_version(chunks) if generation is None else chunks


def one_version(chunks: list[StoredChunk]) -> list[StoredChunk]:
    """The chunks of one version of the file: while a migration builds a dataset's next version
    (or retains its last one) a file has two, which must not be read interleaved.  Either version
    holds the whole text; the untagged (oldest) one is kept, else the first tag in order."""
    tags = {str(c.meta.get("generation") or "") for c in chunks}
    if len(tags) <= 1:
        return chunks
    keep = min(tags)
    return [c for c in chunks if str(c.meta.get("generation") or "") == keep]
