"""Sparse groups (``RAGD_STORE__SPARSE_GROUPS``): one BM25 vector per group of collections.

The contract tests that search are re-run here on stores whose manifest has four groups, where the
corpus' three collections fall in three different groups (kb-alpha 3, kb-beta 2, file-gamma 0):
their two-collection and unfiltered searches take the grouped path (one sparse list per group,
merged by score, fused in Python, RRF included), and still hold the same formulas against the
store's own dense-alone and sparse-alone lists.  Then what only the grouped layout promises: a
collection's BM25 scores do not move when another group's chunks arrive, and each chunk's sparse
vector is stored under its collection's group.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragd.bootstrap import open_services
from ragd.errors import IndexMismatch
from ragd.retrieve.search import SearchRequest
from ragd.settings import Settings, StoreSettings
from ragd.store import payload as pl
from ragd.store.base import VectorStore
from ragd.store.edge_store import EdgeStore
from ragd.store.manifest_io import MANIFEST_FILE
from ragd.store.qdrant_store import QdrantStore
from ragd.types import Document, FileRef, FusionMethod, FusionParams, PointFilter, SearchMode, StoreQuery

from .conftest import Call, StoreFactory, empty_store
from .data import corpus, manifest, query_near, random_sparse
from .test_store_contract import (  # re-run on the grouped layout (this module's `store` fixture)
    test_convex_hybrid_fuses_the_two_lists_by_their_scores,
    test_hybrid_hits_carry_component_scores_consistent_with_rrf,
    test_hybrid_without_explain_is_the_same_fused_ranking_minus_components,
    test_optimize_after_a_bulk_write_keeps_everything_searchable,
    test_search_is_isolated_to_the_requested_tenants,
    test_sparse_search_uses_idf,
    test_upsert_then_scroll_returns_content_meta_and_vectors,
)

GROUPS = 4
GROUPED = manifest(sparse_groups=GROUPS)

__all__ = [
    "test_convex_hybrid_fuses_the_two_lists_by_their_scores",
    "test_hybrid_hits_carry_component_scores_consistent_with_rrf",
    "test_hybrid_without_explain_is_the_same_fused_ranking_minus_components",
    "test_optimize_after_a_bulk_write_keeps_everything_searchable",
    "test_search_is_isolated_to_the_requested_tenants",
    "test_sparse_search_uses_idf",
    "test_upsert_then_scroll_returns_content_meta_and_vectors",
]


@pytest.fixture
async def store(backend: str, make_store: StoreFactory, client_log: list[Call]) -> AsyncIterator[VectorStore]:
    """An open, empty store whose index has four sparse groups."""
    s = empty_store(backend, make_store, client_log)
    await s.open(GROUPED)
    yield s
    await s.close()


def test_a_collection_s_group_is_a_stable_hash_of_its_name() -> None:
    assert pl.sparse_vector_names(0) == ("text-sparse",)
    assert pl.sparse_vector_names(3) == ("text-sparse-g0", "text-sparse-g1", "text-sparse-g2")
    # crc32, not Python's per-process hash: every process and machine agrees on a collection's group
    assert [pl.sparse_vector_of(n, GROUPS) for n in ("kb-alpha", "kb-beta", "file-gamma")] == [
        "text-sparse-g3",
        "text-sparse-g2",
        "text-sparse-g0",
    ]
    assert pl.sparse_vector_of("café", 1000) == f"text-sparse-g{zlib.crc32('café'.encode()) % 1000}"
    assert pl.sparse_vector_of("kb-alpha", 0) == "text-sparse"


def test_a_search_queries_the_groups_of_its_collections() -> None:
    assert pl.sparse_vectors_for(PointFilter(collection_names=("kb-alpha",)), GROUPS) == ("text-sparse-g3",)
    assert pl.sparse_vectors_for(PointFilter(collection_names=("kb-alpha", "kb-beta")), GROUPS) == (
        "text-sparse-g2",
        "text-sparse-g3",
    )
    assert pl.sparse_vectors_for(PointFilter(), GROUPS) == pl.sparse_vector_names(GROUPS)
    assert pl.sparse_vectors_for(PointFilter(file_id="f"), GROUPS) == pl.sparse_vector_names(GROUPS)
    assert pl.sparse_vectors_for(PointFilter(collection_names=()), GROUPS) == ()
    assert pl.sparse_vectors_for(PointFilter(collection_names=("kb-alpha",)), 0) == ("text-sparse",)


async def _stored_vector_names(store: VectorStore, point_id: str) -> set[str]:
    """The named vectors the engine holds for one point."""
    if isinstance(store, EdgeStore):
        (record,) = store._require_shard().retrieve([uuid.UUID(point_id)], False, True)
        return set(record.vector)
    assert isinstance(store, QdrantStore)
    client = store._require_client()
    (record,) = await client.retrieve(store.collection, [point_id], with_vectors=True)
    assert isinstance(record.vector, dict)
    return set(record.vector)


async def test_each_chunk_s_sparse_vector_lives_under_its_collection_s_group(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    for collection, group in (("kb-alpha", 3), ("kb-beta", 2), ("file-gamma", 0)):
        point = next(c for c in data.chunks if c.meta["collection_name"] == collection)
        assert await _stored_vector_names(store, point.id) == {"text-dense", f"text-sparse-g{group}"}


async def test_a_collection_s_scores_do_not_move_when_another_group_grows(store: VectorStore) -> None:
    """IDF is counted per group: another group's chunks (here sharing every query term) change
    neither the ranking nor the BM25 scores of a collection in its own group."""
    data = corpus()
    alpha = [c for c in data.chunks if c.meta["collection_name"] == "kb-alpha"]
    await store.upsert(alpha)
    rng = np.random.default_rng(3)
    sparse = random_sparse(rng, terms=40)
    query = StoreQuery(PointFilter(collection_names=("kb-alpha",)), limit=10, sparse=sparse)
    hybrid = dataclasses.replace(query, dense=query_near(rng, data.centers[0]), prefetch_limit=20)
    before = [await store.search(q) for q in (query, hybrid)]
    crowd = [
        dataclasses.replace(c, sparse=sparse, meta={**c.meta, "collection_name": "kb-beta"})
        for c in data.chunks
        if c.meta["collection_name"] == "kb-beta"
    ]
    await store.upsert(crowd)
    after = [await store.search(q) for q in (query, hybrid)]
    for old, new in zip(before, after, strict=True):
        assert old
        assert [(h.id, h.score) for h in new] == [(h.id, h.score) for h in old]
    # two groups' lists are merged by score: the best of both, each scored as in its own group
    beta = await store.search(dataclasses.replace(query, filter=PointFilter(collection_names=("kb-beta",))))
    both = dataclasses.replace(query, filter=PointFilter(collection_names=("kb-alpha", "kb-beta")))
    merged = await store.search(both)
    want = sorted([*after[0], *beta], key=lambda h: -h.score)[: query.limit]
    assert [(h.id, h.score) for h in merged] == [(h.id, h.score) for h in want]
    assert {h.meta["collection_name"] for h in merged} == {"kb-alpha", "kb-beta"}


@pytest.mark.parametrize("method", [FusionMethod.RRF, FusionMethod.CONVEX])
async def test_a_search_of_no_collection_finds_nothing(store: VectorStore, method: FusionMethod) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    rng = np.random.default_rng(4)
    dense, sparse = query_near(rng, data.centers[0]), random_sparse(rng, terms=40)
    nothing = PointFilter(collection_names=())
    fusion = FusionParams(method=method)
    for query in (
        StoreQuery(nothing, limit=5, sparse=sparse),
        StoreQuery(nothing, limit=5, dense=dense, sparse=sparse, fusion=fusion),
    ):
        assert await store.search(query) == []


async def test_the_group_count_is_fixed_in_the_manifest(
    make_store: StoreFactory, backend: str, tmp_path: Path
) -> None:
    first = make_store()
    await first.open(GROUPED)
    await first.upsert(corpus().chunks[:3])
    await first.close()
    for other in (manifest(), manifest(sparse_groups=8)):
        again = make_store()
        with pytest.raises(IndexMismatch, match=r"RAGD_STORE__SPARSE_GROUPS\): index has 4"):
            await again.open(other)
    if backend == "edge":  # the one-vector layout's manifest stays as older ragd wrote it
        stored = json.loads((tmp_path / "data/qdrant/ingestion_files" / MANIFEST_FILE).read_text())
        assert stored["sparse_groups"] == GROUPS
        plain = EdgeStore(tmp_path / "plain", "ingestion_files")
        await plain.open(manifest())
        await plain.close()
        assert "sparse_groups" not in json.loads(
            (tmp_path / "plain/qdrant/ingestion_files" / MANIFEST_FILE).read_text()
        )


async def test_the_setting_reaches_the_index_and_every_search(tmp_path: Path, model_cache: Path) -> None:
    """``RAGD_STORE__SPARSE_GROUPS`` end to end: the served index is grouped, and a hybrid search of
    two collections in two groups finds each one's chunk by its words."""
    settings = Settings(  # type: ignore[call-arg]
        data_dir=tmp_path / "data",
        embedding={"cache_dir": model_cache},
        store=StoreSettings(sparse_groups=GROUPS),
    )
    texts = {
        "kb-alpha": "The alpha protocol requires three approvals from the steering board.",
        "kb-beta": "Beta releases are frozen during the December holidays.",
    }
    async with open_services(settings) as svc:
        for collection, text in texts.items():
            ref = FileRef(file_id=f"f-{collection}", collection_name=collection, name="a.md", source="a.md")
            await svc.ingestor.ingest_document(Document(text=text, extractor="test"), ref)
        for query, want in (
            ("alpha protocol approvals", "kb-alpha"),
            ("december frozen releases", "kb-beta"),
        ):
            for mode in (SearchMode.SPARSE, SearchMode.HYBRID):
                hits = await svc.retriever.search(
                    SearchRequest(query=query, collections=("kb-alpha", "kb-beta"), k=2, mode=mode)
                )
                assert hits[0].meta["collection_name"] == want, (query, mode)
        stored: Any = json.loads(next((tmp_path / "data").glob(f"qdrant/*/{MANIFEST_FILE}")).read_text())
        assert stored["sparse_groups"] == GROUPS
