"""The payload layout: chunk <-> payload, ids, and filters in layout terms."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from ragd.errors import InvalidRequest
from ragd.store import payload as pl
from ragd.types import PointFilter, SparseVector, StoredChunk


def test_payload_is_content_plus_meta_and_json_safe() -> None:
    chunk = StoredChunk(
        id=str(uuid.uuid4()),
        content="text",
        meta={"collection_name": "kb", "headers": ("A", "B"), "page": np.int64(3), "extra": {"t": (1, 2)}},
    )
    assert pl.to_payload(chunk) == {
        "content": "text",
        "meta": {"collection_name": "kb", "headers": ["A", "B"], "page": 3, "extra": {"t": [1, 2]}},
    }
    assert type(pl.to_payload(chunk)["meta"]["page"]) is int


def test_metadata_that_is_not_json_is_refused() -> None:
    chunk = StoredChunk(id=str(uuid.uuid4()), content="t", meta={"when": object()})
    with pytest.raises(InvalidRequest, match="not JSON-safe"):
        pl.to_payload(chunk)


def test_from_point_reads_the_layout_back() -> None:
    raw = uuid.uuid4()
    chunk = pl.from_point(
        raw, {"content": "c", "meta": {"file_id": "f"}}, dense=[0.5, 0.5], sparse=SparseVector((1,), (2.0,))
    )
    assert chunk.id == str(raw)
    assert chunk.content == "c"
    assert chunk.meta == {"file_id": "f"}
    assert chunk.dense is not None
    assert chunk.dense.dtype == np.float32
    assert chunk.sparse == SparseVector((1,), (2.0,))
    empty = pl.from_point(str(raw), None)
    assert (empty.content, empty.meta, empty.dense) == ("", {}, None)


def test_ids_are_uuids_in_any_textual_form_and_come_back_canonical() -> None:
    u = uuid.uuid4()
    assert pl.point_uuid(u.hex) == u
    assert pl.canonical_id(u.hex) == str(u)
    with pytest.raises(InvalidRequest, match="not a UUID"):
        pl.point_uuid("chunk-7")


def test_filter_plan_maps_fields_onto_payload_keys() -> None:
    u = uuid.uuid4()
    plan = pl.filter_plan(PointFilter(collection_names=("a", "b"), file_id="f", ids=(str(u),)))
    assert plan.matches == (
        pl.KeywordMatch("meta.collection_name", ("a", "b")),
        pl.KeywordMatch("meta.file_id", ("f",)),
    )
    assert plan.ids == (u,)
    assert pl.filter_plan(PointFilter()).is_empty
    assert not pl.filter_plan(PointFilter(collection_names=())).is_empty  # matches nothing, not everything
    with pytest.raises(InvalidRequest, match="every point"):
        pl.delete_plan(PointFilter())


def test_the_tenant_key_is_the_only_tenant_index() -> None:
    assert [(i.key, i.kind.value, i.is_tenant) for i in pl.PAYLOAD_INDEXES] == [
        ("meta.collection_name", "keyword", True),
        ("meta.file_id", "keyword", False),
        ("meta.collection_type", "keyword", False),
        ("meta.disabled", "bool", False),
        ("meta.languages", "keyword", False),
        ("meta.split_id", "integer", False),
        ("meta.tags", "keyword", False),
    ]
    pl.require_indexed("meta.file_id")
    with pytest.raises(InvalidRequest, match="valid keys"):
        pl.require_indexed("meta.source")
    with pytest.raises(InvalidRequest, match="valid keys"):  # facets are for keyword keys
        pl.require_indexed("meta.disabled")


def test_only_searches_leave_disabled_points_out() -> None:
    plan = pl.search_plan(PointFilter(collection_names=("a",)))
    assert plan.matches == pl.filter_plan(PointFilter(collection_names=("a",))).matches
    assert plan.excluded == (pl.FlagMatch("meta.disabled", True),)
    assert plan.narrows
    bare = pl.search_plan(PointFilter())
    assert not bare.is_empty  # the exclusion is still a filter...
    assert not bare.narrows  # ...but not one the caller asked for
    assert pl.filter_plan(PointFilter(collection_names=("a",))).excluded == ()


def test_the_disabled_flag_is_set_inside_meta_and_needs_a_scope() -> None:
    assert pl.disabled_update(True) == ("meta", {"disabled": True})
    assert pl.disabled_update(False) == ("meta", {"disabled": False})
    with pytest.raises(InvalidRequest, match="every point"):
        pl.scoped_plan(PointFilter(), "disable or enable")
    assert pl.scoped_plan(PointFilter(file_id="f"), "disable or enable").matches


def test_dense_vectors_are_checked_against_the_index_dimension() -> None:
    chunk = StoredChunk(id=str(uuid.uuid4()), content="t", meta={}, dense=np.ones(4, dtype=np.float32))
    assert pl.require_dense(chunk, {"text-dense": 4}) == ("text-dense", [1.0] * 4)
    with pytest.raises(InvalidRequest, match=r"\(3,\)"):
        pl.require_dense(chunk, {"text-dense": 3})


def test_a_dense_vector_goes_to_its_model_s_named_vector() -> None:
    chunk = StoredChunk(
        id=str(uuid.uuid4()), content="t", meta={}, dense=np.ones(3, dtype=np.float32), space="secure"
    )
    dims = {"text-dense": 4, "text-dense-secure": 3}
    assert pl.require_dense(chunk, dims) == ("text-dense-secure", [1.0] * 3)
    with pytest.raises(InvalidRequest, match="no dense model 'secure'"):
        pl.require_dense(chunk, {"text-dense": 4})
    assert pl.dense_of_point({"text-sparse": {}, "text-dense-secure": [0.5]}) == ("secure", [0.5])
    assert pl.dense_of_point({"text-dense": [0.5]}) == (None, [0.5])
    assert pl.dense_of_point({}) == (None, None)
    assert [pl.space_of_vector(pl.dense_vector_name(s)) for s in (None, "a-b")] == [None, "a-b"]
