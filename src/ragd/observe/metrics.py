"""Prometheus metrics: one :class:`Metrics` object per process, built by the composition root.

The families keep the names the reference services expose (``search_requests_total``,
``retrieval_stage_duration_seconds``, ``ingest_requests_total`` …) so existing
dashboards keep working.  No label ever carries a collection name, a file name or
query text: labels are drawn from small closed sets (pipelines, stages, codes).

Each instance owns its own registry, so two apps in one process (tests) never clash.  The
standard process and platform collectors (``process_resident_memory_bytes``, ``process_cpu_seconds_total``,
``python_info`` …) and ``ragd_build_info{version}`` are on it too, as dashboards expect.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from ragd import __version__
from ragd.observe.timings import record_stage
from ragd.observe.tracing import Tracing

_FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_SLOW = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)
_COUNTS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000)
_BYTES = (1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9)
#: tenants with a label of their own on the kb_tenant_* gauges; the others are summed as OTHER_TENANTS
TENANT_LABELS = 50
OTHER_TENANTS = "other"
#: (tenant name, {resource: value}, {limit: value}) for :meth:`Metrics.set_tenant_usage`
TenantRow = tuple[str, Mapping[str, int], Mapping[str, int]]


class Metrics:
    """Every metric ragd exports, on a private registry."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        #: spans per stage when OpenTelemetry is on (set by the composition root)
        self.tracing = Tracing()
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        Info("ragd_build", "The running ragd", registry=r).info({"version": __version__})
        # HTTP, per route template (never the raw path)
        self.http_requests = Counter(
            "http_requests_total", "HTTP requests", ["method", "route", "status"], registry=r
        )
        self.http_duration = Histogram(
            "http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route"],
            buckets=_FAST,
            registry=r,
        )
        # retrieval (names as the retrieval-agent's)
        self.search_requests = Counter(
            "search_requests_total", "Search requests", ["pipeline", "outcome", "code"], registry=r
        )
        self.search_duration = Histogram(
            "search_duration_seconds", "Search latency", ["pipeline"], buckets=_FAST, registry=r
        )
        self.results_returned = Histogram(
            "results_returned", "Results per search", buckets=_COUNTS, registry=r
        )
        self.candidates_fetched = Histogram(
            "candidates_fetched", "Candidates fetched before rerank/dedup", buckets=_COUNTS, registry=r
        )
        self.retrieval_stage = Histogram(
            "retrieval_stage_duration_seconds", "Search stage latency", ["stage"], buckets=_FAST, registry=r
        )
        self.hybrid_path = Counter("hybrid_path_total", "Retrieval path taken", ["path"], registry=r)
        # query embedding (local model): model calls made for concurrent queries, and the queries
        # they held; their ratio is the mean batch size (set from the embedder: see bootstrap)
        self.query_batches = Gauge(
            "query_embedding_batches", "Model calls made for batched queries", registry=r
        )
        self.query_batched = Gauge(
            "query_embedding_batched_queries", "Queries embedded in those calls", registry=r
        )
        self.search_clamped = Counter(
            "search_clamped_total", "POST /search values over a limit, clamped", ["field"], registry=r
        )
        self.reranker_failures = Counter(
            "reranker_failures_total", "Reranker failures (search failed open)", ["reason"], registry=r
        )
        self.query_generation = Counter(
            "query_generation_total", "LLM query generation outcomes", ["outcome"], registry=r
        )
        # agentic retrieval
        self.agent_iterations = Histogram(
            "agent_iterations", "Agent loop iterations", buckets=(1, 2, 3, 4, 5, 8, 12), registry=r
        )
        self.agent_retries = Counter("agent_retries_total", "Agent query rewrites", registry=r)
        self.agent_timeouts = Counter("agent_timeouts_total", "Agent loops cut by the deadline", registry=r)
        self.agent_fallbacks = Counter("agent_fallback_total", "Agent fallbacks", ["reason"], registry=r)
        self.agent_tokens = Counter("agent_tokens_total", "LLM tokens used by agents", ["role"], registry=r)
        # chat proxy (/v1/chat/completions): kind is rag or passthrough, outcome ok or an error code
        self.chat_requests = Counter(
            "chat_requests_total", "Chat completion requests", ["kind", "outcome"], registry=r
        )
        self.chat_duration = Histogram(
            "chat_duration_seconds", "Chat latency to the response head", ["kind"], buckets=_SLOW, registry=r
        )
        self.chat_tool_calls = Counter(
            "chat_tool_calls_total", "Server-side tool calls by the model", ["tool"], registry=r
        )
        self.chat_upstream_failures = Counter(
            "chat_upstream_failures_total", "Upstream LLM failures", ["kind"], registry=r
        )
        # the model endpoints (/v1/embeddings, /embed, /v1/rerank): texts embedded or reranked
        self.model_inputs = Counter(
            "model_inputs_total", "Texts through the model endpoints", ["endpoint"], registry=r
        )
        # ingestion (names as the ingestion-service's)
        self.ingest_requests = Counter(
            "ingest_requests_total", "Ingest requests", ["outcome", "code"], registry=r
        )
        self.delete_requests = Counter(
            "delete_requests_total", "Delete requests", ["outcome", "code"], registry=r
        )
        self.ingest_duration = Histogram(
            "ingest_duration_seconds", "Ingest latency", buckets=_SLOW, registry=r
        )
        self.ingest_empty = Counter("ingest_empty_total", "Ingests that produced no chunks", registry=r)
        # backups (ragd backup through the server, scheduled ones): docs/operations.md
        self.backups = Counter(
            "ragd_backups_total",
            "Backups this process took, by outcome (ok, failed)",
            ["outcome"],
            registry=r,
        )
        self.backup_last_ok = Gauge(
            "ragd_backup_last_success_timestamp_seconds",
            "When this process's last backup finished",
            registry=r,
        )
        # knowledge-base jobs: the shared queue (every replica's), and what this process runs
        self.jobs = Gauge("kb_jobs", "Knowledge-base jobs by status, all replicas", ["status"], registry=r)
        self.jobs_running_here = Gauge(
            "kb_worker_jobs_running", "Jobs this process's worker is running", registry=r
        )
        self.ingest_chunks = Histogram(
            "ingest_chunks", "Chunks per ingested file", buckets=_COUNTS, registry=r
        )
        self.ingest_bytes = Histogram(
            "ingest_document_bytes", "Ingested file sizes", buckets=_BYTES, registry=r
        )
        self.ingest_failures = Counter("ingest_failures_total", "Failed files by code", ["code"], registry=r)
        # the auto extraction router's decisions (PUT /api/v1/ingest): the engine that read, the signal
        self.extraction_routes = Counter(
            "extraction_route_total", "Files routed by the auto extractor", ["engine", "signal"], registry=r
        )
        # limits (docs/knowledge-bases.md, "Limits"): refusals by surface (never by key), and each
        # tenant's use against its limits for the first TENANT_LABELS tenants by name, the rest as "other"
        self.rate_limited = Counter(
            "ragd_rate_limited_total", "Requests refused by a key's rate limit", ["surface"], registry=r
        )
        self.tenant_usage = Gauge(
            "kb_tenant_usage",
            "What a tenant holds and runs (chunks, bytes, running_jobs)",
            ["tenant", "resource"],
            registry=r,
        )
        self.tenant_limit = Gauge(
            "kb_tenant_limit", "A tenant's limit in force (0: none)", ["tenant", "limit"], registry=r
        )
        self.pipeline_stage = Histogram(
            "pipeline_stage_duration_seconds", "Ingest stage latency", ["stage"], buckets=_SLOW, registry=r
        )

    @contextmanager
    def stage(self, stage: str, **attributes: str | int | float | bool) -> Iterator[None]:
        """Time one retrieval stage (``retrieve``, ``rerank``, ``query_generation`` …), and trace it
        as a span when tracing is on (:attr:`tracing`)."""
        started = time.perf_counter()
        try:
            with self.tracing.span(stage, **attributes):
                yield
        finally:
            self.observe_stage(stage, time.perf_counter() - started)

    def observe_stage(self, stage: str, seconds: float) -> None:
        """Report a retrieval stage's time: to the histogram, and to the current request's
        collector when it asked for its timings (:mod:`ragd.observe.timings`)."""
        self.retrieval_stage.labels(stage).observe(seconds)
        record_stage(stage, seconds)

    def set_tenant_usage(self, rows: Sequence[TenantRow]) -> None:
        """Replace the per-tenant gauges with ``rows`` (tenant name, usage, limits): the first
        :data:`TENANT_LABELS` by name get their own label, the rest are summed as ``other`` (their
        limits, which do not add up, are left out): the label set stays bounded."""
        self.tenant_usage.clear()
        self.tenant_limit.clear()
        ordered = sorted(rows, key=lambda row: row[0])
        other: dict[str, int] = {}
        for n, (name, usage, limits) in enumerate(ordered):
            if n >= TENANT_LABELS:
                for resource, value in usage.items():
                    other[resource] = other.get(resource, 0) + value
                continue
            for resource, value in usage.items():
                self.tenant_usage.labels(name, resource).set(value)
            for limit, value in limits.items():
                self.tenant_limit.labels(name, limit).set(value)
        for resource, value in other.items():
            self.tenant_usage.labels(OTHER_TENANTS, resource).set(value)

    def render(self) -> bytes:
        """The Prometheus text exposition of every family."""
        return generate_latest(self.registry)
