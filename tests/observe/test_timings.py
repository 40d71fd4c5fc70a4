"""Per-request stage timings: the collector, and a real search reporting every stage into it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ragd.bootstrap import open_services
from ragd.observe.metrics import Metrics
from ragd.observe.timings import collect_timings, record_stage
from ragd.retrieve.pipeline import PipelineRequest, RerankStage, SearchPipeline
from ragd.settings import EmbeddingSettings, RerankSettings, Settings
from ragd.types import Document, FileRef, SearchKnobs


def test_stages_are_summed_inside_the_block_and_ignored_outside() -> None:
    record_stage("qdrant", 1.0)  # no collector open: nothing happens
    with collect_timings() as timings:
        record_stage("qdrant", 0.002)
        record_stage("qdrant", 0.001)
        Metrics().observe_stage("rerank", 0.0005)
    record_stage("qdrant", 1.0)
    assert timings.milliseconds() == {"qdrant": 3.0, "rerank": 0.5}


async def test_tasks_report_into_their_request_and_never_into_anothers() -> None:
    async def request(stage: str) -> dict[str, float]:
        with collect_timings() as timings:
            await asyncio.gather(*(asyncio.to_thread(lambda: None) for _ in range(2)))
            await asyncio.gather(*(asyncio.create_task(_report(stage)) for _ in range(3)))
        return timings.milliseconds()

    first, second = await asyncio.gather(request("embed_dense"), request("qdrant"))
    assert first == {"embed_dense": 3.0}
    assert second == {"qdrant": 3.0}


async def _report(stage: str) -> None:
    await asyncio.sleep(0)
    record_stage(stage, 0.001)


class HalfReranker:
    name = "test:half"

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [0.5 for _ in passages]

    async def aclose(self) -> None:
        pass


async def test_a_search_reports_each_stage_and_fills_every_component_score(
    tmp_path: Path, model_cache: Path
) -> None:
    settings = Settings(data_dir=tmp_path, embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as svc:
        ref = FileRef(file_id="a", collection_name="kb", name="a.md", source="a.md")
        text = "The alpha protocol requires three approvals from the steering board."
        await svc.ingestor.ingest_document(Document(text=text, extractor="test"), ref)
        stage = RerankStage(HalfReranker(), RerankSettings(provider="local"))
        pipeline = SearchPipeline(svc.retriever, rerankers={"default": stage}, metrics=svc.metrics)
        request = PipelineRequest(collections=("kb",), queries=("alpha approvals",))
        with collect_timings() as timings:
            result = await pipeline.run(replace(request, knobs=SearchKnobs(diversity=0.3)))
    seen = timings.milliseconds()
    expected = {
        "query_generation",
        "embed_sparse",
        "embed_dense",
        "qdrant",
        "retrieve",
        "rerank",
        "diversity",
    }
    assert set(seen) == expected
    assert seen["retrieve"] >= seen["embed_dense"]
    scores = result.hits[0].scores
    assert scores.rerank == 0.5
    assert None not in (scores.dense, scores.sparse, scores.fused)
