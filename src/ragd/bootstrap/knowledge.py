"""Wiring of the knowledge-base half: the SQL catalog, source readers, the worker and the watcher."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from ragd.catalog.base import Catalog
from ragd.chunk.base import Chunker, TokenCounter
from ragd.chunk.factory import build_chunker
from ragd.embed.spaces import DenseSpaces
from ragd.errors import ConfigurationError, InvalidRequest, MissingDependency
from ragd.ingest.pipeline import Ingestor
from ragd.kb.context import KbContext
from ragd.kb.grants import sweep_at_start
from ragd.kb.limits_book import LimitsBook
from ragd.kb.scheduler import SourceScheduler
from ragd.kb.schedules import ScheduleRules
from ragd.kb.sources import search_visibility
from ragd.kb.watcher import FolderWatcher
from ragd.kb.worker import Worker
from ragd.kb_types import ChunkingSpec, SourceKind, SourceSpec, TenantLimits
from ragd.objects.base import ObjectStore
from ragd.observe.metrics import Metrics
from ragd.retrieve.pipeline import Searcher
from ragd.settings import ChunkSettings, Settings
from ragd.sources.base import SourceReader
from ragd.store.base import VectorStore
from ragd.types import ChunkStrategy

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelWindow:
    """What chunking needs of a dense model: its tokenizer, window and document prefix."""

    counter: TokenCounter | None
    max_tokens: int
    document_prefix: str


def chunker_factory(
    settings: Settings, windows: Mapping[str | None, ModelWindow]
) -> Callable[[ChunkingSpec, str | None], Chunker]:
    """A dataset's chunker from its spec over the service's chunking settings, sized for its dense
    model (``windows``: None for the default model, else a RAGD_EMBEDDERS name); cached per spec."""

    @lru_cache(maxsize=64)
    def chunker_for(spec: ChunkingSpec, embedding: str | None = None) -> Chunker:
        window = windows.get(embedding)
        if window is None:
            raise InvalidRequest(f"unknown dense model {str(embedding)[:64]!r}")
        counter, max_tokens, document_prefix = window.counter, window.max_tokens, window.document_prefix
        base = settings.chunking
        strategy = spec.strategy or base.strategy
        by_tokens = strategy in (ChunkStrategy.TOKEN, ChunkStrategy.MARKDOWN)
        size_key, overlap_key = (
            ("token_size", "token_overlap") if by_tokens else ("char_size", "char_overlap")
        )
        changes: dict[str, object] = {"strategy": strategy}
        if spec.size is not None:
            changes[size_key] = spec.size
        if spec.overlap is not None:
            changes[overlap_key] = spec.overlap
        try:
            merged = ChunkSettings.model_validate({**base.model_dump(), **changes})
            if getattr(merged, overlap_key) >= getattr(merged, size_key):
                raise InvalidRequest("chunk overlap must be smaller than the chunk size")
            chunker = build_chunker(
                merged, counter=counter, max_tokens=max_tokens, document_prefix=document_prefix
            )
        except (ValidationError, ConfigurationError) as exc:
            raise InvalidRequest(f"invalid chunking: {exc}") from exc
        fits = getattr(chunker, "size", None)
        if by_tokens and spec.size is not None and fits is not None and fits < spec.size:
            raise InvalidRequest(
                f"a chunk size of {spec.size} tokens does not fit the embedding model's window: "
                f"at most {fits} tokens of text fit",
                hint=f"use a size of at most {fits}",
            )
        return chunker

    return chunker_for


def reader_factory(
    settings: Settings, objects: ObjectStore | None, objects_error: MissingDependency | None
) -> Callable[[SourceSpec], AbstractAsyncContextManager[SourceReader]]:
    @asynccontextmanager
    async def open_reader(spec: SourceSpec) -> AsyncIterator[SourceReader]:
        config = spec.config
        if spec.kind is SourceKind.FOLDER:
            from ragd.sources.folder import FolderSource

            yield FolderSource(Path(str(config["path"])), [str(p) for p in config.get("ignore", [])])
        elif spec.kind is SourceKind.WEB:
            from ragd.sources.web import CrawlSpec, WebSource

            crawl = settings.crawl
            web = WebSource(
                CrawlSpec(
                    start_url=str(config["url"]),
                    max_depth=int(config.get("max_depth", crawl.max_depth)),
                    max_pages=int(config.get("max_pages", crawl.max_pages)),
                    path_prefix=config.get("path_prefix"),
                    delay_s=float(config.get("delay_s", crawl.delay_s)),
                    user_agent=crawl.user_agent,
                    timeout_s=crawl.timeout_s,
                    max_page_bytes=settings.extract.max_file_bytes,
                    allow_private=crawl.allow_private or config.get("allow_private") is True,
                    render=config.get("render") is True,
                    render_timeout_s=crawl.render_timeout_s,
                ),
                chromium_path=crawl.chromium_path,
            )
            try:
                yield web
            finally:
                await web.aclose()
        else:
            from ragd.sources.s3_prefix import S3PrefixSource

            if objects is None:
                raise objects_error or ConfigurationError("S3 is not configured")
            scratch = settings.data_dir / "tmp"
            scratch.mkdir(parents=True, exist_ok=True)
            s3 = S3PrefixSource(
                objects,
                str(config["bucket"]),
                str(config.get("prefix", "")),
                max_bytes=settings.extract.max_file_bytes,
                scratch_dir=scratch,
            )
            try:
                yield s3
            finally:
                await s3.aclose()

    return open_reader


def _watch(
    root: Path, ignore: Sequence[str], debounce_ms: int, stop: asyncio.Event
) -> AsyncIterator[set[str]]:
    from ragd.sources.watch import watch_folder

    return watch_folder(root, ignore=ignore, debounce_ms=debounce_ms, stop_event=stop)


@asynccontextmanager
async def open_knowledge(
    settings: Settings,
    *,
    store: VectorStore,
    ingestor: Ingestor,
    windows: Mapping[str | None, ModelWindow],
    objects: ObjectStore | None,
    objects_error: MissingDependency | None,
    background: bool,
    reranker_names: tuple[str, ...] = (),
    spaces: DenseSpaces | None = None,
    searcher: Searcher | None = None,
    metrics: Metrics | None = None,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[tuple[KbContext, Worker | None]]:
    """The catalog (migrated to the latest schema) and, with ``background``, the worker and watcher.

    ``spaces`` learn from the catalog which dataset chose which dense model, before any job runs;
    ``clock`` is the wall clock source schedules are set and fired on."""
    from ragd.catalog.sql import open_catalog

    async with AsyncExitStack() as stack:
        settings.data_dir.mkdir(parents=True, exist_ok=True)  # the default SQLite file lives there
        catalog = await open_catalog(settings.catalog_url)
        stack.push_async_callback(catalog.aclose)
        if spaces is not None:
            spaces.bind(catalog)
        ctx = KbContext(
            catalog=catalog,
            store=store,
            ingestor=ingestor,
            chunker_for=chunker_factory(settings, windows),
            reader_for=reader_factory(settings, objects, objects_error),
            files_dir=settings.files_dir,
            max_upload_bytes=settings.extract.max_file_bytes,
            max_attempts=settings.worker.max_attempts,
            reranker_names=reranker_names,
            embedding_names=spaces.names if spaces is not None else ("default",),
            limits=LimitsBook(defaults=TenantLimits(**settings.limits.model_dump())),
            clock=clock,
            standard_datasets=settings.tenants.datasets,
            spaces=spaces,
            migration_retain_s=settings.migrations.retain_s,
            migration_max_regression=settings.migrations.max_regression,
            migration_settle_s=settings.migrations.settle_s,
            searcher=searcher,
            max_eval_queries=settings.evaluation.max_run_queries,
        )
        if background:  # a server: what no grant covers is disabled before anything watches it
            await sweep_at_start(catalog, search_visibility(ctx))
        if not (background and settings.worker.enabled):
            yield ctx, None
            return
        stop = asyncio.Event()
        worker = Worker(ctx, settings.worker, metrics=metrics)
        tasks = [asyncio.create_task(worker.run(stop), name="ragd-worker")]
        if settings.worker.watch:
            watcher = FolderWatcher(
                ctx, _watch, debounce_ms=settings.worker.debounce_ms, on_queue=worker.wake
            )
            tasks.append(asyncio.create_task(watcher.run(stop), name="ragd-watcher"))
        if settings.worker.schedule:
            scheduler = SourceScheduler(
                ctx, schedule_rules(settings), poll_s=settings.worker.schedule_poll_s, on_queue=worker.wake
            )
            tasks.append(asyncio.create_task(scheduler.run(stop), name="ragd-scheduler"))

        async def _stop() -> None:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)

        stack.push_async_callback(_stop)
        yield ctx, worker


def schedule_rules(settings: Settings) -> ScheduleRules:
    """The operator's bounds on source schedules (``worker.schedule_*``)."""
    w = settings.worker
    return ScheduleRules(
        min_interval_s=w.schedule_min_interval_s,
        jitter=w.schedule_jitter,
        jitter_max_s=w.schedule_jitter_max_s,
    )


@asynccontextmanager
async def open_catalog_only(settings: Settings) -> AsyncIterator[Catalog]:
    """The catalog alone (tenants and keys from the CLI: no model, no index)."""
    from ragd.catalog.sql import open_catalog

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    catalog = await open_catalog(settings.catalog_url)
    try:
        yield catalog
    finally:
        await catalog.aclose()
