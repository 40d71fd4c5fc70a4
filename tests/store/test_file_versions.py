"""A file held in two versions (a dataset migration in flight, or one retained after a switch) is
read one version at a time: the one named, or — when the caller cannot say — one whole version,
never the two interleaved (a document is reassembled from its chunks in ``split_id`` order)."""

from __future__ import annotations

import uuid

import numpy as np

from ragd.answer.documents import read_document
from ragd.store.base import VectorStore
from ragd.store.file_chunks import file_chunks
from ragd.types import StoredChunk

from .data import DIM, unit

OLD = ["Alpha beta gamma delta.", "Epsilon zeta eta theta."]
NEW = ["Alpha beta", "gamma delta.", "Epsilon zeta", "eta theta."]


def _points(texts: list[str], generation: str | None) -> list[StoredChunk]:
    rng = np.random.default_rng(len(texts))
    out = []
    for i, text in enumerate(texts):
        meta = {
            "collection_name": "kb-x",
            "file_id": "doc",
            "name": "doc.md",
            "split_id": i,
            "chunk_count": len(texts),
        }
        if generation:
            meta["generation"] = generation
        out.append(StoredChunk(str(uuid.uuid4()), text, meta, unit(rng.normal(size=DIM)), None))
    return out


async def test_a_file_in_two_versions_is_read_one_version_at_a_time(store: VectorStore) -> None:
    await store.upsert([*_points(OLD, None), *_points(NEW, "g2")])
    assert [c.content for c in await file_chunks(store, "kb-x", "doc", generation="")] == OLD
    assert [c.content for c in await file_chunks(store, "kb-x", "doc", generation="g2")] == NEW
    assert [c.content for c in await file_chunks(store, "kb-x", "doc")] == OLD  # not interleaved
    served = await read_document(store, "kb-x", "doc", generation="g2")
    assert served is not None
    assert served.chunks == len(NEW)
    assert "Alpha beta" in served.text
    assert "eta theta." in served.text
    assert (await read_document(store, "kb-x", "doc", generation="g9")) is None
