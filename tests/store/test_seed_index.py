"""An index the reference ingestion service wrote (seed 000; contracts.md §2.7) is never adopted:
ragd refuses to open it with INDEX_MISMATCH saying why, and writes nothing to it; ragd's own index
can sit beside it on the same Qdrant (another RAGD_STORE__COLLECTION) while files are re-ingested
(docs/deployment.md#an-index-the-ingestion-service-wrote).  The seed's collection is built here as
the seed builds it (named ``text-dense`` of e5-large's 1024 dimensions, BM42 ``text-sparse``
without the IDF modifier, ``m=0, payload_m=16``, Haystack's payload), in qdrant-client local mode."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient, models

from ragd.errors import IndexMismatch
from ragd.store.qdrant_store import QdrantStore
from ragd.types import PointFilter

from .data import manifest

SEED = "ingestion_files"
HAYSTACK_NS = uuid.UUID("3896d314-1e95-4a3a-b45a-945f9f0b541d")
E5_DIM = 1024


def seed_point(i: int, rng: np.random.Generator) -> models.PointStruct:
    doc_id = f"{i:064x}"  # Haystack's sha256 document id
    return models.PointStruct(
        id=uuid.uuid5(HAYSTACK_NS, doc_id).hex,
        vector={
            "text-dense": rng.normal(size=E5_DIM).tolist(),
            "text-sparse": models.SparseVector(indices=[3, 17, 101 + i], values=[0.4, 0.2, 0.9]),
        },
        payload={
            "id": doc_id,
            "content": f"Chunk {i} of the report.",
            "blob": None,
            "score": None,
            "meta": {
                "file_id": "abc",
                "filename": "report.pdf",
                "name": "report.pdf",
                "source": "report.pdf",
                "collection_name": "file-abc",
                "collection_type": "file",
                "user_id": "u-1",
                "ingest_version": "0f" * 16,
                "split_id": i,
            },
        },
    )


async def build_seed_index(path: Path) -> None:
    client = AsyncQdrantClient(path=str(path))
    try:
        await client.create_collection(
            SEED,
            vectors_config={"text-dense": models.VectorParams(size=E5_DIM, distance=models.Distance.COSINE)},
            sparse_vectors_config={
                "text-sparse": models.SparseVectorParams(index=models.SparseIndexParams())
            },
            hnsw_config=models.HnswConfigDiff(m=0, payload_m=16),
        )
        rng = np.random.default_rng(0)
        await client.upsert(SEED, [seed_point(i, rng) for i in range(3)])
    finally:
        await client.close()


async def seed_state(path: Path) -> tuple[int, object, object]:
    client = AsyncQdrantClient(path=str(path))
    try:
        info = await client.get_collection(SEED)
        count = (await client.count(SEED)).count
        return count, info.config.metadata, info.config.params.vectors
    finally:
        await client.close()


async def test_the_seeds_index_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    where = tmp_path / "qdrant"
    await build_seed_index(where)
    before = await seed_state(where)
    store = QdrantStore(path=where, collection=SEED)
    with pytest.raises(IndexMismatch, match="no ragd manifest"):
        await store.open(manifest())
    await store.close()
    assert await seed_state(where) == before  # nothing written: no manifest, no point, no index
    assert before[0] == 3


async def test_ragds_index_sits_beside_the_seeds_while_files_are_re_ingested(tmp_path: Path) -> None:
    where = tmp_path / "qdrant"
    await build_seed_index(where)
    before = await seed_state(where)
    ours = QdrantStore(path=where, collection="ragd_files")  # RAGD_STORE__COLLECTION=ragd_files
    await ours.open(manifest())
    try:
        assert await ours.count(PointFilter()) == 0
    finally:
        await ours.close()
    assert await seed_state(where) == before
