"""The disabled flag, part of the VectorStore contract: run on Qdrant Edge and qdrant-client alike.

A disabled point keeps its vectors and payload; searches (every mode, every prefetch) leave it
out, while count, scroll, delete and facet still see it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ragd.errors import InvalidRequest
from ragd.store import payload as pl
from ragd.store.base import VectorStore
from ragd.types import Hit, PointFilter, SparseVector, StoreQuery

from .conftest import Call, StoreFactory
from .data import Corpus, corpus, manifest
from .test_store_contract import all_points, indexes_seen

FILE = "kb-beta-file-1"
BETA = PointFilter(collection_names=("kb-beta",))


def _query(data: Corpus, mode: str, flt: PointFilter) -> StoreQuery:
    """A query that finds every chunk of FILE: one chunk's dense vector, all their terms."""
    chunks = [c for c in data.chunks if c.meta["file_id"] == FILE]
    terms = sorted({i for c in chunks if c.sparse is not None for i in c.sparse.indices})
    dense = chunks[2].dense if mode != "sparse" else None
    sparse = SparseVector(tuple(terms), (1.0,) * len(terms)) if mode != "dense" else None
    return StoreQuery(
        filter=flt, limit=100, dense=dense, sparse=sparse, prefetch_limit=100, explain=mode != "hybrid-plain"
    )


def _same_scores(got: list[Hit], want: list[Hit]) -> bool:
    """The same points with the same scores and components (local mode's numpy sums vary ~1e-8)."""
    wanted = {h.id: h for h in want}
    if {h.id for h in got} != wanted.keys():
        return False
    for hit in got:
        other = wanted[hit.id]
        pairs = [(hit.score, other.score), (hit.scores.dense, other.scores.dense)]
        pairs.append((hit.scores.sparse, other.scores.sparse))
        if any(
            (a is None) != (b is None) or (a is not None and a != pytest.approx(b, abs=1e-6))
            for a, b in pairs
        ):
            return False
    return True


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid", "hybrid-plain"])
@pytest.mark.parametrize("flt", [PointFilter(), BETA], ids=["unfiltered", "one-tenant"])
async def test_a_disabled_file_leaves_every_search_and_comes_back_with_the_same_scores(
    store: VectorStore, mode: str, flt: PointFilter
) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    gone = data.ids_where(file_id=FILE)
    query = _query(data, mode, flt)
    before = await store.search(query)
    assert gone <= {h.id for h in before}

    assert await store.set_disabled(PointFilter(file_id=FILE), True) == len(gone)
    hidden = await store.search(query)
    assert hidden
    assert not gone & {h.id for h in hidden}
    if mode in ("dense", "sparse"):  # the rest keep their exact scores (IDF counts every point)
        assert _same_scores(hidden, [h for h in before if h.id not in gone])
    else:  # every component list left the file out too: each component score is the path's own
        alone = {h.id: h.score for h in await store.search(dataclasses.replace(query, sparse=None))}
        for hit in hidden:
            assert hit.scores.dense is None or hit.scores.dense == pytest.approx(alone[hit.id], abs=1e-6)

    assert await store.set_disabled(PointFilter(file_id=FILE), False) == len(gone)
    again = await store.search(query)
    assert _same_scores(again, before)
    assert [h.score for h in again] == pytest.approx([h.score for h in before], abs=1e-6)


async def test_count_scroll_facet_and_delete_still_see_disabled_points(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    gone = data.ids_where(file_id=FILE)
    await store.set_disabled(PointFilter(file_id=FILE), True)
    assert await store.count(PointFilter()) == len(data.chunks)
    assert await store.count(PointFilter(file_id=FILE)) == len(gone)
    assert {c.id for c in await all_points(store, PointFilter(file_id=FILE))} == gone
    assert (await store.facet("meta.file_id", BETA))[FILE] == len(gone)
    assert await store.delete(PointFilter(file_id=FILE)) == len(gone)
    assert await store.count(PointFilter()) == len(data.chunks) - len(gone)


async def test_the_flag_is_merged_into_meta_and_nothing_else_changes(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    gone = data.ids_where(file_id=FILE)
    before = {c.id: c for c in await all_points(store, with_vectors=True)}
    await store.set_disabled(PointFilter(file_id=FILE), True)
    after = {c.id: c for c in await all_points(store, with_vectors=True)}
    assert after.keys() == before.keys()
    for point_id, was in before.items():
        now = after[point_id]
        flag = {"disabled": True} if point_id in gone else {}
        assert now.meta == {**was.meta, **flag}
        assert now.content == was.content
        assert now.dense is not None
        assert was.dense is not None
        np.testing.assert_array_equal(now.dense, was.dense)
        assert now.sparse == was.sparse
    await store.set_disabled(PointFilter(file_id=FILE), False)
    enabled = {c.id: c.meta for c in await all_points(store)}
    assert all(enabled[i] == {**before[i].meta, "disabled": False} for i in gone)


async def test_the_flag_follows_the_filter_by_ids_and_by_collection(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    two = tuple(sorted(data.ids_where(file_id=FILE)))[:2]
    assert await store.set_disabled(PointFilter(ids=two), True) == 2
    assert await store.set_disabled(PointFilter(collection_names=("kb-alpha",)), True) == len(
        data.ids_where(collection_name="kb-alpha")
    )
    query = StoreQuery(filter=PointFilter(), limit=100, dense=data.chunks[0].dense)
    hits = {h.id for h in await store.search(query)}
    assert hits == {c.id for c in data.chunks} - set(two) - data.ids_where(collection_name="kb-alpha")


async def test_a_filter_that_matches_nothing_changes_nothing(store: VectorStore) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    assert await store.set_disabled(PointFilter(file_id="no-such-file"), True) == 0
    assert await store.set_disabled(PointFilter(collection_names=()), True) == 0
    assert (
        await store.set_disabled(PointFilter(collection_names=("kb-beta",), file_id="kb-alpha-file-0"), True)
        == 0
    )
    with pytest.raises(InvalidRequest, match="every point"):
        await store.set_disabled(PointFilter(), True)
    assert all("disabled" not in c.meta for c in await all_points(store))
    query = StoreQuery(filter=PointFilter(), limit=100, dense=data.chunks[0].dense)
    assert len(await store.search(query)) == len(data.chunks)


async def test_a_flag_written_with_the_chunk_hides_it_and_an_upsert_without_it_shows_it(
    store: VectorStore,
) -> None:
    data = corpus()
    first = data.chunks[0]
    flagged = dataclasses.replace(first, meta={**first.meta, "disabled": True})
    await store.upsert([flagged, *data.chunks[1:]])
    query = StoreQuery(filter=PointFilter(), limit=3, dense=first.dense)
    assert first.id not in {h.id for h in await store.search(query)}
    await store.upsert([first])  # an upsert writes the whole payload: the flag is whatever meta says
    assert (await store.search(query))[0].id == first.id


async def test_the_flag_survives_close_and_reopen(make_store: StoreFactory) -> None:
    data = corpus()
    first = make_store()
    await first.open(manifest())
    await first.upsert(data.chunks)
    await first.set_disabled(PointFilter(file_id=FILE), True)
    await first.close()
    again = make_store()
    await again.open(manifest())
    try:
        query = StoreQuery(filter=PointFilter(), limit=100, dense=data.chunks[0].dense)
        assert {h.id for h in await again.search(query)} == {c.id for c in data.chunks} - data.ids_where(
            file_id=FILE
        )
        assert await again.count(PointFilter(file_id=FILE)) == len(data.ids_where(file_id=FILE))
    finally:
        await again.close()


async def test_an_index_made_before_the_flag_gets_its_index_on_open(
    make_store: StoreFactory, client_log: list[Call], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = corpus()
    older = tuple(i for i in pl.PAYLOAD_INDEXES if i.key != pl.DISABLED_KEY)
    with monkeypatch.context() as patch:
        patch.setattr(pl, "PAYLOAD_INDEXES", older)
        old = make_store()
        await old.open(manifest())
        await old.upsert(data.chunks)
        assert pl.DISABLED_KEY not in await indexes_seen(old, client_log)
        await old.close()
    new = make_store()
    await new.open(manifest())
    try:
        assert (await indexes_seen(new, client_log))[pl.DISABLED_KEY] == ("bool", False)
        await new.set_disabled(PointFilter(file_id=FILE), True)
        query = StoreQuery(filter=BETA, limit=100, dense=data.chunks[0].dense)
        assert not data.ids_where(file_id=FILE) & {h.id for h in await new.search(query)}
    finally:
        await new.close()
