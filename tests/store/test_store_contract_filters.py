"""A user's filter expression, part of the VectorStore contract: run on Qdrant Edge and qdrant-client.

Each filter is parsed by the one parser (:mod:`ragd.retrieve.filters`) and must admit exactly the
points a plain-Python predicate over the same payloads picks, on count, scroll and search, always
ANDed with the scope (a ``should`` naming another collection never widens it).  A metadata update
(:meth:`VectorStore.set_meta`) changes what a filter admits without touching the vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from ragd.errors import InvalidRequest
from ragd.retrieve.filters import parse_filter
from ragd.store.base import VectorStore
from ragd.store.payload import IndexKind, field_index
from ragd.types import HiddenVersions, PointFilter, StoredChunk, StoreQuery

from .data import corpus
from .test_store_contract import all_points

Meta = Mapping[str, Any]
CUSTOMERS = ("acme", "globex", "initech")


def _with_metadata(chunks: list[StoredChunk]) -> list[StoredChunk]:
    """Each chunk gets its file's user metadata (tags and typed fields); every fourth file none."""
    files = sorted({str(c.meta["file_id"]) for c in chunks})
    out = []
    for chunk in chunks:
        i = files.index(str(chunk.meta["file_id"]))
        meta = dict(chunk.meta)
        if i % 4 != 3:
            meta["tags"] = ["invoice"] if i % 2 else ["contract", "signed"]
            meta["fields"] = {
                "customer": CUSTOMERS[i % 3],
                "amount": i * 25.0,
                "year": 2019 + i % 6,
                "paid": i % 3 != 0,
                "issued": f"2024-{1 + i:02d}-15T00:00:00Z",
            }
        out.append(StoredChunk(chunk.id, chunk.content, meta, chunk.dense, chunk.sparse))
    return out


def _f(meta: Meta) -> Meta:
    value = meta.get("fields")
    return value if isinstance(value, Mapping) else {}


def _tags(meta: Meta) -> list[str]:
    return list(meta.get("tags") or [])


CASES: list[tuple[str, dict[str, Any], Callable[[Meta], bool]]] = [
    (
        "tag value",
        {"must": [{"key": "tags", "match": {"value": "invoice"}}]},
        lambda m: "invoice" in _tags(m),
    ),
    (
        "field any",
        {"must": [{"key": "fields.customer", "match": {"any": ["acme", "initech"]}}]},
        lambda m: _f(m).get("customer") in ("acme", "initech"),
    ),
    (
        "number range",
        {"must": [{"key": "fields.amount", "range": {"gte": 50, "lt": 150}}]},
        lambda m: "amount" in _f(m) and 50 <= _f(m)["amount"] < 150,
    ),
    (
        "integer match",
        {"must": [{"key": "fields.year", "match": {"value": 2021}}]},
        lambda m: _f(m).get("year") == 2021,
    ),
    (
        "boolean",
        {"must": [{"key": "fields.paid", "match": {"value": False}}]},
        lambda m: _f(m).get("paid") is False,
    ),
    (
        "date range",
        {
            "must": [
                {"key": "fields.issued", "range": {"gte": "2024-03-01", "lt": "2024-07-01T00:00:00+00:00"}}
            ]
        },
        lambda m: "issued" in _f(m) and "2024-03-01" <= _f(m)["issued"][:10] < "2024-07-01",
    ),
    ("is_empty", {"must": [{"is_empty": {"key": "tags"}}]}, lambda m: not _tags(m)),
    ("exists", {"must": [{"exists": {"key": "fields.customer"}}]}, lambda m: "customer" in _f(m)),
    (
        "should and must_not, nested",
        {
            "should": [
                {"key": "tags", "match": {"value": "signed"}},
                {
                    "must": [
                        {"key": "fields.year", "range": {"gt": 2022}},
                        {"key": "fields.paid", "match": {"value": True}},
                    ]
                },
            ],
            "must_not": [{"key": "fields.customer", "match": {"value": "globex"}}],
        },
        lambda m: (
            ("signed" in _tags(m) or (_f(m).get("year", 0) > 2022 and _f(m).get("paid") is True))
            and _f(m).get("customer") != "globex"
        ),
    ),
    (
        "built-in file_id",
        {"must": [{"key": "file_id", "match": {"value": "kb-beta-file-1"}}]},
        lambda m: m.get("file_id") == "kb-beta-file-1",
    ),
]


def _ids(chunks: list[StoredChunk], scope: tuple[str, ...], admit: Callable[[Meta], bool]) -> set[str]:
    return {c.id for c in chunks if c.meta["collection_name"] in scope and admit(c.meta)}


@pytest.mark.parametrize(("name", "raw", "admit"), CASES, ids=[c[0] for c in CASES])
async def test_a_filter_admits_what_the_predicate_does_on_count_scroll_and_search(
    store: VectorStore, name: str, raw: dict[str, Any], admit: Callable[[Meta], bool]
) -> None:
    chunks = _with_metadata(corpus().chunks)
    await store.upsert(chunks)
    scope = ("kb-alpha", "kb-beta")
    where = parse_filter(raw)
    want = _ids(chunks, scope, admit)
    assert want, f"{name}: the fixture must hold matching points"
    assert len(want) < len(_ids(chunks, scope, lambda _: True)), f"{name}: the filter must narrow"
    flt = PointFilter(collection_names=scope, where=where)
    assert await store.count(flt) == len(want)
    assert {c.id for c in await all_points(store, flt)} == want
    dense = np.mean([c.dense for c in chunks if c.dense is not None], axis=0)
    hits = await store.search(StoreQuery(filter=flt, limit=500, dense=dense, prefetch_limit=500))
    assert {h.id for h in hits} == want


async def test_a_should_naming_another_collection_never_widens_the_scope(store: VectorStore) -> None:
    chunks = _with_metadata(corpus().chunks)
    await store.upsert(chunks)
    names = sorted({str(c.meta["collection_name"]) for c in chunks})
    mine, other = names[0], names[1]
    where = parse_filter(
        {
            "should": [
                {"key": "collection", "match": {"value": other}},
                {"key": "tags", "match": {"any": ["invoice", "contract"]}},
            ]
        }
    )
    flt = PointFilter(collection_names=(mine,), where=where)
    got = await all_points(store, flt)
    assert got
    assert {c.meta["collection_name"] for c in got} == {mine}
    only_other = PointFilter(
        collection_names=(mine,),
        where=parse_filter({"must": [{"key": "collection", "match": {"value": other}}]}),
    )
    assert await store.count(only_other) == 0


async def test_set_meta_changes_what_a_filter_admits_and_keeps_vectors(store: VectorStore) -> None:
    chunks = _with_metadata(corpus().chunks)
    await store.upsert(chunks)
    file_id = str(chunks[0].meta["file_id"])
    of_file = PointFilter(file_id=file_id)
    before = {c.id: c for c in await all_points(store, of_file, with_vectors=True)}
    urgent = PointFilter(where=parse_filter({"must": [{"key": "tags", "match": {"value": "urgent"}}]}))
    assert await store.count(urgent) == 0

    assert await store.set_meta(of_file, {"tags": ["urgent"], "fields": {"owner": "ops"}}) == len(before)
    after = {c.id: c for c in await all_points(store, of_file, with_vectors=True)}
    assert await store.count(urgent) == len(before)
    for point_id, chunk in after.items():
        assert chunk.meta["tags"] == ["urgent"]
        assert chunk.meta["fields"] == {"owner": "ops"}  # replaced whole: the old fields are gone
        assert chunk.meta["file_id"] == file_id  # other meta keys stay
        assert chunk.dense is not None
        assert before[point_id].dense is not None
        assert np.array_equal(chunk.dense, before[point_id].dense)
    with pytest.raises(InvalidRequest, match="every point"):
        await store.set_meta(PointFilter(), {"tags": []})


async def test_a_field_index_is_made_once_and_filters_answer_the_same_with_it(store: VectorStore) -> None:
    chunks = _with_metadata(corpus().chunks)
    await store.upsert(chunks)
    scope = ("kb-alpha", "kb-beta")
    before = {
        name: await store.count(PointFilter(collection_names=scope, where=parse_filter(raw)))
        for name, raw, _ in CASES
    }
    for name, kind in (
        ("amount", IndexKind.FLOAT),
        ("issued", IndexKind.DATETIME),
        ("customer", IndexKind.KEYWORD),
    ):
        assert await store.ensure_index(field_index(name, kind)) is True
        assert await store.ensure_index(field_index(name, kind)) is False
    for name, raw, admit in CASES:
        assert (
            await store.count(PointFilter(collection_names=scope, where=parse_filter(raw))) == before[name]
        ), name
        assert before[name] == len(_ids(chunks, scope, admit)), name


def _two_versions(chunks: list[StoredChunk]) -> list[StoredChunk]:
    """Every ``kb-alpha`` chunk also as version ``g2`` (``meta.generation``, its own id), as a
    migration writes it beside the untagged version."""
    extra = [
        StoredChunk(f"{c.id[:-4]}beef", c.content, {**c.meta, "generation": "g2"}, c.dense, c.sparse)
        for c in chunks
        if c.meta["collection_name"] == "kb-alpha"
    ]
    return [*chunks, *extra]


async def test_versions_scope_reads_and_hidden_versions_leave_only_their_collection(
    store: VectorStore,
) -> None:
    chunks = _two_versions(corpus().chunks)
    await store.upsert(chunks)
    alpha = [c for c in chunks if c.meta["collection_name"] == "kb-alpha"]
    untagged = {c.id for c in alpha if "generation" not in c.meta}
    tagged = {c.id for c in alpha if c.meta.get("generation") == "g2"}
    assert untagged
    assert len(tagged) == len(untagged)
    scope = ("kb-alpha",)
    assert {
        c.id for c in await all_points(store, PointFilter(collection_names=scope, generation=""))
    } == untagged
    assert {
        c.id for c in await all_points(store, PointFilter(collection_names=scope, generation="g2"))
    } == tagged
    assert await store.count(PointFilter(collection_names=scope, generation="g9")) == 0

    both = ("kb-alpha", "kb-beta")
    beta = {c.id for c in chunks if c.meta["collection_name"] == "kb-beta"}
    dense = np.mean([c.dense for c in chunks if c.dense is not None], axis=0)
    for hidden, visible in (("", tagged), ("g2", untagged)):
        flt = PointFilter(collection_names=both, hidden=(HiddenVersions("kb-alpha", (hidden,)),))
        assert await store.count(flt) == len(visible) + len(beta)
        hits = await store.search(StoreQuery(filter=flt, limit=500, dense=dense, prefetch_limit=500))
        assert {h.id for h in hits} == visible | beta  # kb-beta's untagged points stay
    gone = PointFilter(collection_names=both, hidden=(HiddenVersions("kb-alpha", ("", "g2")),))
    assert {c.id for c in await all_points(store, gone)} == beta
    with_user_filter = PointFilter(
        collection_names=both,
        hidden=(HiddenVersions("kb-alpha", ("",)),),
        where=parse_filter({"must": [{"key": "collection", "match": {"value": "kb-alpha"}}]}),
    )
    assert {c.id for c in await all_points(store, with_user_filter)} == tagged
