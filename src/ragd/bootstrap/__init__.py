"""The composition root: the one place that picks concrete backends from settings.

Everything else receives its collaborators; tests build ``Settings(...)`` and
call :func:`open_services` (or construct use-cases directly with their own parts).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragd.answer.service import ChatAnswerer
from ragd.bootstrap.knowledge import ModelWindow, open_knowledge
from ragd.chunk.approx_counter import ApproxTokenCounter
from ragd.chunk.base import Chunker
from ragd.chunk.factory import build_chunker
from ragd.embed.base import DenseEmbedder, SparseEmbedder
from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.embed.coalesce import CoalescingEmbedder
from ragd.embed.fair_queue import FairTurns
from ragd.embed.spaces import DenseSpaces
from ragd.errors import ConfigurationError, InvalidRequest, MissingDependency, RagError, RateLimited
from ragd.extract.base import Extractor
from ragd.extract.isolation import IsolatedExtractor
from ragd.extract.router import RoutingExtractor, build_extractor, engines, pinned
from ragd.ingest.pipeline import Ingestor
from ragd.kb.context import KbContext
from ragd.kb.limits import check_rate, tenant_rows
from ragd.kb.worker import Worker
from ragd.kb_types import Principal, RateSurface
from ragd.language import load_identifier
from ragd.llm.base import ChatCompletions, ChatModel, Upstream
from ragd.objects.base import ObjectStore
from ragd.observe.metrics import Metrics
from ragd.observe.otel import build_tracing
from ragd.rerank.base import Reranker
from ragd.retrieve.agent import AgenticSearch
from ragd.retrieve.pipeline import DEFAULT_RERANKER, RerankStage, Searcher, SearchPipeline
from ragd.retrieve.queries import QueryGenerator
from ragd.retrieve.search import Retriever
from ragd.settings import EmbeddingSettings, RerankSettings, Settings, VisionSettings
from ragd.store.base import VectorStore
from ragd.store.payload import grouping_for
from ragd.types import IndexManifest
from ragd.vision.kit import build_vision
from ragd.vision.probe import VISION_ENGINES, check_request

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    store: VectorStore
    dense: DenseEmbedder
    sparse: SparseEmbedder | None
    extractor: Extractor
    chunker: Chunker
    ingestor: Ingestor
    retriever: Retriever
    manifest: IndexManifest
    metrics: Metrics
    #: what POST /search and the chat proxy run: the search pipeline, or the agent around it
    pipeline: Searcher
    reranker: Reranker | None = None
    llm: ChatModel | None = None
    objects: ObjectStore | None = None
    objects_error: MissingDependency | None = None
    #: the chat proxy (/v1/chat/completions): retrieval answers, and passthrough for other models
    chat: ChatAnswerer | None = None
    upstream: Upstream | None = None
    #: the knowledge-base half (datasets, files, sources, jobs) and, in a server, its job worker
    kb: KbContext | None = None
    worker: Worker | None = None
    #: every configured dense model by name, and every reranker by name (the model endpoints serve them)
    spaces: DenseSpaces | None = None
    rerankers: Mapping[str, Reranker] = field(default_factory=dict)
    #: the model endpoints' turns: at most RAGD_SERVER__MODEL_SLOTS slices at once, key by key
    model_turns: FairTurns = field(default_factory=FairTurns)

    def knowledge(self) -> KbContext:
        if self.kb is None:
            raise ConfigurationError("the knowledge-base catalog is not open in this process")
        return self.kb

    async def check_rate(self, principal: Principal, surface: RateSurface) -> None:
        """Count one request of ``principal`` on ``surface`` against its key's rate (429
        ``RATE_LIMITED`` when used up, counted in ``ragd_rate_limited_total``); nothing to count
        without a catalog (no tenant keys)."""
        if self.kb is None:
            return
        try:
            await check_rate(self.kb.catalog, self.kb.limits, principal, surface)
        except RateLimited:
            self.metrics.rate_limited.labels(surface.value).inc()
            raise

    async def refresh_tenant_metrics(self) -> None:
        """Set the ``kb_tenant_*`` gauges from the catalog (before ``/metrics`` renders)."""
        if self.kb is None:
            return
        try:
            rows = await tenant_rows(self.kb.catalog, self.kb.limits)
        except RagError as exc:
            log.warning("cannot count tenants' usage for /metrics: %s", exc.code)
            return
        self.metrics.set_tenant_usage(rows)

    def wake_worker(self) -> None:
        """A job was queued: this process's worker (if it runs one) claims it now."""
        if self.worker is not None:
            self.worker.wake()

    def object_store(self) -> ObjectStore:
        """The S3 client, or the install hint when the ``s3`` extra is missing."""
        if self.objects is None:
            raise self.objects_error or ConfigurationError("S3 is not configured")
        return self.objects

    def extraction_engine(self, name: str | None, profile: str | None = None) -> Extractor:
        """The default type router, or one named engine for every file type; ``profile``: the
        prompt profile of a vision engine (``POST /api/v1/extract``)."""
        by_name = engines(self.settings.extract)
        vision = self.settings.vision.enabled
        check_request(name, profile, known={*by_name, *(VISION_ENGINES if vision else ())}, vision=vision)
        if name is None:
            return self.extractor
        if isinstance(self.extractor, IsolatedExtractor):
            return self.extractor.engine(name, profile)
        own = self.extractor.engine(name) if isinstance(self.extractor, RoutingExtractor) else None
        engine = own or by_name.get(name)
        if engine is None:
            raise InvalidRequest(f"engine {name!r} does not run in this process")
        with_profile = getattr(engine, "with_profile", None)
        if profile is not None and with_profile is not None:
            engine = with_profile(profile)
        return pinned(engine, self.settings.extract)


def vision_settings(settings: Settings) -> VisionSettings | None:
    """The vision model's settings with the cache folder resolved; None when no endpoint is set."""
    if not settings.vision.enabled:
        return None
    return settings.vision.model_copy(update={"cache_dir": settings.vision_cache_dir})


def build_extraction(settings: Settings) -> Extractor:
    """The type router, in worker processes unless ``RAGD_EXTRACT__ISOLATE=false``; with the vision
    engines when ``RAGD_VISION__API_BASE_URL`` is set."""
    vision = vision_settings(settings)
    if settings.extract.isolate:
        return IsolatedExtractor(settings.extract, workers=settings.extract_concurrency, vision=vision)
    return build_extractor(settings.extract, vision=build_vision(settings.extract, vision))


async def build_dense(settings: Settings, emb: EmbeddingSettings | None = None) -> DenseEmbedder:
    """The configured model (``emb``: a RAGD_EMBEDDERS entry; None: RAGD_EMBEDDING__*); concurrent
    files share its batches.

    The local model batches every caller's texts itself (by length); a remote one is wrapped in
    :class:`CoalescingEmbedder`, which merges concurrent calls into shared requests.
    """
    emb = emb or settings.embedding
    model = await _dense_model(emb, settings.model_cache_dir)
    return model if emb.provider == "local" else CoalescingEmbedder(model)


async def build_spaces(settings: Settings, stack: AsyncExitStack) -> DenseSpaces:
    """The default model and every RAGD_EMBEDDERS model by name (each closed with ``stack``)."""
    # the language identifier (BM25 stemming, language-aware fusion) loads beside the dense model
    identifier = asyncio.create_task(asyncio.to_thread(load_identifier))
    try:
        default = await build_dense(settings)
    finally:
        await identifier
    stack.push_async_callback(default.aclose)
    named: dict[str, DenseEmbedder] = {}
    for name, emb in settings.embedders.items():
        try:
            named[name] = await build_dense(settings, emb)
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"RAGD_EMBEDDERS[{name!r}]: {exc.message}", hint=f"set it in the {name!r} entry"
            ) from exc
        stack.push_async_callback(named[name].aclose)
    languages = {name: emb.languages for name, emb in settings.embedders.items()}
    return DenseSpaces(default, named, languages=languages)


def model_windows(settings: Settings, spaces: DenseSpaces) -> dict[str | None, ModelWindow]:
    """What chunking needs of each dense model (None: the default one)."""

    def window(emb: EmbeddingSettings, dense: DenseEmbedder) -> ModelWindow:
        return ModelWindow(
            counter=dense.tokenizer,
            max_tokens=emb.max_tokens or dense.spec.max_tokens,
            document_prefix=dense.spec.document_prefix,
        )

    return {None: window(settings.embedding, spaces.default)} | {
        name: window(settings.embedders[name], model) for name, model in spaces.named.items()
    }


def chunker_for_window(settings: Settings, window: ModelWindow) -> Chunker:
    return build_chunker(
        settings.chunking,
        counter=window.counter,
        max_tokens=window.max_tokens,
        document_prefix=window.document_prefix,
    )


async def _dense_model(emb: EmbeddingSettings, cache_dir: Path) -> DenseEmbedder:
    if emb.provider == "local":
        from ragd.embed.local_onnx import OnnxDenseEmbedder

        return OnnxDenseEmbedder.from_settings(emb, cache_dir)
    if emb.provider == "openai":
        from ragd.embed.openai_compat import OpenAIEmbedder

        return await OpenAIEmbedder.create(emb)
    if emb.provider == "tei":
        from ragd.embed.tei import TeiEmbedder

        return await TeiEmbedder.create(emb)
    raise ConfigurationError(f"unknown embedding provider {emb.provider!r}")


def build_rerankers(settings: Settings) -> dict[str, RerankStage]:
    """Every configured reranker by name: ``default`` (RAGD_RERANK__*) and RAGD_RERANKERS."""
    named = {DEFAULT_RERANKER: settings.rerank, **settings.rerankers}
    stages = {}
    for name, rr in named.items():
        try:
            reranker = build_reranker(rr)
        except ConfigurationError as exc:
            if name == DEFAULT_RERANKER:
                raise
            raise ConfigurationError(
                f"RAGD_RERANKERS[{name!r}]: {exc.message}", hint=f"set it in the {name!r} entry"
            ) from exc
        if reranker is not None:
            stages[name] = RerankStage(reranker, rr)
    return stages


def build_reranker(rr: RerankSettings) -> Reranker | None:
    if rr.provider == "remote":
        from ragd.rerank.remote_http import HttpReranker

        return HttpReranker.from_settings(rr)
    if rr.provider == "local":
        from ragd.rerank.local_onnx import OnnxCrossEncoder

        return OnnxCrossEncoder.from_settings(rr)
    return None


def build_llm(settings: Settings) -> ChatModel | None:
    """The model that writes search queries and runs the agent: it needs RAGD_LLM__MODEL.  Without
    one those stay off, and the chat proxy answers with the model each request names."""
    if not settings.llm.base_url:
        return None
    if not settings.llm.model:
        log.info("RAGD_LLM__MODEL is not set: LLM query generation and agentic search are off")
        return None
    from ragd.llm.openai_chat import OpenAIChatModel

    return OpenAIChatModel.from_settings(settings.llm)


def chat_enabled(settings: Settings) -> bool:
    """The chat proxy runs when it is on and there is an upstream to answer."""
    return settings.chat.enabled and bool(settings.llm.base_url)


def build_chat_upstreams(settings: Settings) -> tuple[ChatCompletions, Upstream]:
    """The chat proxy's two clients of the upstream: completions (openai SDK), passthrough (httpx)."""
    from ragd.llm.http_upstream import HttpUpstream
    from ragd.llm.openai_chat import OpenAICompletions

    timeout_s, retries = settings.chat.timeout_s, settings.chat.retries
    return (
        OpenAICompletions.from_settings(settings.llm, timeout_s=timeout_s, retries=retries),
        HttpUpstream.from_settings(settings.llm, timeout_s=timeout_s, retries=retries),
    )


async def build_objects(settings: Settings) -> tuple[ObjectStore | None, MissingDependency | None]:
    try:
        from ragd.objects.s3 import S3ObjectStore

        return await S3ObjectStore.open(settings.s3), None
    except MissingDependency as exc:
        return None, exc


def index_in_use(settings: Settings) -> bool:
    """Whether another process holds this embedded index open (a Qdrant server's never is)."""
    if settings.store.backend != "edge":
        return False
    from ragd.store.edge_store import EdgeStore

    return EdgeStore.from_settings(settings.store, settings.data_dir).held_elsewhere()


def build_store(settings: Settings) -> VectorStore:
    if settings.store.backend == "edge":
        from ragd.store.edge_store import EdgeStore

        return EdgeStore.from_settings(settings.store, settings.data_dir)
    from ragd.store.qdrant_store import QdrantStore

    return QdrantStore.from_settings(settings.store)


def manifest_for(
    dense: DenseEmbedder,
    sparse: SparseEmbedder | None,
    chunker: Chunker,
    spaces: DenseSpaces | None = None,
    sparse_groups: int = 0,
) -> IndexManifest:
    spec = dense.spec
    return IndexManifest(
        dense_model=spec.model,
        dense_dim=spec.dimension,
        query_prefix=spec.query_prefix,
        document_prefix=spec.document_prefix,
        sparse_model=sparse.name if sparse else "none",
        chunker_version=chunker.version,
        extra_dense=spaces.manifest_entries if spaces is not None else (),
        sparse_groups=sparse_groups,
        dense_precision=spec.precision,
        # an existing index is opened as it was made (payload.SparseLayout)
        sparse_grouping=grouping_for(sparse_groups),
    )


def _count_query_batches(dense: Any, metrics: Metrics) -> None:
    """The local model batches concurrent queries: its counts back two gauges."""
    if hasattr(dense, "query_batches"):
        metrics.query_batches.set_function(lambda: dense.query_batches[0])
        metrics.query_batched.set_function(lambda: dense.query_batches[1])


@asynccontextmanager
async def open_services(
    settings: Settings,
    metrics: Metrics | None = None,
    *,
    background: bool = False,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[Services]:
    """Build the whole graph from ``settings``; everything is closed on exit.

    ``background``: also run the job worker and the folder watcher (``ragd serve``); ``clock``: the
    wall clock source schedules run on (tests pass one they advance)."""
    metrics = metrics or Metrics()
    async with AsyncExitStack() as stack:
        otel = settings.otel
        metrics.tracing, flush_traces = build_tracing(
            enabled=otel.enabled,
            endpoint=otel.endpoint,
            service_name=otel.service_name,
            sample_ratio=otel.sample_ratio,
        )
        stack.callback(flush_traces)
        spaces = await build_spaces(settings, stack)
        dense = spaces.default
        _count_query_batches(dense, metrics)
        sparse = (
            Bm25SparseEmbedder(settings.sparse.language, settings.sparse.avg_len)
            if settings.sparse.enabled
            else None
        )
        windows = model_windows(settings, spaces)
        chunker = chunker_for_window(settings, windows[None])
        manifest = manifest_for(dense, sparse, chunker, spaces, settings.store.sparse_groups)
        store = build_store(settings)
        stack.push_async_callback(store.close)
        await store.open(manifest)
        extractor = build_extraction(settings)
        if isinstance(extractor, IsolatedExtractor | RoutingExtractor):
            stack.callback(extractor.close)
        ingestor = Ingestor(
            extractor=extractor,
            chunker=chunker,
            dense=dense,
            sparse=sparse,
            store=store,
            extract_concurrency=settings.extract_concurrency,
            max_chunks=settings.chunking.max_chunks,
            spaces=spaces,
            chunkers={name: chunker_for_window(settings, windows[name]) for name in spaces.named},
        )
        retriever = Retriever(
            store,
            dense,
            sparse,
            settings.retrieval,
            settings.embedding.languages,
            spaces=spaces,
            timings=metrics.observe_stage,
        )
        rerankers = build_rerankers(settings)
        for stage in rerankers.values():
            stack.push_async_callback(stage.reranker.aclose)
        default_stage = rerankers.get(DEFAULT_RERANKER)
        reranker = None if default_stage is None else default_stage.reranker
        llm = build_llm(settings)
        if llm is not None:
            stack.push_async_callback(llm.aclose)
        objects, objects_error = await build_objects(settings)
        if objects is not None:
            stack.push_async_callback(objects.aclose)
        generator = QueryGenerator(llm, settings.query_generation, metrics) if llm else None
        if not settings.query_generation.enabled:
            generator = None
        pipeline: Searcher = SearchPipeline(
            retriever,
            rerankers=rerankers,
            generator=generator,
            metrics=metrics,
        )
        if settings.agent.enabled and llm is not None:
            pipeline = AgenticSearch(pipeline, llm, settings.agent, metrics)
        chat: ChatAnswerer | None = None
        upstream: Upstream | None = None
        if chat_enabled(settings):
            completions, upstream = build_chat_upstreams(settings)
            stack.push_async_callback(completions.aclose)
            stack.push_async_callback(upstream.aclose)
            chat = ChatAnswerer(
                searcher=pipeline,
                store=store,
                llm=completions,
                counter=dense.tokenizer or ApproxTokenCounter(),
                settings=settings.chat,
                mode=settings.retrieval.mode,
                search_deadline_s=settings.server.search_timeout_s,
                metrics=metrics,
                spaces=spaces,
            )
        if background:
            await dense.embed_query("warm-up")  # a server opens the query path now, not on request one
        kb, worker = await stack.enter_async_context(
            open_knowledge(
                settings,
                store=store,
                ingestor=ingestor,
                windows=windows,
                objects=objects,
                objects_error=objects_error,
                background=background,
                reranker_names=tuple(rerankers),
                spaces=spaces,
                searcher=pipeline,
                metrics=metrics,
                clock=clock,
            )
        )
        yield Services(
            settings=settings,
            store=store,
            dense=dense,
            sparse=sparse,
            extractor=extractor,
            chunker=chunker,
            ingestor=ingestor,
            retriever=retriever,
            manifest=manifest,
            metrics=metrics,
            pipeline=pipeline,
            reranker=reranker,
            llm=llm,
            objects=objects,
            objects_error=objects_error,
            chat=chat,
            upstream=upstream,
            kb=kb,
            worker=worker,
            spaces=spaces,
            rerankers={name: stage.reranker for name, stage in rerankers.items()},
            model_turns=FairTurns(settings.server.model_slots),
        )


def serve_services(settings: Settings, metrics: Metrics) -> AbstractAsyncContextManager[Services]:
    """What ``ragd serve`` runs: every service, plus the job worker, the folder watcher and, with
    ``backup.interval_s``, scheduled backups."""
    if settings.backup.interval_s <= 0:
        return open_services(settings, metrics, background=True)
    return _with_backups(settings, metrics)


@asynccontextmanager
async def _with_backups(settings: Settings, metrics: Metrics) -> AsyncIterator[Services]:
    from ragd.bootstrap.backups import run_schedule  # it builds on this module

    async with open_services(settings, metrics, background=True) as services:
        stop = asyncio.Event()
        task = asyncio.create_task(run_schedule(services, stop), name="ragd-backups")
        try:
            yield services
        finally:
            stop.set()
            await task
