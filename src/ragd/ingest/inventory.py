"""What the index holds: chunks and files per collection (``ragd stats`` and ``GET /api/v1/stats``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ragd.store.base import VectorStore
from ragd.types import PointFilter

COLLECTION_KEY = "meta.collection_name"
FILE_KEY = "meta.file_id"
MAX_COLLECTIONS = 100_000
MAX_FILES = 1_000_000


@dataclass(frozen=True, slots=True)
class Inventory:
    #: chunks per collection
    chunks: Mapping[str, int]
    #: files per collection
    files: Mapping[str, int]
    #: chunks in the whole index
    total: int


async def inventory(store: VectorStore) -> Inventory:
    chunks = await store.facet(COLLECTION_KEY, PointFilter(), limit=MAX_COLLECTIONS)
    files = {
        name: len(await store.facet(FILE_KEY, PointFilter(collection_names=(name,)), limit=MAX_FILES))
        for name in chunks
    }
    return Inventory(chunks=dict(chunks), files=files, total=await store.count(PointFilter()))
