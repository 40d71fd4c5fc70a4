"""VectorStore on Qdrant Edge: the real Qdrant engine embedded in this process.

Files under ``<data_dir>/qdrant/<collection>/``::

    shard/               the Edge shard (segments, WAL, edge_config.json)
    ragd-manifest.json   the IndexManifest, written before the shard is created
    ragd.lock            flock'ed while a process has the store open

Edge's API is synchronous: every call runs on a small thread pool (queries
release the GIL), and ``optimize()`` — the blocking index build after bulk
writes — on a thread of its own.  Only one process may open a store; a
second one gets :class:`StoreLocked`.  ``qdrant_edge`` is imported here only.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import math
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import qdrant_edge as qe

from ragd.errors import (
    ConfigurationError,
    IndexMismatch,
    RagError,
    StorageFull,
    StoreError,
    StoreLocked,
    StoreUnavailable,
    store_failure,
)
from ragd.settings import StoreSettings
from ragd.store import payload as pl
from ragd.store.dir_lock import DirLock
from ragd.store.manifest_io import (
    FIX_HINT,
    MANIFEST_FILE,
    check_manifest,
    read_manifest_file,
    write_manifest_file,
)
from ragd.store.search_plan import (
    EnginePoint,
    FusedPlan,
    assemble_hits,
    fused_plan,
    fused_rows,
    fusion_weights,
    merge_by_score,
    scores_by_id,
    search_kind,
)
from ragd.store.tuning import IndexTuning
from ragd.types import (
    EmptyCondition,
    FilterNode,
    FusionMethod,
    Hit,
    IndexManifest,
    MetaFilter,
    PointFilter,
    RangeCondition,
    SearchMode,
    SparseVector,
    StoredChunk,
    StoreQuery,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

SHARD_DIR = "shard"
UPSERT_BATCH = 1024


class EdgeStore:
    """An embedded store; ``open`` before use, ``close`` when done (flushes)."""

    def __init__(
        self,
        data_dir: Path,
        collection: str = "ingestion_files",
        *,
        tuning: IndexTuning | None = None,
        min_free_bytes: int = 0,
    ) -> None:
        if not collection or "/" in collection or collection.startswith("."):
            raise ConfigurationError(
                f"invalid store collection name {collection!r}: use a plain directory name"
            )
        self.root = Path(data_dir) / "qdrant" / collection
        self._tuning = tuning or IndexTuning()
        self._lock = DirLock(self.root)
        self._shard: _ShardHandle | None = None
        self._dims: dict[str, int] = {}
        self._sparse = pl.SparseLayout()
        self._pool: ThreadPoolExecutor | None = None
        self._optimizer: ThreadPoolExecutor | None = None
        self._optimizing: asyncio.Future[bool] | None = None
        self._disabled = _DisabledGuard()
        self._segments = 0  # the engine's count, as of the last open or optimize
        self._min_free = min_free_bytes
        self._bulk_loads = 0  # bulk() blocks open now
        self._bulk_written = 0  # chunks written by them since their last optimize

    @classmethod
    def from_settings(cls, settings: StoreSettings, data_dir: Path) -> EdgeStore:
        return cls(
            data_dir,
            settings.collection,
            tuning=IndexTuning(
                payload_on_disk=settings.payload_on_disk,
                dense_on_disk=settings.dense_on_disk,
                dense_int8=settings.dense_int8,
                bulk_segment_chunks=settings.bulk_segment_chunks,
            ),
            min_free_bytes=settings.min_free_mb * 1024 * 1024,
        )

    def held_elsewhere(self) -> bool:
        """Whether another process has this index open (its lock is taken); nothing is opened."""
        return self._lock.held_elsewhere()

    def _check_space(self, what: str) -> None:
        """Refuse to write when the disk is nearly full: the engine's files are memory-mapped, and a
        write into a mapping the disk cannot back kills the process (SIGBUS) instead of failing."""
        if self._min_free <= 0:
            return
        free = shutil.disk_usage(self.root).free
        if free < self._min_free:
            mb = 1024 * 1024
            raise StorageFull(
                f"{what} refused: the data disk of {self.root} has {free // mb} MB free, "
                f"under the {self._min_free // mb} MB ragd keeps free",
                hint="free disk space (searches still work), or lower RAGD_STORE__MIN_FREE_MB",
            )

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self, manifest: IndexManifest) -> None:
        if self._shard is not None:
            raise StoreError(f"the store at {self.root} is already open")
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ragd-edge")
        self._optimizer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragd-edge-optimize")
        try:
            self._shard, opened = await self._run(lambda: self._open_sync(manifest))
        except BaseException:
            self._shutdown_pools()
            raise
        self._dims = pl.dense_vector_names(opened)
        self._sparse = pl.SparseLayout.of(opened)
        await self._count_segments()

    def _open_sync(self, manifest: IndexManifest) -> tuple[_ShardHandle, IndexManifest]:
        self.root.mkdir(parents=True, exist_ok=True)
        self._check_space("opening the index")
        self._lock.acquire()
        try:
            shard, opened = self._load_or_create(manifest)
            _ensure_payload_indexes(shard.engine)
            self._disabled.recount(shard.engine)
        except BaseException:
            self._lock.release()
            raise
        return shard, opened

    def _load_or_create(self, manifest: IndexManifest) -> tuple[_ShardHandle, IndexManifest]:
        """The shard, and the manifest it is opened with (an existing index's own sparse layout)."""
        shard_dir = self.root / SHARD_DIR
        if shard_dir.is_dir() and any(shard_dir.iterdir()):
            found = read_manifest_file(self.root / MANIFEST_FILE)
            if found is None:
                raise IndexMismatch(f"the index at {self.root} has no {MANIFEST_FILE}", hint=FIX_HINT)
            opened = check_manifest(found, manifest, str(self.root))
            created = False
        else:
            write_manifest_file(self.root / MANIFEST_FILE, manifest)
            opened, created = manifest, True
        config = _edge_config(pl.dense_vector_names(opened), pl.SparseLayout.of(opened), self._tuning)

        def load() -> qe.EdgeShard:
            return _engine(lambda: qe.EdgeShard.load(str(shard_dir), config), f"load {shard_dir}")

        if created:
            log.info("creating Qdrant Edge shard %s (dense %s)", shard_dir, pl.dense_vector_names(opened))
            shard = _engine(lambda: qe.EdgeShard.create(str(shard_dir), config), f"create {shard_dir}")
        else:
            log.info("loading Qdrant Edge shard %s", shard_dir)
            shard = load()
        return _ShardHandle(shard, load, self.root), opened

    async def optimize(self) -> None:
        """Build indexes after bulk writes (blocks a background thread, not the loop).

        Concurrent callers share one run; writes and searches go on meanwhile."""
        shard = self._require_shard()
        if self._optimizing is None or self._optimizing.done():
            loop = asyncio.get_running_loop()
            self._optimizing = loop.run_in_executor(self._optimizer, _engine_call(shard.optimize, "optimize"))
            self._optimizing.add_done_callback(self._log_optimized)
        await asyncio.shield(self._optimizing)
        await self._count_segments()

    async def _count_segments(self) -> None:
        """The segments searches see change only when the engine optimizes (or loads): counted
        then, so a search need not ask."""
        shard = self._require_shard()
        self._segments = (await self._run(_engine_call(shard.info, "info"))).segments_count

    @contextlib.asynccontextmanager
    async def bulk(self) -> AsyncIterator[None]:
        self._bulk_loads += 1
        try:
            yield
        finally:
            self._bulk_loads -= 1
            if not self._bulk_loads:
                self._bulk_written = 0

    async def _bulk_wrote(self, n: int) -> None:
        """Inside a bulk load, optimize every ``bulk_segment_chunks`` chunks written: the write that
        crosses the bound waits for it (the engine holds the GIL while it optimizes anyway)."""
        bound = self._tuning.bulk_segment_chunks
        if not self._bulk_loads or bound <= 0:
            return
        self._bulk_written += n
        if self._bulk_written >= bound:
            self._bulk_written = 0
            log.info("bulk load: %d chunks written since the last optimize; optimizing", bound)
            await self.optimize()
            # every page a build wrote or read stays mapped into this process (and counts in its
            # memory) until its segment is unmapped: reopening the shard unmaps them all, so the
            # load's memory is its next build's, not every build's so far
            shard = self._shard
            if shard is not None:
                started = time.perf_counter()
                await self._run(shard.reopen)  # the same segments: optimize() counted them
                log.info("bulk load: %s reopened in %.1f s", self.root, time.perf_counter() - started)

    def _log_optimized(self, done: asyncio.Future[bool]) -> None:
        if not done.cancelled() and done.exception() is None:
            log.info("optimize %s: %s", self.root, "segments rebuilt" if done.result() else "nothing to do")

    async def close(self) -> None:
        shard = self._shard
        if shard is None:
            return
        if self._optimizing is not None and not self._optimizing.done():
            log.info("waiting for the running optimize() before closing %s", self.root)
            await asyncio.gather(self._optimizing, return_exceptions=True)
        try:
            await self._run(shard.close_for_good)
        finally:
            self._shard = None
            self._lock.release()
            self._shutdown_pools()

    async def ready(self) -> bool:
        shard = self._shard
        if shard is None:
            return False
        try:
            await self._run(shard.info)
        except Exception:  # any failure means "not ready"; the probe must not raise
            log.warning("Qdrant Edge shard %s did not answer", self.root, exc_info=True)
            return False
        return True

    # -- writes --------------------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[StoredChunk]) -> None:
        shard = self._require_shard()
        self._check_space(f"writing {len(chunks)} chunks")
        points = [_to_point(c, self._dims, self._sparse) for c in chunks]
        for start in range(0, len(points), UPSERT_BATCH):
            op = qe.UpdateOperation.upsert_points(points[start : start + UPSERT_BATCH])
            write = functools.partial(shard.update, op)
            if any(c.meta.get(pl.DISABLED_FIELD) for c in chunks[start : start + UPSERT_BATCH]):
                write = functools.partial(self._disabled.disabling, write)
            await self._run(_engine_call(write, "upsert"))
        await self._bulk_wrote(len(chunks))

    async def delete(self, flt: PointFilter) -> int:
        shard = self._require_shard()
        edge_filter = _edge_must(pl.delete_plan(flt))

        def run() -> int:
            n = shard.count(qe.CountRequest(exact=True, filter=edge_filter))
            if n:
                shard.update(qe.UpdateOperation.delete_points_by_filter(edge_filter))
                self._disabled.cleared(shard)
            return n

        return await self._run(_engine_call(run, "delete"))

    async def set_disabled(self, flt: PointFilter, disabled: bool) -> int:
        shard = self._require_shard()
        edge_filter = _edge_must(pl.scoped_plan(flt, "disable or enable"))
        key, payload = pl.disabled_update(disabled)

        def run() -> int:
            n = shard.count(qe.CountRequest(exact=True, filter=edge_filter))
            if n:  # merged into meta at `key`: the other meta keys stay
                shard.update(qe.UpdateOperation.set_payload_by_filter(edge_filter, payload, key=key))
                if not disabled:
                    self._disabled.cleared(shard)
            return n

        write = functools.partial(self._disabled.disabling, run) if disabled else run
        return await self._run(_engine_call(write, "set_disabled"))

    async def ensure_index(self, index: pl.PayloadIndex) -> bool:
        shard = self._require_shard()
        return await self._run(_engine_call(lambda: _ensure_index(shard, index), f"index {index.key}"))

    async def set_meta(self, flt: PointFilter, values: Mapping[str, Any]) -> int:
        shard = self._require_shard()
        edge_filter = _edge_must(pl.scoped_plan(flt, "set metadata"))
        key, payload = pl.meta_update(values)

        def run() -> int:
            n = shard.count(qe.CountRequest(exact=True, filter=edge_filter))
            if n:  # merged into meta at `key`: the other meta keys stay
                shard.update(qe.UpdateOperation.set_payload_by_filter(edge_filter, payload, key=key))
            return n

        return await self._run(_engine_call(run, "set_meta"))

    # -- reads ---------------------------------------------------------------------------------

    async def count(self, flt: PointFilter) -> int:
        shard = self._require_shard()
        request = qe.CountRequest(exact=True, filter=_edge_filter(pl.filter_plan(flt)))
        return await self._run(_engine_call(lambda: shard.count(request), "count"))

    async def scroll(
        self, flt: PointFilter, *, limit: int, offset: str | None = None, with_vectors: bool = False
    ) -> tuple[list[StoredChunk], str | None]:
        shard = self._require_shard()
        request = qe.ScrollRequest(
            offset=None if offset is None else pl.point_uuid(offset),
            limit=limit,
            filter=_edge_filter(pl.filter_plan(flt)),
            with_payload=True,
            with_vector=with_vectors,
        )
        records, next_id = await self._run(_engine_call(lambda: shard.scroll(request), "scroll"))
        chunks = [_from_record(r, self._sparse) for r in records]
        return chunks, None if next_id is None else pl.canonical_id(next_id)

    async def search(self, query: StoreQuery) -> list[Hit]:
        """Run on the event loop's own thread, not the pool's: the engine holds the GIL while it
        searches, so a worker thread would add no parallelism, only two hand-offs of the GIL
        between the loop and the worker under load (served search at 20 clients: 330 -> 367-381
        req/s on the loop; docs/benchmarks.md, "Served throughput").  Writes, scrolls and
        :meth:`search_after` (whose ``prepare`` embeds a query, the model releasing the GIL) stay
        on the pool."""
        shard = self._require_shard()
        return _search(shard, query, self._tuning, self._disabled.possible, self._sparse, self._segments)

    async def search_after(self, prepare: Callable[[], StoreQuery]) -> tuple[StoreQuery, list[Hit]]:
        shard = self._require_shard()

        def prepared_search() -> tuple[StoreQuery, list[Hit]]:
            query = prepare()
            return query, _search(
                shard, query, self._tuning, self._disabled.possible, self._sparse, self._segments
            )

        return await self._run(prepared_search)

    async def facet(self, key: str, flt: PointFilter, *, limit: int = 1000) -> dict[str, int]:
        shard = self._require_shard()
        pl.require_indexed(key)
        request = qe.FacetRequest(key=key, limit=limit, exact=True, filter=_edge_filter(pl.filter_plan(flt)))
        response = await self._run(_engine_call(lambda: shard.facet(request), "facet"))
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.count > 0}

    async def stats(self) -> dict[str, int]:
        """Points, indexed (HNSW) vectors and segments, as the engine counts them."""
        shard = self._require_shard()
        info = await self._run(_engine_call(shard.info, "info"))
        return {
            "points": info.points_count,
            "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count,
        }

    async def payload_schema(self) -> dict[str, tuple[str, bool]]:
        """Indexed payload keys as ``{key: (type, is_tenant)}`` (for checks and diagnostics)."""
        shard = self._require_shard()
        info = await self._run(_engine_call(shard.info, "info"))
        return {
            key: (
                str(index.data_type).rsplit(".", 1)[-1].lower(),
                bool(getattr(index.params, "is_tenant", None)),
            )
            for key, index in info.payload_schema.items()
        }

    @property
    def may_hold_disabled(self) -> bool:
        """False only when this process knows no point is disabled: searches then skip that filter."""
        return self._disabled.possible

    # -- helpers -------------------------------------------------------------------------------

    def _require_shard(self) -> qe.EdgeShard:
        if self._shard is None:
            raise StoreUnavailable(f"the store at {self.root} is not open", hint="call open() first")
        return cast(qe.EdgeShard, self._shard)  # every engine call through the handle

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    def _shutdown_pools(self) -> None:
        for pool in (self._pool, self._optimizer):
            if pool is not None:
                pool.shutdown(wait=True)
        self._pool = self._optimizer = None


class _ShardHandle:
    """The open engine shard, behind one lock, so that it can be closed and loaded again between
    two calls (a bulk load's reopen).

    Every engine call goes through the handle, including one whose caller took the handle before a
    reopen, so none reaches a closed shard.  qdrant-edge holds the GIL through each call, so engine
    calls never overlapped anyway: the lock serialises nothing that ran in parallel."""

    def __init__(self, shard: qe.EdgeShard, load: Callable[[], qe.EdgeShard], where: Path) -> None:
        self._engine: qe.EdgeShard | None = shard
        self._load = load
        self._where = where
        self._mutex = threading.RLock()

    @property
    def engine(self) -> qe.EdgeShard:
        """The shard itself, for work done while nothing else can reach it (opening)."""
        if self._engine is None:
            raise StoreUnavailable(
                f"the index at {self._where} is closed (or could not be loaded again after a bulk load)",
                hint="see the log for the load's error, then restart ragd",
            )
        return self._engine

    def __getattr__(self, name: str) -> Any:
        method = getattr(qe.EdgeShard, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._mutex:
                return method(self.engine, *args, **kwargs)

        setattr(self, name, call)  # found here next time
        return call

    def reopen(self) -> None:
        """Flush, close and load the shard again: unmapping its segments hands the pages a build
        touched back to the kernel.  Should the load fail, the store answers StoreUnavailable."""
        with self._mutex:
            self.close_for_good()
            self._engine = self._load()

    def close_for_good(self) -> None:
        with self._mutex:
            shard, self._engine = self.engine, None
            _close_shard(shard)


class _DisabledGuard:
    """Whether the shard may hold a point with ``meta.disabled == true``.

    Searches leave disabled points out with a ``must_not`` on every prefetch, and the engine
    pays for that condition even when it matches nothing (a tenant's dense prefetch at 100k
    points: 0.33 -> 0.65 ms with ACORN).  This process alone has the shard open
    (:class:`DirLock`), so it can know that no point is disabled and let searches skip it.

    ``possible`` starts True (safe) and is recounted on open.  A write that may disable points
    runs inside :meth:`disabling`, which raises the flag before the write; a write that may have
    cleared the last one calls :meth:`cleared` (a recount) after it.  Both hold one lock, so a
    recount never overlooks a disabling write running beside it.  A search that reads the flag just
    before a concurrent disabling write completes sees the store as it was before that write."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.possible = True

    def cleared(self, shard: qe.EdgeShard) -> None:
        """After a write that may have removed or enabled the last disabled point.  Skipped when
        the flag is already down: only a disabling write raises it, and that write does so itself."""
        if self.possible:
            self.recount(shard)

    def disabling(self, write: Callable[[], T]) -> T:
        with self._lock:
            self.possible = True
            return write()

    def recount(self, shard: qe.EdgeShard) -> None:
        """Count the disabled points and store whether there are any."""
        with self._lock:
            disabled = qe.Filter(must=[qe.FieldCondition(key=pl.DISABLED_KEY, match=_edge_bool(True))])
            self.possible = shard.count(qe.CountRequest(exact=True, filter=disabled)) > 0


def _search(
    shard: qe.EdgeShard,
    query: StoreQuery,
    tuning: IndexTuning,
    exclude_disabled: bool,
    layout: pl.SparseLayout,
    segments: int = 1,
) -> list[Hit]:
    """One search, start to hits, on the calling thread.

    ``exclude_disabled=False`` (no point is disabled) leaves the exclusion out of the filter;
    ``layout``: where the index keeps its sparse vectors (its manifest's); ``segments``: the
    engine's count (:class:`_DenseList` rescores once across them when there are several)."""
    kind = search_kind(query)
    plan = pl.search_plan(query.filter) if exclude_disabled else pl.filter_plan(query.filter)
    edge_filter = _edge_filter(plan)
    dense_list = _DenseList(query, edge_filter, tuning, filtered=plan.narrows, segments=segments)
    sparse_using = pl.SPARSE_VECTOR
    if kind is not SearchMode.DENSE and query.sparse is not None:
        lists = layout.queries(query.filter, query.sparse)
        if len(lists) != 1:
            return _grouped_search(shard, query, kind, edge_filter, dense_list, lists)
        sparse_using, vector = lists[0]
        if vector is not query.sparse:  # its group's term ids
            query = dataclasses.replace(query, sparse=vector)
    with_vector = [pl.dense_vector_name(query.space)] if query.explain else False
    if kind is SearchMode.DENSE:
        request = dense_list.request(query.limit, with_payload=True, with_vector=with_vector)
        return assemble_hits(kind, _rows(_engine(lambda: shard.query(request), "search")))
    if kind is SearchMode.SPARSE:
        request = qe.QueryRequest(
            limit=query.limit,
            query=_nearest(query, kind, sparse_using),
            filter=edge_filter,
            with_payload=True,
            with_vector=with_vector,
        )
        return assemble_hits(kind, _rows(_engine(lambda: shard.query(request), "search")))
    requests = _hybrid_requests(query, edge_filter, dense_list, sparse_using)
    if query.fusion.method is FusionMethod.CONVEX:
        return _convex_search(shard, query, requests[1:])
    if not query.explain:
        only = requests[0]
        return assemble_hits(kind, _rows(_engine(lambda: shard.query(only), "search")))
    batch = qe.QueryBatchRequest(requests)
    fused, dense, sparse = _engine(lambda: shard.query_batch(batch), "search")
    return assemble_hits(kind, _rows(fused), scores_by_id(dense), scores_by_id(sparse), query.dense)


def _convex_search(shard: qe.EdgeShard, query: StoreQuery, lists: list[qe.QueryRequest]) -> list[Hit]:
    """Convex hybrid: the two lists in one batch, fused here, the best fetched by id."""
    dense_rows, sparse_rows = _engine(lambda: shard.query_batch(qe.QueryBatchRequest(lists)), "search")
    return _fetch_fused(shard, query, fused_plan(query, dense_rows, sparse_rows))


def _grouped_search(
    shard: qe.EdgeShard,
    query: StoreQuery,
    kind: SearchMode,
    edge_filter: qe.Filter | None,
    dense_list: _DenseList,
    by_group: Sequence[tuple[str, SparseVector]],
) -> list[Hit]:
    """A sparse or hybrid search over several sparse named vectors (an index whose groups are
    vectors): each group's list in one batch (with the dense list), merged by score; a hybrid one
    fused here and the best fetched by id."""
    alone = kind is SearchMode.SPARSE
    n = query.limit if alone else query.prefetch_limit
    lists = [
        qe.QueryRequest(
            limit=n,
            query=qe.Query.Nearest(_edge_sparse(vector), using=name),
            filter=edge_filter,
            with_payload=alone,
            with_vector=[pl.dense_vector_name(query.space)] if alone and query.explain else False,
        )
        for name, vector in by_group
    ]
    if not alone:
        lists.insert(0, dense_list.request(n, with_payload=False))
    found = _engine(lambda: shard.query_batch(qe.QueryBatchRequest(lists)), "search") if lists else []
    if alone:
        return assemble_hits(kind, _rows(merge_by_score(found, n)))
    dense_rows, *sparse_lists = found
    return _fetch_fused(shard, query, fused_plan(query, dense_rows, merge_by_score(sparse_lists, n)))


def _fetch_fused(shard: qe.EdgeShard, query: StoreQuery, plan: FusedPlan) -> list[Hit]:
    """The fused plan's points fetched by id, as hits in fused order."""
    ids = [plan.raw_ids[point_id] for point_id, _ in plan.order]
    with_vector = [pl.dense_vector_name(query.space)] if query.explain else False
    records = _engine(lambda: shard.retrieve(ids, True, with_vector), "search") if ids else []
    fetched = [EnginePoint(r.id, 0.0, r.payload, _dense_of(r.vector)) for r in records]
    return assemble_hits(SearchMode.HYBRID, fused_rows(plan, fetched), plan.dense, plan.sparse, query.dense)


def _edge_config(dims: dict[str, int], sparse: pl.SparseLayout, tuning: IndexTuning) -> qe.EdgeConfig:
    return qe.EdgeConfig(
        vectors={
            name: qe.EdgeVectorParams(
                size=dim,
                distance=qe.Distance.Cosine,
                on_disk=tuning.dense_on_disk or None,
                quantization_config=(
                    qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, always_ram=True)
                    if tuning.dense_int8
                    else None
                ),
            )
            for name, dim in dims.items()
        },
        sparse_vectors={
            name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf) for name in sparse.vector_names()
        },
        hnsw_config=qe.HnswIndexConfig(
            m=tuning.m,
            ef_construct=tuning.ef_construct,
            full_scan_threshold=tuning.full_scan_threshold_kb,
            max_indexing_threads=tuning.max_indexing_threads,
            payload_m=tuning.payload_m,
        ),
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=tuning.indexing_threshold_kb),
        on_disk_payload=tuning.payload_on_disk,
        max_search_threads=tuning.search_threads or os.cpu_count() or 1,
    )


def _ensure_payload_indexes(shard: qe.EdgeShard) -> None:
    existing = shard.info().payload_schema
    for index in pl.PAYLOAD_INDEXES:
        if index.key in existing:
            continue
        params: Any = qe.PayloadSchemaType.Keyword
        if index.kind is pl.IndexKind.BOOL:
            params = qe.PayloadSchemaType.Bool
        elif index.kind is pl.IndexKind.INTEGER:
            params = qe.IntegerIndexParams(lookup=False, range=True)
        elif index.is_tenant:
            params = qe.KeywordIndexParams(is_tenant=True)
        op = qe.UpdateOperation.create_field_index(index.key, params)
        _engine(functools.partial(shard.update, op), f"create payload index {index.key}")
        log.info("created payload index %s", index.key)


def _ensure_index(shard: qe.EdgeShard, index: pl.PayloadIndex) -> bool:
    if index.key in shard.info().payload_schema:
        return False
    params: Any = {
        pl.IndexKind.FLOAT: qe.PayloadSchemaType.Float,
        pl.IndexKind.DATETIME: qe.PayloadSchemaType.Datetime,
        pl.IndexKind.BOOL: qe.PayloadSchemaType.Bool,
        pl.IndexKind.INTEGER: qe.IntegerIndexParams(lookup=True, range=True),
    }.get(index.kind, qe.PayloadSchemaType.Keyword)
    shard.update(qe.UpdateOperation.create_field_index(index.key, params))
    log.info("created payload index %s (%s)", index.key, index.kind.value)
    return True


def _close_shard(shard: qe.EdgeShard) -> None:
    _engine(shard.flush, "flush")
    shard.close()


def _edge_filter(plan: pl.FilterPlan) -> qe.Filter | None:
    return None if plan.is_empty else _edge_must(plan)


def _edge_must(plan: pl.FilterPlan) -> qe.Filter:
    must: list[Any] = []
    for match in plan.matches:
        cond = qe.MatchValue(match.values[0]) if len(match.values) == 1 else qe.MatchAny(list(match.values))
        must.append(qe.FieldCondition(key=match.key, match=cond))
    for bounds in plan.ranges:
        must.append(qe.FieldCondition(key=bounds.key, range=qe.RangeFloat(gte=bounds.gte, lte=bounds.lte)))
    if plan.ids is not None:
        must.append(qe.HasIdCondition(set(plan.ids)))
    if plan.where is not None:  # ANDed: the user's filter can only narrow the scope above
        must.append(_edge_where(plan.where))
    must_not: list[Any] = [
        qe.FieldCondition(key=flag.key, match=_edge_bool(flag.value)) for flag in plan.excluded
    ]
    return qe.Filter(must=must or None, must_not=must_not or None)


def _edge_where(flt: MetaFilter) -> qe.Filter:
    """A user's filter expression as an engine filter (its keys mapped onto the payload)."""
    return qe.Filter(
        must=[_edge_node(n) for n in flt.must] or None,
        should=[_edge_node(n) for n in flt.should] or None,
        must_not=[_edge_node(n) for n in flt.must_not] or None,
    )


def _edge_node(node: FilterNode) -> Any:
    if isinstance(node, MetaFilter):
        return _edge_where(node)
    key = pl.payload_key(node.key)
    if isinstance(node, EmptyCondition):
        empty = qe.IsEmptyCondition(key)
        return empty if node.empty else qe.Filter(must_not=[empty])
    if isinstance(node, RangeCondition):
        bounds: Any = qe.RangeDateTime if node.dates else qe.RangeFloat
        return qe.FieldCondition(key=key, range=bounds(gt=node.gt, gte=node.gte, lt=node.lt, lte=node.lte))
    if len(node.values) == 1:
        value = node.values[0]
        return qe.FieldCondition(
            key=key, match=_edge_bool(value) if isinstance(value, bool) else qe.MatchValue(value)
        )
    return qe.FieldCondition(key=key, match=qe.MatchAny(list(node.values)))  # type: ignore[arg-type]


def _edge_bool(value: bool) -> qe.MatchValue:
    """Match a boolean.  qdrant-edge 0.9 turns ``MatchValue(True)`` into the integer 1, which
    never matches a stored ``true``; numpy's bool is not an int, so it arrives as a boolean."""
    return qe.MatchValue(np.bool_(value))  # type: ignore[arg-type]


def _to_point(chunk: StoredChunk, dims: dict[str, int], sparse: pl.SparseLayout) -> qe.Point:
    vectors: dict[str, Any] = dict([pl.require_dense(chunk, dims)])
    if chunk.sparse is not None:
        name, stored = sparse.stored(chunk, chunk.sparse)
        vectors[name] = _edge_sparse(stored)
    return qe.Point(id=pl.point_uuid(chunk.id), vector=vectors, payload=pl.to_payload(chunk))


def _edge_sparse(vector: SparseVector) -> qe.SparseVector:
    return qe.SparseVector(indices=list(vector.indices), values=[float(v) for v in vector.values])


def _from_record(record: Any, layout: pl.SparseLayout) -> StoredChunk:
    vectors = record.vector if isinstance(record.vector, dict) else {}
    space, dense = pl.dense_of_point(vectors)
    sparse = layout.read_back(vectors, record.payload)
    return pl.from_point(record.id, record.payload, dense=dense, sparse=sparse, space=space)


def _nearest(query: StoreQuery, kind: SearchMode, sparse_using: str = pl.SPARSE_VECTOR) -> Any:
    if kind is SearchMode.DENSE and query.dense is not None:
        vector = np.asarray(query.dense, dtype=np.float32).tolist()
        return qe.Query.Nearest(vector, using=pl.dense_vector_name(query.space))
    if kind is SearchMode.SPARSE and query.sparse is not None:
        return qe.Query.Nearest(_edge_sparse(query.sparse), using=sparse_using)
    raise ValueError(f"no {kind.value} vector in the query")


# from this many segments on (the engine keeps one appendable segment beside the sealed ones, so:
# two sealed), a dense list is asked in two stages, its candidates rescored once (:class:`_DenseList`)
RESCORE_ONCE_FROM_SEGMENTS = 3


class _DenseList:
    """How a dense list of ``limit`` points is asked of the engine.

    With the int8 copy (``dense_int8``) the engine scans int8 vectors and rescores its best
    ``limit x oversampling`` candidates with their float32 vectors, but it does so in each segment:
    an index of S segments reads S x ``limit x oversampling`` float32 vectors a list, and with the
    vectors on disk (``dense_on_disk``) every vector read maps its page into the process.  A
    bulk-built 1M-chunk index has five sealed segments (``bulk_segment_chunks``): its resident memory
    grew by five times the pages of an index of one, and its searches waited for them.

    From :data:`RESCORE_ONCE_FROM_SEGMENTS` on, the list is asked in two stages: each segment's best
    ``limit x oversampling`` by int8 score, no float32 read; then those candidates, pooled across
    segments, rescored once (the second stage's own ``oversampling`` covers every candidate a segment
    holds).  The candidates and the exact cosine scores are those one segment would give.  With one
    sealed segment the one stage reads the same vectors and costs less (at 100k chunks the two
    stages cost 0.1–1.1 ms more a search, most when the page cache is cold), so it stays.  Without
    the int8 copy: one exact stage."""

    def __init__(
        self,
        query: StoreQuery,
        edge_filter: qe.Filter | None,
        tuning: IndexTuning,
        *,
        filtered: bool,
        segments: int = 1,
    ) -> None:
        self._nearest = _nearest(query, SearchMode.DENSE) if query.dense is not None else None
        self._filter = edge_filter
        self._oversampling = tuning.oversampling
        self._two_stages = tuning.dense_int8 and segments >= RESCORE_ONCE_FROM_SEGMENTS
        acorn = qe.AcornSearchParams(enable=True) if tuning.acorn and filtered else None
        hnsw_ef = query.hnsw_ef or tuning.hnsw_ef
        if not tuning.dense_int8:  # off at once: an index keeps its int8 copy until an optimize
            quantization = qe.QuantizationSearchParams(ignore=True)
        elif self._two_stages:
            quantization = qe.QuantizationSearchParams(rescore=False)
        else:
            quantization = qe.QuantizationSearchParams(rescore=True, oversampling=tuning.oversampling)
        self._first = qe.SearchParams(hnsw_ef=hnsw_ef, acorn=acorn, quantization=quantization)

    def request(
        self, limit: int, *, with_payload: bool, with_vector: list[str] | bool = False
    ) -> qe.QueryRequest:
        return qe.QueryRequest(
            limit=limit, **self._stages(limit), with_payload=with_payload, with_vector=with_vector
        )

    def prefetch(self, limit: int) -> qe.Prefetch:
        return qe.Prefetch(limit=limit, **self._stages(limit))

    def _stages(self, limit: int) -> dict[str, Any]:
        if self._nearest is None:
            raise ValueError("no dense vector in the query")
        if not self._two_stages:
            return {"query": self._nearest, "filter": self._filter, "params": self._first}
        candidates = qe.Prefetch(
            limit=max(limit, math.ceil(limit * self._oversampling)),
            query=self._nearest,
            filter=self._filter,
            params=self._first,
        )
        rescored = qe.SearchParams(  # a search among the candidates: the engine scans them
            hnsw_ef=self._first.hnsw_ef,
            quantization=qe.QuantizationSearchParams(rescore=True, oversampling=self._oversampling),
        )
        return {"query": self._nearest, "prefetches": [candidates], "params": rescored}


def _hybrid_requests(
    query: StoreQuery, edge_filter: qe.Filter | None, dense_list: _DenseList, sparse_using: str
) -> list[qe.QueryRequest]:
    sparse = _nearest(query, SearchMode.SPARSE, sparse_using)
    n = query.prefetch_limit
    fused = qe.QueryRequest(
        limit=query.limit,
        prefetches=[dense_list.prefetch(n), qe.Prefetch(limit=n, query=sparse, filter=edge_filter)],
        query=qe.Fusion.Rrf(k=query.fusion.k, weights=fusion_weights(query)),  # type: ignore[arg-type]
        with_payload=True,
        with_vector=[pl.dense_vector_name(query.space)] if query.explain else False,
    )
    return [
        fused,
        dense_list.request(n, with_payload=False),
        qe.QueryRequest(limit=n, query=sparse, filter=edge_filter, with_payload=False),
    ]


def _rows(points: Sequence[qe.ScoredPoint]) -> list[EnginePoint]:
    return [EnginePoint(p.id, p.score, p.payload, _dense_of(p.vector)) for p in points]


def _dense_of(vectors: Any) -> Sequence[float] | None:
    return pl.dense_of_point(vectors)[1]


def _engine_call(fn: Callable[[], T], what: str) -> Callable[[], T]:
    return lambda: _engine(fn, what)


def _engine(fn: Callable[[], T], what: str) -> T:
    """Run one Edge call, translating its (untyped) exceptions into ragd's errors."""
    try:
        return fn()
    except RagError:
        raise
    except Exception as exc:
        text = str(exc)
        if "WouldBlock" in text:
            raise StoreLocked(
                f"Qdrant Edge {what}: the shard is in use by another process",
                hint="stop the other ragd process (e.g. `ragd serve`) or use another data dir",
            ) from exc
        if "incompatible" in text.lower():
            raise IndexMismatch(f"Qdrant Edge {what}: {text}", hint=FIX_HINT) from exc
        raise store_failure(what, f"Qdrant Edge {what} failed: {text}") from exc
