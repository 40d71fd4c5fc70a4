"""Qdrant Edge skips the disabled-points condition while no point is disabled, and never wrongly.

The engine pays for ``must_not meta.disabled == true`` on every prefetch even when it matches
nothing, so the embedded store (the only process with the shard open) tracks whether any point
may be disabled.  These tests drive every write that can change that and check both the flag and
what searches return; the contract suite (``test_store_contract_disabled.py``) checks the
search results of the same writes on both adapters.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragd.store import payload as pl
from ragd.store.edge_store import EdgeStore
from ragd.types import PointFilter, SparseVector, StoreQuery

from .data import Corpus, corpus, manifest

FILE = "kb-beta-file-1"
OTHER = "kb-alpha-file-0"


async def _visible(store: EdgeStore, data: Corpus) -> set[str]:
    """The ids every search mode returns (dense, sparse and hybrid agree)."""
    chunk = data.chunks[0]
    terms = sorted({i for c in data.chunks if c.sparse is not None for i in c.sparse.indices})
    sparse = SparseVector(tuple(terms), (1.0,) * len(terms))
    found = []
    for dense, sparse_vec in ((chunk.dense, None), (None, sparse), (chunk.dense, sparse)):
        query = StoreQuery(PointFilter(), limit=500, dense=dense, sparse=sparse_vec, prefetch_limit=500)
        found.append({h.id for h in await store.search(query)})
    assert found[0] == found[1] == found[2]
    return found[0]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EdgeStore]:
    opened = EdgeStore(tmp_path)
    await opened.open(manifest())
    yield opened
    await opened.close()


async def test_every_write_that_disables_or_enables_keeps_the_flag_and_the_results_right(
    store: EdgeStore,
) -> None:
    data = corpus()
    everything = {c.id for c in data.chunks}
    file_ids = data.ids_where(file_id=FILE)
    assert not store.may_hold_disabled  # a new, empty store
    await store.upsert(data.chunks)
    assert not store.may_hold_disabled
    assert await _visible(store, data) == everything

    assert await store.set_disabled(PointFilter(file_id=FILE), True) == len(file_ids)
    assert store.may_hold_disabled
    assert await _visible(store, data) == everything - file_ids

    assert await store.set_disabled(PointFilter(file_id=FILE), False) == len(file_ids)
    assert not store.may_hold_disabled
    assert await _visible(store, data) == everything

    flagged = [
        dataclasses.replace(c, meta={**c.meta, "disabled": True}) for c in data.chunks if c.id in file_ids
    ]
    await store.upsert(flagged)  # a re-ingest of a disabled file carries the flag
    assert store.may_hold_disabled
    assert await _visible(store, data) == everything - file_ids

    await store.delete(PointFilter(file_id=OTHER))  # some other file: one is still disabled
    others = data.ids_where(file_id=OTHER)
    assert store.may_hold_disabled
    assert await _visible(store, data) == everything - file_ids - others

    await store.delete(PointFilter(file_id=FILE))  # the last disabled point goes
    assert not store.may_hold_disabled
    assert await _visible(store, data) == everything - file_ids - others


async def test_the_flag_is_recounted_when_the_store_opens(tmp_path: Path) -> None:
    data = corpus()
    first = EdgeStore(tmp_path)
    await first.open(manifest())
    await first.upsert(data.chunks)
    await first.set_disabled(PointFilter(file_id=FILE), True)
    await first.close()
    again = EdgeStore(tmp_path)
    await again.open(manifest())
    try:
        assert again.may_hold_disabled
        assert not await _visible(again, data) & data.ids_where(file_id=FILE)
        await again.set_disabled(PointFilter(file_id=FILE), False)
    finally:
        await again.close()
    third = EdgeStore(tmp_path)
    await third.open(manifest())
    try:
        assert not third.may_hold_disabled
        assert await _visible(third, data) == {c.id for c in data.chunks}
    finally:
        await third.close()


async def test_searches_leave_the_condition_out_only_while_nothing_is_disabled(
    store: EdgeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = corpus()
    await store.upsert(data.chunks)
    planned: list[PointFilter] = []
    real_plan = pl.search_plan

    def spy(flt: PointFilter) -> pl.FilterPlan:
        planned.append(flt)
        return real_plan(flt)

    monkeypatch.setattr(pl, "search_plan", spy)
    query = StoreQuery(PointFilter(collection_names=("kb-beta",)), limit=5, dense=data.chunks[0].dense)
    await store.search(query)
    assert planned == []  # nothing disabled: the plain filter
    await store.set_disabled(PointFilter(file_id=FILE), True)
    await store.search(query)
    assert planned == [query.filter]


async def test_concurrent_disables_and_enables_never_expose_a_disabled_point(store: EdgeStore) -> None:
    """Enabling one file recounts while another is being disabled beside it: the recount and
    the disabling write share a lock, so the flag can never end False with a point disabled."""
    data = corpus()
    await store.upsert(data.chunks)
    files = sorted({str(c.meta["file_id"]) for c in data.chunks})
    hidden, toggled = files[0], files[1:]
    hidden_ids = data.ids_where(file_id=hidden)
    for _ in range(5):
        writes = [store.set_disabled(PointFilter(file_id=hidden), True)]
        for name in toggled:
            writes += [store.set_disabled(PointFilter(file_id=name), True)]
            writes += [store.set_disabled(PointFilter(file_id=name), False)]
        await asyncio.gather(*writes)
        for name in toggled:  # leave only `hidden` disabled
            await store.set_disabled(PointFilter(file_id=name), False)
        assert store.may_hold_disabled
        assert not await _visible(store, data) & hidden_ids
        await store.set_disabled(PointFilter(file_id=hidden), False)
        assert not store.may_hold_disabled


class _PausedCount:
    """The real shard, whose count() pauses after counting until the test lets it return."""

    def __init__(self, shard: object) -> None:
        self._shard = shard
        self.counted = threading.Event()
        self.release = threading.Event()

    def count(self, request: object) -> int:
        n: int = self._shard.count(request)  # type: ignore[attr-defined]
        self.counted.set()
        assert self.release.wait(10)
        return n


async def test_a_recount_cannot_overlook_a_disable_that_lands_while_it_counts(store: EdgeStore) -> None:
    """Interleave the two by hand: a recount has counted zero disabled points; a disabling write
    runs before the recount stores its answer.  The write must wait for the recount (one lock),
    so the flag ends up raised and the point stays hidden."""
    data = corpus()
    await store.upsert(data.chunks)
    guard, shard = store._disabled, store._shard
    paused = _PausedCount(shard)
    recount = threading.Thread(target=guard.recount, args=(paused,))
    recount.start()
    assert paused.counted.wait(10)  # zero disabled points counted; the answer is not stored yet

    disable = asyncio.ensure_future(store.set_disabled(PointFilter(file_id=FILE), True))
    await asyncio.sleep(0.3)  # without the lock the write would finish here and the recount land after it
    paused.release.set()
    await asyncio.to_thread(recount.join, 10)
    assert await disable == len(data.ids_where(file_id=FILE))
    assert guard.possible
    assert not await _visible(store, data) & data.ids_where(file_id=FILE)
