"""The OpenTelemetry adapter: a tracer that exports spans over OTLP/HTTP (the ``otel`` extra)."""

from __future__ import annotations

from collections.abc import Callable

from ragd.errors import MissingDependency
from ragd.observe.tracing import Tracing


def build_tracing(
    *, enabled: bool, endpoint: str | None, service_name: str, sample_ratio: float
) -> tuple[Tracing, Callable[[], None]]:
    """The tracing of RAGD_OTEL__* and the function that flushes it at shutdown."""
    if not enabled:
        return Tracing(), lambda: None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
    except ImportError as exc:
        raise MissingDependency(
            "RAGD_OTEL__ENABLED needs OpenTelemetry, which is not installed",
            hint="pip install 'ragd[otel]'",
        ) from exc
    from ragd import __version__

    resource = Resource.create({"service.name": service_name, "service.version": __version__})
    provider = TracerProvider(resource=resource, sampler=TraceIdRatioBased(sample_ratio))
    exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return Tracing(provider.get_tracer("ragd", __version__)), provider.shutdown
