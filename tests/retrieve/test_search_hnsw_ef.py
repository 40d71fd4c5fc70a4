"""A request's ``hnsw_ef`` (issue 34 §2, seed 001) travels from the HTTP body's knobs through the
search pipeline to every store query it runs (the engine's side: tests/store/test_store_hnsw_ef.py)."""

from __future__ import annotations

import pytest

from ragd.api.schemas import KnobFields
from ragd.embed.base import DenseEmbedder
from ragd.retrieve.pipeline import PipelineRequest, SearchPipeline
from ragd.settings import RetrievalSettings
from ragd.store.edge_store import EdgeStore
from ragd.types import SearchKnobs, SearchMode
from tests.retrieve.test_search import counted_retriever, store  # noqa: F401  (the fixture)


def test_the_body_field_becomes_the_knob() -> None:
    assert KnobFields(hnsw_ef=300).knobs(RetrievalSettings()).hnsw_ef == 300
    assert KnobFields().knobs(RetrievalSettings()).hnsw_ef is None


@pytest.mark.parametrize("mode", list(SearchMode))
async def test_every_store_query_of_a_search_carries_the_requests_hnsw_ef(
    store: EdgeStore,  # noqa: F811
    dense: DenseEmbedder,
    mode: SearchMode,
) -> None:
    counting, retriever = counted_retriever(store, dense)
    pipeline = SearchPipeline(retriever)
    knobs = SearchKnobs(hnsw_ef=300)
    request = PipelineRequest(
        collections=("kb",), queries=("sparse vectors", "the index"), k=3, mode=mode, knobs=knobs
    )
    result = await pipeline.run(request)
    assert result.hits
    assert len(counting.queries) >= 2
    assert {q.hnsw_ef for q in counting.queries} == {300}
    counting.queries.clear()
    await pipeline.run(PipelineRequest(collections=("kb",), queries=("sparse vectors",), k=3, mode=mode))
    assert {q.hnsw_ef for q in counting.queries} == {None}  # none asked: the store's own setting
