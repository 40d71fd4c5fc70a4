"""A file's chunks as stored, for reading them on the knowledge-base API: a page, or a window.

    offset/limit       the file's chunks in document order, a page at a time: those whose
                       ``split_id`` is in ``[offset, offset + limit)`` (ragd numbers a file's
                       chunks from 0 without gaps)
    around/radius      the chunks whose ``split_id`` is within ``radius`` of ``around``: the
                       neighbours of a search hit

Either reads only the chunks it returns (a range filter in the store), plus a count for ``total``:
a page of a 20,000-chunk file costs what a page of a small one does.

Readable by every key that may read the dataset.  The chunks come from the store under the
dataset's own collection name and the file's id, both from the catalog; a disabled file's chunks
are shown too (they are out of search, not gone).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragd.errors import InvalidRequest, NotFound
from ragd.kb.access import readable, require_chunk_reader
from ragd.kb.context import KbContext
from ragd.kb.files import file_of
from ragd.kb.indexing import served_generation
from ragd.kb_types import FileEntry, Principal
from ragd.store.file_chunks import file_chunks, split_id
from ragd.types import PointFilter, StoredChunk

MAX_LIMIT = 200
MAX_RADIUS = 50


@dataclass(frozen=True, slots=True)
class ChunkPage:
    file: FileEntry
    #: how many chunks the file has in the store
    total: int
    chunks: tuple[StoredChunk, ...]


async def read_chunks(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    file_id: str,
    *,
    offset: int = 0,
    limit: int = 50,
    around: int | None = None,
    radius: int = 2,
) -> ChunkPage:
    """A page of the file's chunks (``offset``, ``limit``), or the window ``around`` a split id;
    NOT_FOUND for a dataset or file the key cannot read, or a split id the file does not have."""
    if not 1 <= limit <= MAX_LIMIT or offset < 0:
        raise InvalidRequest(f"limit is 1-{MAX_LIMIT} and offset at least 0")
    if not 0 <= radius <= MAX_RADIUS:
        raise InvalidRequest(f"radius is 0-{MAX_RADIUS}")
    require_chunk_reader(principal)
    dataset = await readable(principal, ctx.catalog, dataset_id)
    entry = await file_of(ctx, dataset, file_id)
    generation = served_generation(dataset)  # while a migration runs: the version searches read
    scope = PointFilter(collection_names=(dataset.collection_name,), file_id=entry.id, generation=generation)
    total = await ctx.store.count(scope)
    first, last = (offset, offset + limit - 1) if around is None else (around - radius, around + radius)
    chunks = await file_chunks(
        ctx.store,
        dataset.collection_name,
        entry.id,
        include_disabled=True,
        split_ids=(max(0, first), last),
        generation=generation,
    )
    if around is not None and not any(split_id(c) == around for c in chunks):
        raise NotFound(f"file {file_id!r} has no chunk with split_id {around}")
    return ChunkPage(entry, total, tuple(chunks))
