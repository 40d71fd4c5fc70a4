"""Traces: a span per pipeline stage when OpenTelemetry is on, nothing when it is off."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragd.bootstrap import open_services
from ragd.observe.otel import build_tracing
from ragd.observe.tracing import Tracing
from ragd.retrieve.pipeline import PipelineRequest
from ragd.settings import EmbeddingSettings, Settings
from ragd.types import Document, FileRef


def test_off_means_no_spans_and_no_sdk() -> None:
    tracing, flush = build_tracing(enabled=False, endpoint=None, service_name="ragd", sample_ratio=1.0)
    assert not tracing.enabled
    with tracing.span("search", k=5):
        pass
    flush()


def test_on_builds_an_otlp_exporting_tracer() -> None:
    endpoint = "http://127.0.0.1:9/v1/traces"  # nothing listens: no span is sent before shutdown
    tracing, flush = build_tracing(enabled=True, endpoint=endpoint, service_name="ragd", sample_ratio=0.0)
    assert tracing.enabled
    with tracing.span("search"):
        pass  # sampled out (ratio 0): nothing to export
    flush()


async def test_a_search_is_one_span_with_a_child_per_stage(tmp_path: Path, model_cache: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = Settings(data_dir=tmp_path, embedding=EmbeddingSettings(cache_dir=model_cache))
    async with open_services(settings) as svc:
        svc.metrics.tracing = Tracing(provider.get_tracer("test"))
        ref = FileRef(file_id="a", collection_name="kb", name="a.md", source="a.md")
        text = "The alpha protocol requires three approvals from the steering board."
        await svc.ingestor.ingest_document(Document(text=text, extractor="test"), ref)
        result = await svc.pipeline.run(PipelineRequest(collections=("kb",), queries=("alpha approvals",)))
    assert result.hits
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"ragd.search", "ragd.query_generation", "ragd.retrieve"} <= set(spans)
    root = spans["ragd.search"]
    assert root.parent is None
    assert dict(root.attributes or {}) == {"mode": "hybrid", "k": 5, "collections": 1}
    for stage in ("ragd.query_generation", "ragd.retrieve"):
        parent = spans[stage].parent
        assert parent is not None
        assert parent.span_id == root.context.span_id
    provider.shutdown()
