"""Sparse groups (``RAGD_STORE__SPARSE_GROUPS``): a collection's BM25 postings are its group's.

Two layouts (``payload.SparseLayout``): ``terms`` (new indexes: each group's term ids of their own
in the one ``text-sparse`` vector) and ``vectors`` (indexes made before 2026-11-28: one named
vector per group).  The contract tests that search are re-run here on stores of either layout
whose manifest has four groups, where the corpus' three collections fall in three different groups
(kb-alpha 3, kb-beta 2, file-gamma 0): their two-collection and unfiltered searches query several
groups (with ``vectors`` one sparse list per group, merged by score, fused in Python, RRF included;
with ``terms`` one list holding each group's ids), and still hold the same formulas against the
store's own dense-alone and sparse-alone lists; a chunk read back carries the model's term ids.
Then what the grouped layouts promise: a term's weight in a collection counts the chunks of its
group only, and each chunk's sparse vector is stored as its layout says.
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
from ragd.types import (
    Document,
    FileRef,
    FusionMethod,
    FusionParams,
    PointFilter,
    SearchMode,
    SparseVector,
    StoredChunk,
    StoreQuery,
)

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
GROUPED = manifest(sparse_groups=GROUPS, sparse_grouping="terms")
GROUPED_AS_VECTORS = manifest(sparse_groups=GROUPS, sparse_grouping="vectors")

__all__ = [
    "test_convex_hybrid_fuses_the_two_lists_by_their_scores",
    "test_hybrid_hits_carry_component_scores_consistent_with_rrf",
    "test_hybrid_without_explain_is_the_same_fused_ranking_minus_components",
    "test_optimize_after_a_bulk_write_keeps_everything_searchable",
    "test_search_is_isolated_to_the_requested_tenants",
    "test_sparse_search_uses_idf",
    "test_upsert_then_scroll_returns_content_meta_and_vectors",
]


@pytest.fixture(params=["terms", "vectors"])
def grouping(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(
    backend: str, grouping: str, make_store: StoreFactory, client_log: list[Call]
) -> AsyncIterator[VectorStore]:
    """An open, empty store whose index has four sparse groups, kept as ``grouping`` says."""
    s = empty_store(backend, make_store, client_log)
    await s.open(GROUPED if grouping == "terms" else GROUPED_AS_VECTORS)
    yield s
    await s.close()


def test_a_collection_s_group_is_a_stable_hash_of_its_name() -> None:
    # crc32, not Python's per-process hash: every process and machine agrees on a collection's group
    assert [pl.group_of(n, GROUPS) for n in ("kb-alpha", "kb-beta", "file-gamma")] == [3, 2, 0]
    assert pl.group_of("café", 1000) == zlib.crc32("café".encode()) % 1000
    assert pl.SparseLayout(0).vector_names() == ("text-sparse",)
    assert pl.SparseLayout(3, "terms").vector_names() == ("text-sparse",)
    assert pl.SparseLayout(3, "vectors").vector_names() == (
        "text-sparse-g0",
        "text-sparse-g1",
        "text-sparse-g2",
    )


def _chunk(collection: str, sparse: SparseVector) -> StoredChunk:
    return StoredChunk(id=str(uuid.uuid4()), content="x", meta={"collection_name": collection}, sparse=sparse)


def test_terms_give_each_group_ids_of_its_own_and_read_back_as_the_model_s() -> None:
    layout = pl.SparseLayout(GROUPS, "terms")
    vector = SparseVector((0, 7, 2**32 - 1), (1.0, 2.0, 3.0))
    stored = {c: layout.stored(_chunk(c, vector), vector) for c in ("kb-alpha", "kb-beta", "file-gamma")}
    assert {name for name, _ in stored.values()} == {"text-sparse"}
    ids = {c: set(v.indices) for c, (_, v) in stored.items()}
    assert ids["kb-alpha"].isdisjoint(ids["kb-beta"])
    assert ids["kb-beta"].isdisjoint(ids["file-gamma"])
    for collection, (_, v) in stored.items():
        assert list(v.indices) == sorted(v.indices)
        assert all(0 <= i < 2**32 for i in v.indices)
        back = layout.read_back({"text-sparse": v}, {"meta": {"collection_name": collection}})
        assert back == vector
    # two collections of one group share its ids; the other layouts store the model's ids
    same_group = next(n for n in (f"kb-{i}" for i in range(100)) if pl.group_of(n, GROUPS) == 3)
    assert layout.stored(_chunk(same_group, vector), vector) == stored["kb-alpha"]
    assert pl.SparseLayout(GROUPS, "vectors").stored(_chunk("kb-alpha", vector), vector) == (
        "text-sparse-g3",
        vector,
    )
    assert pl.SparseLayout(0).stored(_chunk("kb-alpha", vector), vector) == ("text-sparse", vector)


def test_a_search_queries_the_groups_of_its_collections() -> None:
    vector = SparseVector((5, 9), (1.0, 0.5))
    by_vectors = pl.SparseLayout(GROUPS, "vectors")
    two = PointFilter(collection_names=("kb-alpha", "kb-beta"))
    assert by_vectors.queries(PointFilter(collection_names=("kb-alpha",)), vector) == [
        ("text-sparse-g3", vector)
    ]
    assert by_vectors.queries(two, vector) == [("text-sparse-g2", vector), ("text-sparse-g3", vector)]
    assert [n for n, _ in by_vectors.queries(PointFilter(), vector)] == list(by_vectors.vector_names())
    assert [n for n, _ in by_vectors.queries(PointFilter(file_id="f"), vector)] == list(
        by_vectors.vector_names()
    )
    by_terms = pl.SparseLayout(GROUPS, "terms")
    alpha = by_terms.stored(_chunk("kb-alpha", vector), vector)[1]
    beta = by_terms.stored(_chunk("kb-beta", vector), vector)[1]
    assert by_terms.queries(PointFilter(collection_names=("kb-alpha",)), vector) == [("text-sparse", alpha)]
    ((name, both),) = by_terms.queries(two, vector)  # one list: each group's ids
    assert name == "text-sparse"
    assert set(both.indices) == set(alpha.indices) | set(beta.indices)
    ((_, every),) = by_terms.queries(PointFilter(), vector)
    assert len(every.indices) == GROUPS * len(vector.indices)
    for layout in (by_vectors, by_terms):
        assert layout.queries(PointFilter(collection_names=()), vector) == []
    # where two groups' shifted ids meet, the query still holds each id once
    clash = (
        pl._term_offset(3) - pl._term_offset(2) + 5
    ) % 2**32  # group 2's id of term `clash` == group 3's of 5
    meeting = SparseVector((5, clash), (1.0, 0.25))
    ((_, both_groups),) = by_terms.queries(two, meeting)
    assert len(set(both_groups.indices)) == len(both_groups.indices) == 3
    assert pl.SparseLayout(0).queries(PointFilter(collection_names=("kb-alpha",)), vector) == [
        ("text-sparse", vector)
    ]


async def _stored_vectors(store: VectorStore, point_id: str) -> dict[str, Any]:
    """The named vectors the engine holds for one point, as stored."""
    if isinstance(store, EdgeStore):
        (record,) = store._require_shard().retrieve([uuid.UUID(point_id)], False, True)
        return dict(record.vector)
    assert isinstance(store, QdrantStore)
    client = store._require_client()
    (record,) = await client.retrieve(store.collection, [point_id], with_vectors=True)
    assert isinstance(record.vector, dict)
    return dict(record.vector)


async def test_each_chunk_s_sparse_vector_is_stored_as_its_layout_says(
    store: VectorStore, grouping: str
) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    layout = pl.SparseLayout(GROUPS, grouping)
    for collection, group in (("kb-alpha", 3), ("kb-beta", 2), ("file-gamma", 0)):
        point = next(c for c in data.chunks if c.meta["collection_name"] == collection)
        assert point.sparse is not None
        held = await _stored_vectors(store, point.id)
        name = "text-sparse" if grouping == "terms" else f"text-sparse-g{group}"
        assert set(held) == {"text-dense", name}
        want = layout.stored(point, point.sparse)[1]
        assert list(held[name].indices) == list(want.indices)
        assert list(held[name].values) == pytest.approx(list(want.values))
        if grouping == "terms":
            assert list(held[name].indices) != list(point.sparse.indices)


async def test_a_term_s_weight_counts_the_chunks_of_its_group_only(
    backend: str, grouping: str, tmp_path: Path, make_store: StoreFactory, client_log: list[Call]
) -> None:
    """The same collection beside another group's chunks, once holding a rare term of it and once
    not: in a grouped index the rare term keeps its weight (its postings are the group's); in the
    one-vector layout it loses it (the control, so the comparison can tell)."""
    data = corpus()
    alpha = [c for c in data.chunks if c.meta["collection_name"] == "kb-alpha"]
    rare = 1_000_003
    alpha = [dataclasses.replace(alpha[0], sparse=SparseVector((rare,), (1.0,))), *alpha[1:]]

    def crowd(with_rare: bool) -> list[StoredChunk]:
        terms = (rare, 1_000_004) if with_rare else (1_000_004, 1_000_005)
        return [
            dataclasses.replace(
                c,
                id=str(uuid.uuid4()),
                sparse=SparseVector(terms, (1.0, 1.0)),
                meta={"collection_name": "kb-beta"},
            )
            for c in data.chunks
        ]

    query = StoreQuery(
        PointFilter(collection_names=("kb-alpha",)), limit=3, sparse=SparseVector((rare,), (1.0,))
    )
    layouts = {"grouped": GROUPED if grouping == "terms" else GROUPED_AS_VECTORS, "one vector": manifest()}
    scores: dict[tuple[str, bool], float] = {}
    for label, wanted in layouts.items():
        for with_rare in (False, True):
            if backend == "edge":
                s: VectorStore = EdgeStore(tmp_path / f"{label}-{with_rare}", "ingestion_files")
            else:
                s = empty_store(backend, make_store, client_log)
                if backend == "server":
                    pytest.skip("needs four indexes; the server run covers the contract tests")
            await s.open(wanted)
            try:
                await s.upsert([*alpha, *crowd(with_rare)])
                (hit, *_) = await s.search(query)
                assert hit.id == alpha[0].id
                scores[label, with_rare] = hit.score
            finally:
                await s.close()
    assert scores["grouped", True] == pytest.approx(scores["grouped", False])
    assert scores["one vector", True] < scores["one vector", False] * 0.8


async def test_a_collection_s_scores_do_not_move_when_another_group_grows(
    store: VectorStore, grouping: str
) -> None:
    """With groups as vectors IDF is counted per group entirely: another group's chunks (here
    sharing every query term) change neither the ranking nor the BM25 scores of a collection in its
    own group.  (With groups as terms, the number of chunks in the index still counts: the test
    above is what holds there.)"""
    if grouping == "terms":
        pytest.skip("groups as terms count the index's chunks in IDF (the test above)")
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
        assert (stored["sparse_groups"], stored["sparse_grouping"]) == (GROUPS, "terms")
        plain = EdgeStore(tmp_path / "plain", "ingestion_files")
        await plain.open(manifest())
        await plain.close()
        plain_stored = json.loads((tmp_path / "plain/qdrant/ingestion_files" / MANIFEST_FILE).read_text())
        assert "sparse_groups" not in plain_stored
        assert "sparse_grouping" not in plain_stored


async def test_an_index_of_groups_as_vectors_is_opened_as_it_was_made(
    make_store: StoreFactory, backend: str, tmp_path: Path
) -> None:
    """New grouped indexes keep groups as terms; one made before (groups as vectors, its manifest
    without ``sparse_grouping``) opens under the same settings, and is read and written as made."""
    data = corpus()
    first = make_store()
    await first.open(GROUPED_AS_VECTORS)
    await first.upsert(data.chunks[:6])
    await first.close()
    if backend == "edge":
        stored = json.loads((tmp_path / "data/qdrant/ingestion_files" / MANIFEST_FILE).read_text())
        assert stored["sparse_groups"] == GROUPS
        assert "sparse_grouping" not in stored
    again = make_store()
    await again.open(GROUPED)  # what the settings make now: groups as terms
    try:
        await again.upsert(data.chunks[6:])
        point = next(c for c in data.chunks[6:] if c.meta["collection_name"] == "kb-alpha")
        assert set(await _stored_vectors(again, point.id)) == {"text-dense", "text-sparse-g3"}
        assert point.sparse is not None
        hits = await again.search(
            StoreQuery(PointFilter(collection_names=("kb-alpha",)), 3, sparse=point.sparse)
        )
        assert hits[0].id == point.id
        chunks, _ = await again.scroll(PointFilter(), limit=100, with_vectors=True)
        read = {c.id: c.sparse for c in chunks}
        assert read.keys() == {c.id for c in data.chunks}
        for c in data.chunks:  # the model's term ids (the engine keeps float32 weights)
            got = read[c.id]
            assert c.sparse is not None
            assert got is not None
            assert got.indices == c.sparse.indices
            assert got.values == pytest.approx(c.sparse.values, rel=1e-6)
    finally:
        await again.close()


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
        assert (stored["sparse_groups"], stored["sparse_grouping"]) == (GROUPS, "terms")
