"""The VectorStore contract, run on Qdrant Edge and on qdrant-client (local mode) alike."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
import pytest

from ragd.errors import IndexMismatch, InvalidRequest, StoreLocked, StoreUnavailable
from ragd.store.base import VectorStore
from ragd.store.edge_store import EdgeStore
from ragd.store.fusion_formula import convex_fusion, rrf_score
from ragd.types import (
    ComponentScores,
    DenseSpace,
    FusionMethod,
    FusionParams,
    Hit,
    PointFilter,
    SparseVector,
    StoredChunk,
    StoreQuery,
)

from .conftest import Call, StoreFactory
from .data import DIM, chunk_id, corpus, manifest, query_near, random_sparse

INDEXED = {
    "meta.collection_name": ("keyword", True),
    "meta.file_id": ("keyword", False),
    "meta.collection_type": ("keyword", False),
    "meta.disabled": ("bool", False),
    "meta.languages": ("keyword", False),
    "meta.split_id": ("integer", False),
    "meta.tags": ("keyword", False),
}


async def indexes_seen(store: VectorStore, client_log: list[Call]) -> dict[str, tuple[str, bool]]:
    """Payload indexes as the engine reports them ({key: (type, is_tenant)})."""
    if isinstance(store, EdgeStore):
        return await store.payload_schema()
    # qdrant-client local mode keeps no payload schema: read what open() asked the client for
    made = [c for c in client_log if c[0] == "create_payload_index"]
    return {
        args[1]: (kwargs["field_schema"].type.value, bool(getattr(kwargs["field_schema"], "is_tenant", None)))
        for _, args, kwargs in made
    }


async def all_points(store: VectorStore, flt: PointFilter | None = None, **kw: Any) -> list[StoredChunk]:
    out: list[StoredChunk] = []
    offset = None
    while True:
        page, offset = await store.scroll(flt or PointFilter(), limit=7, offset=offset, **kw)
        out.extend(page)
        if offset is None:
            return out


async def test_open_creates_payload_indexes_before_the_first_write(
    store: VectorStore, client_log: list[Call]
) -> None:
    assert await indexes_seen(store, client_log) == INDEXED
    await store.upsert(corpus().chunks[:3])
    names = [name for name, _, _ in client_log]
    if names:  # client backend: every index call came before the first upsert
        assert names.index("upsert") > max(i for i, n in enumerate(names) if n == "create_payload_index")


async def test_upsert_then_scroll_returns_content_meta_and_vectors(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    got = await all_points(store, with_vectors=True)
    assert [c.id for c in got] == sorted(c.id for c in data.chunks)
    expected = data.by_id()
    for chunk in got:
        want = expected[chunk.id]
        assert chunk.content == want.content
        assert chunk.meta == {**want.meta, "headers": list(want.meta["headers"])}
        assert chunk.dense is not None
        assert want.dense is not None
        np.testing.assert_allclose(chunk.dense, want.dense, atol=1e-6)
        assert chunk.sparse is not None
        assert want.sparse is not None
        assert chunk.sparse.indices == want.sparse.indices
        np.testing.assert_allclose(chunk.sparse.values, want.sparse.values, rtol=1e-6)


async def test_scroll_without_vectors_and_filtered(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    got = await all_points(store, PointFilter(collection_names=("kb-beta",)))
    assert {c.id for c in got} == data.ids_where(collection_name="kb-beta")
    assert all(c.dense is None and c.sparse is None for c in got)


async def test_upsert_same_id_replaces_the_point(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    first = data.chunks[0]
    await store.upsert([dataclasses.replace(first, content="rewritten")])
    assert await store.count(PointFilter()) == len(data.chunks)
    (point,), _ = await store.scroll(PointFilter(ids=(first.id,)), limit=5)
    assert point.content == "rewritten"


@pytest.mark.parametrize(
    ("flt", "where"),
    [
        (PointFilter(collection_names=("kb-alpha",)), {"collection_name": "kb-alpha"}),
        (PointFilter(file_id="kb-beta-file-1"), {"file_id": "kb-beta-file-1"}),
        (
            PointFilter(collection_names=("kb-alpha", "kb-beta"), file_id="kb-beta-file-2"),
            {"file_id": "kb-beta-file-2"},
        ),
        (PointFilter(collection_names=("kb-alpha",), file_id="kb-beta-file-2"), None),
        (PointFilter(collection_names=()), None),
    ],
)
async def test_count_by_filter(store: VectorStore, flt: PointFilter, where: dict[str, str] | None) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    assert await store.count(flt) == (len(data.ids_where(**where)) if where else 0)
    assert await store.count(PointFilter()) == len(data.chunks)


async def test_a_split_id_range_selects_those_chunks_of_a_file(store: VectorStore) -> None:
    """What a page of the chunk viewer reads: a file's chunks with ``split_id`` in [first, last]."""
    data = corpus()
    await store.upsert(data.chunks)
    flt = PointFilter(collection_names=("kb-alpha",), file_id="kb-alpha-file-1", split_ids=(2, 5))
    got = await all_points(store, flt)
    assert sorted(c.meta["split_id"] for c in got) == [2, 3, 4, 5]
    assert {c.meta["file_id"] for c in got} == {"kb-alpha-file-1"}
    assert await store.count(flt) == 4
    assert await store.count(dataclasses.replace(flt, split_ids=(7, 7))) == 1
    assert await store.count(dataclasses.replace(flt, split_ids=(8, 20))) == 0
    assert await store.count(PointFilter(split_ids=(0, 0))) == 9  # the first chunk of each of 9 files


async def test_count_and_delete_by_ids(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    ids = tuple(c.id for c in data.chunks[:4])
    assert await store.count(PointFilter(ids=ids)) == 4
    assert await store.count(PointFilter(ids=ids, collection_names=("kb-beta",))) == 0
    assert await store.delete(PointFilter(ids=ids)) == 4
    assert await store.count(PointFilter()) == len(data.chunks) - 4
    assert await store.delete(PointFilter(ids=ids)) == 0


async def test_delete_by_file_id_removes_only_that_file(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    gone = data.ids_where(file_id="kb-alpha-file-0")
    assert await store.delete(PointFilter(file_id="kb-alpha-file-0")) == len(gone)
    left = {c.id for c in await all_points(store)}
    assert left == {c.id for c in data.chunks} - gone


async def test_delete_by_collection_names(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    gone = data.ids_where(collection_name="kb-alpha") | data.ids_where(collection_name="file-gamma")
    assert await store.delete(PointFilter(collection_names=("kb-alpha", "file-gamma"))) == len(gone)
    assert {c.id for c in await all_points(store)} == data.ids_where(collection_name="kb-beta")


async def test_delete_with_an_empty_filter_is_refused(store: VectorStore) -> None:
    await store.upsert(corpus().chunks[:2])
    with pytest.raises(InvalidRequest, match="every point"):
        await store.delete(PointFilter())
    assert await store.count(PointFilter()) == 2


def _queries(data_seed: int = 3) -> list[tuple[str, StoreQuery]]:
    data = corpus()
    rng = np.random.default_rng(data_seed)
    dense = query_near(rng, data.centers[1])
    sparse = data.chunks[5].sparse
    flt = PointFilter(collection_names=("kb-beta",))
    return [
        ("dense", StoreQuery(filter=flt, limit=5, dense=dense)),
        ("sparse", StoreQuery(filter=flt, limit=5, sparse=sparse)),
        ("hybrid", StoreQuery(filter=flt, limit=5, dense=dense, sparse=sparse, prefetch_limit=20)),
    ]


@pytest.mark.parametrize(("mode", "query"), _queries(), ids=lambda v: v if isinstance(v, str) else "")
async def test_search_is_isolated_to_the_requested_tenants(
    store: VectorStore, mode: str, query: StoreQuery
) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    hits = await store.search(query)
    allowed = data.ids_where(collection_name="kb-beta")
    assert hits
    assert len(hits) <= query.limit
    assert {h.id for h in hits} <= allowed
    assert all(h.meta["collection_name"] == "kb-beta" for h in hits)
    # a point of another tenant with the exact query vector must still not leak in
    intruder = dataclasses.replace(
        data.chunks[0],
        id=chunk_id("intruder", 0),
        dense=query.dense if query.dense is not None else data.chunks[0].dense,
    )
    if query.sparse is not None:
        intruder = dataclasses.replace(intruder, sparse=query.sparse)
    await store.upsert([intruder])
    assert intruder.id not in {h.id for h in await store.search(query)}
    unfiltered = dataclasses.replace(query, filter=PointFilter())
    assert intruder.id in {h.id for h in await store.search(unfiltered)}


async def test_dense_search_scores_are_cosine(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    target = data.chunks[10]
    hits = await store.search(StoreQuery(filter=PointFilter(), limit=3, dense=target.dense))
    assert hits[0].id == target.id
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[0].content == target.content
    assert hits[0].meta["file_id"] == target.meta["file_id"]
    for hit in hits:
        assert hit.scores.dense == hit.score
        assert hit.scores.sparse is None
        assert hit.scores.fused is None
        want = float(np.dot(data.by_id()[hit.id].dense, target.dense))  # type: ignore[arg-type]
        assert hit.score == pytest.approx(want, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_sparse_search_uses_idf(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    rare, common = 1_000_001, 1_000_002  # fresh term ids: "rare" in 1 chunk, "common" in all of kb-alpha
    alpha = [c for c in data.chunks if c.meta["collection_name"] == "kb-alpha"]
    tagged = [
        dataclasses.replace(c, sparse=_with_terms(c, {common: 1.0, **({rare: 1.0} if i == 0 else {})}))
        for i, c in enumerate(alpha)
    ]
    await store.upsert(tagged)
    hits = await store.search(
        StoreQuery(filter=PointFilter(), limit=3, sparse=SparseVector((rare, common), (1.0, 1.0)))
    )
    assert hits[0].id == tagged[0].id
    assert hits[0].scores == ComponentScores(sparse=hits[0].score)
    assert hits[0].score > hits[1].score  # the rare term weighs more than the common one


def _with_terms(chunk: StoredChunk, extra: dict[int, float]) -> SparseVector:
    assert chunk.sparse is not None
    pairs = dict(zip(chunk.sparse.indices, chunk.sparse.values, strict=True)) | extra
    ordered = sorted(pairs.items())
    return SparseVector(tuple(i for i, _ in ordered), tuple(v for _, v in ordered))


@pytest.mark.parametrize("fusion", [FusionParams(), FusionParams(k=60), FusionParams(k=2, dense_weight=0.25)])
async def test_hybrid_hits_carry_component_scores_consistent_with_rrf(
    store: VectorStore, fusion: FusionParams
) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    rng = np.random.default_rng(11)
    query = StoreQuery(
        filter=PointFilter(collection_names=("kb-alpha", "file-gamma")),
        limit=8,
        dense=query_near(rng, data.centers[2]),
        sparse=random_sparse(rng, terms=40),
        prefetch_limit=15,
        fusion=fusion,
    )
    hits = await store.search(query)
    dense_list = await store.search(dataclasses.replace(query, sparse=None, limit=15))
    sparse_list = await store.search(dataclasses.replace(query, dense=None, limit=15))
    assert hits
    stored = {c.id: c.dense for c in data.chunks}
    only_sparse = 0
    for hit in hits:
        assert hit.scores.fused == hit.score
        assert hit.scores.dense is not None  # from the dense list, else the stored vector's cosine
        listed = _score_in(dense_list, hit.id)
        if listed is not None:
            assert hit.scores.dense == listed
        else:
            only_sparse += 1
            vector = stored[hit.id]
            assert vector is not None
            want_cos = float(
                np.dot(query.dense, vector) / (np.linalg.norm(query.dense) * np.linalg.norm(vector))
            )
            assert hit.scores.dense == pytest.approx(want_cos, abs=1e-5)
        assert hit.scores.sparse == _score_in(sparse_list, hit.id)
        ranks = [_rank_in(dense_list, hit.id), _rank_in(sparse_list, hit.id)]
        want = rrf_score(ranks, fusion.k, [fusion.dense_weight, fusion.sparse_weight])
        assert hit.score == pytest.approx(want, rel=1e-5)
    assert only_sparse, "the query should fuse in hits that only the sparse list found"


@pytest.mark.parametrize("weights", [(1.0, 1.0), (1.2, 0.8), (0.0, 1.0)])
@pytest.mark.parametrize("explain", [True, False])
async def test_convex_hybrid_fuses_the_two_lists_by_their_scores(
    store: VectorStore, weights: tuple[float, float], explain: bool
) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    rng = np.random.default_rng(13)
    fusion = FusionParams(dense_weight=weights[0], sparse_weight=weights[1], method=FusionMethod.CONVEX)
    query = StoreQuery(
        filter=PointFilter(collection_names=("kb-alpha", "file-gamma")),
        limit=8,
        dense=query_near(rng, data.centers[2]),
        sparse=random_sparse(rng, terms=40),
        prefetch_limit=15,
        fusion=fusion,
        explain=explain,
    )
    hits = await store.search(query)
    dense_list = await store.search(dataclasses.replace(query, sparse=None, limit=15))
    sparse_list = await store.search(dataclasses.replace(query, dense=None, limit=15))
    want = convex_fusion(
        {h.id: h.score for h in dense_list}, {h.id: h.score for h in sparse_list}, *weights, depth=15
    )[:8]
    assert [h.score for h in hits] == pytest.approx([score for _, score in want], rel=1e-5)
    assert {h.id for h in hits} == {point_id for point_id, _ in want}  # ties may swap order
    by_id = {c.id: c for c in data.chunks}
    for hit in hits:
        assert hit.scores.fused == hit.score
        assert hit.scores.sparse == _score_in(sparse_list, hit.id)
        assert hit.scores.dense == _score_in(dense_list, hit.id) or explain
        if explain:  # the listed cosine, else the stored vector's
            assert hit.scores.dense is not None
        assert (hit.vector is not None) is explain
        assert hit.content == by_id[hit.id].content
        assert hit.meta["collection_name"] in ("kb-alpha", "file-gamma")


async def test_hybrid_without_explain_is_the_same_fused_ranking_minus_components(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    rng = np.random.default_rng(5)
    query = StoreQuery(
        filter=PointFilter(collection_names=("kb-alpha",)),
        limit=6,
        dense=query_near(rng, data.centers[1]),
        sparse=random_sparse(rng, terms=40),
        prefetch_limit=12,
    )
    explained = await store.search(query)
    plain = await store.search(dataclasses.replace(query, explain=False))
    assert [h.score for h in plain] == [h.score for h in explained]
    assert {h.id for h in plain} == {h.id for h in explained}  # ties may swap order
    assert all(h.scores == ComponentScores(fused=h.score) for h in plain)


def _score_in(hits: list[Hit], point_id: str) -> float | None:
    return next((h.score for h in hits if h.id == point_id), None)


def _rank_in(hits: list[Hit], point_id: str) -> int | None:
    return next((i + 1 for i, h in enumerate(hits) if h.id == point_id), None)


async def test_optimize_after_a_bulk_write_keeps_everything_searchable(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    await store.optimize()
    assert await store.count(PointFilter()) == len(data.chunks)
    target = data.chunks[7]
    hits = await store.search(
        StoreQuery(filter=PointFilter(), limit=1, dense=target.dense, sparse=target.sparse)
    )
    assert hits[0].id == target.id


async def test_search_needs_a_query_vector(store: VectorStore) -> None:
    with pytest.raises(InvalidRequest, match="dense or a sparse"):
        await store.search(StoreQuery(filter=PointFilter(), limit=3))


async def test_facet_counts_per_collection(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    want = Counter(c.meta["collection_name"] for c in data.chunks)
    assert await store.facet("meta.collection_name", PointFilter()) == dict(want)
    assert await store.facet("meta.file_id", PointFilter(collection_names=("kb-beta",))) == dict(
        Counter(c.meta["file_id"] for c in data.chunks if c.meta["collection_name"] == "kb-beta")
    )
    assert await store.facet("meta.collection_name", PointFilter(), limit=1) in (
        {k: v} for k, v in want.items()
    )
    with pytest.raises(InvalidRequest, match="not an indexed payload key"):
        await store.facet("meta.name", PointFilter())
    # a collection whose points are all deleted is gone from the facet (an engine may keep it at 0)
    await store.delete(PointFilter(collection_names=("kb-beta",)))
    assert "kb-beta" not in await store.facet("meta.collection_name", PointFilter())


async def test_bad_vectors_and_ids_are_refused(store: VectorStore) -> None:
    chunk = corpus().chunks[0]
    with pytest.raises(InvalidRequest, match="shape"):
        await store.upsert([dataclasses.replace(chunk, dense=np.ones(DIM - 1, dtype=np.float32))])
    with pytest.raises(InvalidRequest, match="no dense vector"):
        await store.upsert([dataclasses.replace(chunk, dense=None)])
    with pytest.raises(InvalidRequest, match="not a UUID"):
        await store.upsert([dataclasses.replace(chunk, id="chunk-1")])
    with pytest.raises(InvalidRequest, match="not a UUID"):
        await store.count(PointFilter(ids=("nope",)))
    assert await store.count(PointFilter()) == 0


async def test_reopen_keeps_data_and_manifest(make_store: StoreFactory) -> None:
    data = corpus()
    first = make_store()
    await first.open(manifest())
    await first.upsert(data.chunks)
    await first.close()
    assert not await first.ready()
    again = make_store()
    await again.open(manifest())
    try:
        assert await again.ready()
        assert await again.count(PointFilter()) == len(data.chunks)
        hits = await again.search(StoreQuery(filter=PointFilter(), limit=1, dense=data.chunks[3].dense))
        assert hits[0].id == data.chunks[3].id
    finally:
        await again.close()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dense_model": "intfloat/multilingual-e5-small"}, "dense_model"),
        ({"query_prefix": "query: ", "document_prefix": "passage: "}, "query_prefix"),
        ({"sparse_model": "bm42"}, "sparse_model"),
        ({"dense_dim": 768}, "dense_dim"),
    ],
)
async def test_manifest_mismatch_names_the_field(
    make_store: StoreFactory, change: dict[str, Any], field: str
) -> None:
    first = make_store()
    await first.open(manifest())
    await first.upsert(corpus().chunks[:2])
    await first.close()
    other = make_store()
    with pytest.raises(IndexMismatch, match=field) as info:
        await other.open(manifest(**change))
    assert "new collection" in str(info.value)
    assert not await other.ready()
    again = make_store()  # the failed open left nothing locked or changed
    await again.open(manifest())
    assert await again.count(PointFilter()) == 2
    await again.close()


async def test_second_opener_of_the_same_location_is_locked_out(
    make_store: StoreFactory, backend: str
) -> None:
    if backend == "server":
        pytest.skip("a Qdrant server's collection is shared by every replica: only a local index is locked")
    first = make_store()
    await first.open(manifest())
    try:
        with pytest.raises(StoreLocked, match="another"):
            await make_store().open(manifest())
        assert await first.ready()
    finally:
        await first.close()
    second = make_store()  # closing released the lock
    await second.open(manifest())
    await second.close()


async def test_calls_before_open_say_the_store_is_not_open(make_store: StoreFactory) -> None:
    s = make_store()
    assert not await s.ready()
    with pytest.raises(StoreUnavailable, match="not open"):
        await s.count(PointFilter())
    await s.close()  # closing a never-opened store is harmless


async def test_a_language_filter_keeps_chunks_in_those_languages(store: VectorStore) -> None:
    """``meta.languages`` is a list; a chunk matches when any of its languages is asked for."""
    data = corpus()
    languages = (["en"], ["de"], ["fr", "de"], [])
    tagged = [
        dataclasses.replace(c, meta={**c.meta, "languages": languages[i % 4]} if languages[i % 4] else c.meta)
        for i, c in enumerate(data.chunks)
    ]
    await store.upsert(tagged)
    rng = np.random.default_rng(3)
    query = StoreQuery(
        filter=PointFilter(collection_names=("kb-alpha", "kb-beta"), languages=("de",)),
        limit=50,
        dense=query_near(rng, data.centers[0]),
        sparse=random_sparse(rng, terms=40),
        prefetch_limit=50,
    )
    hits = await store.search(query)
    assert hits
    assert all("de" in h.meta["languages"] for h in hits)
    either = await store.search(dataclasses.replace(query, filter=PointFilter(languages=("en", "fr"))))
    assert {lang for h in either for lang in h.meta["languages"]} & {"en", "fr"}
    assert all({"en", "fr"} & set(h.meta["languages"]) for h in either)
    assert await store.count(PointFilter(languages=("de",))) == sum(
        1 for i in range(len(tagged)) if "de" in languages[i % 4]
    )


SECURE = DenseSpace(name="secure", model="local-e5", dim=5)


async def test_a_named_dense_model_has_a_vector_of_its_own(make_store: StoreFactory) -> None:
    """Points of a dataset that chose another model hold that model's named vector only; a query
    in that space finds them (with their vectors), a default-space query does not."""
    data = corpus()
    store = make_store()
    await store.open(manifest(extra_dense=(SECURE,)))
    try:
        own = np.asarray([1.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
        meta = {"collection_name": "vault"}
        secure = StoredChunk(id=chunk_id("s", 0), content="secret", meta=meta, dense=own, space="secure")
        await store.upsert([*data.chunks[:3], secure])
        with pytest.raises(InvalidRequest, match="no dense model 'other'"):
            await store.upsert([dataclasses.replace(secure, space="other")])
        query = StoreQuery(filter=PointFilter(), limit=5, dense=own, space="secure")
        hits = await store.search(query)
        assert [h.id for h in hits] == [secure.id]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert np.allclose(np.asarray(hits[0].vector), own)
        default = await store.search(StoreQuery(filter=PointFilter(), limit=5, dense=data.chunks[0].dense))
        assert secure.id not in {h.id for h in default}
        stored = {c.id: c for c in await all_points(store, with_vectors=True)}
        assert stored[secure.id].space == "secure"
        assert stored[data.chunks[0].id].space is None
    finally:
        await store.close()
    again = make_store()
    with pytest.raises(IndexMismatch, match="dense models: index has secure=local-e5"):
        await again.open(manifest())
