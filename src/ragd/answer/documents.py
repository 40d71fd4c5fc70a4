"""A whole document, reassembled from its chunks in the store — never read from disk.

``read_full_document`` must not become a file reader: a document is the points stored under one
``file_id`` in one collection, ordered by ``split_id``, with the overlap between neighbours
removed.  Whatever a model passes in is only ever compared with stored values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragd.store.base import VectorStore
from ragd.store.file_chunks import file_chunks
from ragd.types import ChunkMeta

MIN_OVERLAP = 8
MAX_OVERLAP = 4000


@dataclass(frozen=True, slots=True)
class StoredDocument:
    file_id: str
    name: str
    source: str
    text: str
    chunks: int


def overlap(left: str, right: str, *, minimum: int = MIN_OVERLAP, maximum: int = MAX_OVERLAP) -> int:
    """Length of the longest suffix of ``left`` that begins ``right`` (0 below ``minimum``)."""
    tail = left[-maximum:]
    if not right:
        return 0
    start = tail.find(right[0])
    while start != -1:
        size = len(tail) - start
        if size < minimum:
            return 0
        if right.startswith(tail[start:]):
            return size
        start = tail.find(right[0], start + 1)
    return 0


def join_chunks(texts: Sequence[str]) -> str:
    """Consecutive chunk texts as one text: overlapping text once, otherwise a line break between."""
    if not texts:
        return ""
    out = texts[0]
    for text in texts[1:]:
        shared = overlap(out, text)
        out += text[shared:] if shared else "\n" + text
    return out


async def read_document(
    store: VectorStore, collection: str, file_id: str, *, generation: str | None = None
) -> StoredDocument | None:
    """The document stored as ``file_id`` in ``collection``, or None when it has no chunks there;
    ``generation``: the version a migrating dataset serves (:meth:`DenseSpaces.versions`)."""
    chunks = await file_chunks(store, collection, file_id, generation=generation)
    if not chunks:
        return None
    meta = ChunkMeta.parse(chunks[0].meta)
    return StoredDocument(
        file_id=file_id,
        name=meta.name,
        source=meta.source or meta.name,
        text=join_chunks([c.content for c in chunks]),
        chunks=len(chunks),
    )
