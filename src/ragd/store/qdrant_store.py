"""VectorStore on a Qdrant server through ``qdrant-client``'s AsyncQdrantClient.

``url`` + ``api_key`` reach a server.  ``location=":memory:"`` or ``path=``
run qdrant-client's *local mode*: a pure-Python re-implementation of the
server API that scans every point and ignores indexes — the reference the
contract tests compare Qdrant Edge against, not a store to serve from.

The manifest lives in the collection's ``metadata`` (a server that does not keep
collection metadata, before 1.16, fails the open).  Weighted RRF is sent as
``RrfQuery(rrf=Rrf(k, weights))``, which needs a server with parametrised RRF.
The client's start-up version probe is off (``check_compatibility=False``):
open() checks the collection itself.  ``qdrant_client`` is imported here only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from ragd.errors import (
    ConfigurationError,
    IndexMismatch,
    RagError,
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
    METADATA_KEY,
    check_manifest,
    manifest_from_dict,
    manifest_to_dict,
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

UPSERT_BATCH = 256
CONFLICT = 409


class QdrantStore:
    """A store on one collection of a Qdrant server (or of qdrant-client local mode).

    ``client_factory`` builds the client from the connection keywords; tests pass a
    recording subclass of AsyncQdrantClient."""

    def __init__(
        self,
        *,
        url: str | None = None,
        api_key: str | None = None,
        path: Path | None = None,
        collection: str = "ingestion_files",
        timeout_s: float = 30.0,
        tuning: IndexTuning | None = None,
        client_factory: Callable[..., AsyncQdrantClient] = AsyncQdrantClient,
    ) -> None:
        if (url is None) == (path is None):
            raise ConfigurationError("the Qdrant store needs exactly one of url (or ':memory:') and path")
        self.collection = collection
        self._where = f"collection {collection!r} at {url or path}"
        self._connect = _connect_args(url, path, api_key, timeout_s)
        self._client_factory = client_factory
        self._local = url == ":memory:" or path is not None
        self._lock = None if path is None else DirLock(path)
        self._tuning = tuning or IndexTuning()
        self._client: AsyncQdrantClient | None = None
        self._dims: dict[str, int] = {}
        self._indexed: set[str] = set()  # field indexes this handle created (local mode reports none)
        self._sparse = pl.SparseLayout()

    @classmethod
    def from_settings(cls, settings: StoreSettings) -> QdrantStore:
        if not settings.url:
            raise ConfigurationError("store.backend=qdrant needs store.url (a server URL or ':memory:')")
        return cls(
            url=settings.url,
            api_key=settings.api_key,
            collection=settings.collection,
            timeout_s=settings.timeout_s,
            tuning=IndexTuning(
                payload_on_disk=settings.payload_on_disk,
                dense_on_disk=settings.dense_on_disk,
                dense_int8=settings.dense_int8,
            ),
        )

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self, manifest: IndexManifest) -> None:
        if self._client is not None:
            raise StoreError(f"the store on {self._where} is already open")
        if self._lock is not None:  # local mode on disk: one process, refused clearly
            self._lock.acquire()
        try:
            with _translated("connect"):
                client = self._client_factory(**self._connect)
            try:
                with _translated("open"):
                    opened = await self._open_collection(client, manifest)
            except BaseException:
                await client.close()
                raise
        except BaseException:
            if self._lock is not None:
                self._lock.release()
            raise
        self._client, self._dims = client, pl.dense_vector_names(opened)
        self._sparse = pl.SparseLayout.of(opened)

    async def _open_collection(self, client: AsyncQdrantClient, manifest: IndexManifest) -> IndexManifest:
        """Create the collection if it is missing; the manifest it is opened with."""
        if not await client.collection_exists(self.collection):
            await self._create(client, manifest)
        opened = await self._check_existing(client, manifest)
        await self._ensure_payload_indexes(client)
        return opened

    async def _create(self, client: AsyncQdrantClient, manifest: IndexManifest) -> None:
        t = self._tuning
        try:
            await client.create_collection(
                self.collection,
                vectors_config={
                    name: models.VectorParams(
                        size=dim,
                        distance=models.Distance.COSINE,
                        quantization_config=_int8(t),
                        on_disk=t.dense_on_disk or None,
                    )
                    for name, dim in pl.dense_vector_names(manifest).items()
                },
                sparse_vectors_config={
                    name: models.SparseVectorParams(modifier=models.Modifier.IDF)
                    for name in pl.SparseLayout.of(manifest).vector_names()
                },
                hnsw_config=models.HnswConfigDiff(
                    m=t.m,
                    payload_m=t.payload_m,
                    ef_construct=t.ef_construct,
                    full_scan_threshold=t.full_scan_threshold_kb,
                ),
                optimizers_config=models.OptimizersConfigDiff(indexing_threshold=t.indexing_threshold_kb),
                on_disk_payload=t.payload_on_disk,
                metadata={METADATA_KEY: manifest_to_dict(manifest)},
            )
            dense = pl.dense_vector_names(manifest)
            log.info("created Qdrant collection %s (dense %s)", self.collection, dense)
        except UnexpectedResponse as exc:
            if exc.status_code != CONFLICT:
                raise
            log.info(
                "collection %s was created concurrently by another process; checking it", self.collection
            )

    async def _check_existing(self, client: AsyncQdrantClient, manifest: IndexManifest) -> IndexManifest:
        config = (await client.get_collection(self.collection)).config
        stored = (config.metadata or {}).get(METADATA_KEY)
        if not isinstance(stored, dict):
            raise IndexMismatch(
                f"the {self._where} has no ragd manifest in its metadata (made by another tool, or a Qdrant "
                "server older than 1.16 that drops collection metadata)",
                hint=FIX_HINT,
            )
        opened = check_manifest(manifest_from_dict(stored, self._where), manifest, self._where)
        problems = _layout_problems(
            config.params, pl.dense_vector_names(opened), pl.SparseLayout.of(opened).vector_names()
        )
        if problems:
            raise IndexMismatch(
                f"the {self._where} has another vector layout: " + "; ".join(problems), hint=FIX_HINT
            )
        return opened

    async def _ensure_payload_indexes(self, client: AsyncQdrantClient) -> None:
        existing = (await client.get_collection(self.collection)).payload_schema or {}
        for index in pl.PAYLOAD_INDEXES:
            if index.key in existing:
                continue
            schema = _index_schema(index)
            with warnings.catch_warnings():
                if self._local:  # local mode warns that indexes are no-ops there; a server uses them
                    warnings.filterwarnings(
                        "ignore", message="Payload indexes have no effect", category=UserWarning
                    )
                await client.create_payload_index(self.collection, index.key, field_schema=schema, wait=True)
            log.info("created payload index %s on %s", index.key, self.collection)

    @contextlib.asynccontextmanager
    async def bulk(self) -> AsyncIterator[None]:
        """A server optimizes on its own while points arrive: nothing to bound here."""
        yield

    async def optimize(self) -> None:
        """Nothing to do: a Qdrant server builds indexes by itself (local mode has none)."""
        self._require_client()

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            finally:
                if self._lock is not None:
                    self._lock.release()

    async def ready(self) -> bool:
        if self._client is None:
            return False
        try:
            return await self._client.collection_exists(self.collection)
        except Exception:  # any failure means "not ready"; the probe must not raise
            log.warning("Qdrant did not answer on %s", self._where, exc_info=True)
            return False

    # -- writes --------------------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[StoredChunk]) -> None:
        client = self._require_client()
        points = [_to_point(c, self._dims, self._sparse) for c in chunks]
        for start in range(0, len(points), UPSERT_BATCH):
            with _translated("upsert"):
                await client.upsert(self.collection, points[start : start + UPSERT_BATCH], wait=True)

    async def delete(self, flt: PointFilter) -> int:
        client = self._require_client()
        qfilter = _qdrant_must(pl.delete_plan(flt))
        with _translated("delete"):
            n = (await client.count(self.collection, count_filter=qfilter, exact=True)).count
            if n:
                selector = models.FilterSelector(filter=qfilter)
                await client.delete(self.collection, points_selector=selector, wait=True)
        return n

    async def set_disabled(self, flt: PointFilter, disabled: bool) -> int:
        client = self._require_client()
        qfilter = _qdrant_must(pl.scoped_plan(flt, "disable or enable"))
        key, payload = pl.disabled_update(disabled)
        with _translated("set_disabled"):
            n = (await client.count(self.collection, count_filter=qfilter, exact=True)).count
            if n:  # merged into meta at `key`: the other meta keys stay
                selector = models.FilterSelector(filter=qfilter)
                await client.set_payload(self.collection, payload, selector, key=key, wait=True)
        return n

    async def ensure_index(self, index: pl.PayloadIndex) -> bool:
        client = self._require_client()
        with _translated("ensure_index"):
            existing = (await client.get_collection(self.collection)).payload_schema or {}
            if index.key in existing or index.key in self._indexed:
                return False
            with warnings.catch_warnings():
                if self._local:  # local mode warns that indexes are no-ops there; a server uses them
                    warnings.filterwarnings(
                        "ignore", message="Payload indexes have no effect", category=UserWarning
                    )
                await client.create_payload_index(
                    self.collection, index.key, field_schema=_index_schema(index), wait=True
                )
        self._indexed.add(index.key)  # local mode reports no schema
        log.info("created payload index %s (%s) on %s", index.key, index.kind.value, self.collection)
        return True

    async def set_meta(self, flt: PointFilter, values: Mapping[str, Any]) -> int:
        client = self._require_client()
        qfilter = _qdrant_must(pl.scoped_plan(flt, "set metadata"))
        key, payload = pl.meta_update(values)
        with _translated("set_meta"):
            n = (await client.count(self.collection, count_filter=qfilter, exact=True)).count
            if n:  # merged into meta at `key`: the other meta keys stay
                selector = models.FilterSelector(filter=qfilter)
                await client.set_payload(self.collection, payload, selector, key=key, wait=True)
        return n

    # -- reads ---------------------------------------------------------------------------------

    async def count(self, flt: PointFilter) -> int:
        client = self._require_client()
        with _translated("count"):
            result = await client.count(
                self.collection, count_filter=_qdrant_filter(pl.filter_plan(flt)), exact=True
            )
        return result.count

    async def scroll(
        self, flt: PointFilter, *, limit: int, offset: str | None = None, with_vectors: bool = False
    ) -> tuple[list[StoredChunk], str | None]:
        client = self._require_client()
        with _translated("scroll"):
            records, next_id = await client.scroll(
                self.collection,
                scroll_filter=_qdrant_filter(pl.filter_plan(flt)),
                limit=limit,
                offset=None if offset is None else str(pl.point_uuid(offset)),
                with_payload=True,
                with_vectors=with_vectors,
            )
        chunks = [_from_record(r.id, r.payload, r.vector, self._sparse) for r in records]
        return chunks, None if next_id is None else pl.canonical_id(next_id)

    async def search(self, query: StoreQuery) -> list[Hit]:
        client = self._require_client()
        kind = search_kind(query)
        plan = pl.search_plan(query.filter)
        qfilter = _qdrant_must(plan)
        # local mode searches exactly and warns about search params: send none there
        ef = query.hnsw_ef
        params = None if self._local else _dense_params(self._tuning, filtered=plan.narrows, hnsw_ef=ef)
        sparse_using = pl.SPARSE_VECTOR
        if kind is not SearchMode.DENSE and query.sparse is not None:
            lists = self._sparse.queries(query.filter, query.sparse)
            if len(lists) != 1:
                return await self._grouped(client, query, kind, qfilter, params, lists)
            sparse_using, vector = lists[0]
            if vector is not query.sparse:  # its group's term ids
                query = dataclasses.replace(query, sparse=vector)
        if kind is not SearchMode.HYBRID:
            vector, using = _vector(query, kind, sparse_using)
            with _translated("search"):
                response = await client.query_points(
                    self.collection,
                    query=vector,
                    using=using,
                    query_filter=qfilter,
                    search_params=params if kind is SearchMode.DENSE else None,
                    limit=query.limit,
                    with_payload=True,
                    with_vectors=[pl.dense_vector_name(query.space)] if query.explain else False,
                )
            return assemble_hits(kind, _rows(response.points))
        requests = _hybrid_requests(query, qfilter, params, sparse_using)
        if query.fusion.method is FusionMethod.CONVEX:
            return await self._convex(client, query, requests[1:])
        if not query.explain:
            with _translated("search"):
                (only,) = await client.query_batch_points(self.collection, requests=requests[:1])
            return assemble_hits(kind, _rows(only.points))
        with _translated("search"):
            fused, dense, sparse = await client.query_batch_points(self.collection, requests=requests)
        return assemble_hits(
            kind,
            _rows(fused.points),
            scores_by_id(dense.points),
            scores_by_id(sparse.points),
            query.dense,
        )

    async def _convex(
        self, client: AsyncQdrantClient, query: StoreQuery, lists: list[models.QueryRequest]
    ) -> list[Hit]:
        """Convex hybrid: the two lists in one batch, fused here, the best fetched by id."""
        with _translated("search"):
            dense, sparse = await client.query_batch_points(self.collection, requests=lists)
        return await self._fetch_fused(client, query, fused_plan(query, dense.points, sparse.points))

    async def _grouped(
        self,
        client: AsyncQdrantClient,
        query: StoreQuery,
        kind: SearchMode,
        qfilter: models.Filter,
        params: models.SearchParams | None,
        by_group: Sequence[tuple[str, SparseVector]],
    ) -> list[Hit]:
        """A sparse or hybrid search over several sparse named vectors (an index whose groups are
        vectors): each group's list in one batch (with the dense list), merged by score; a hybrid
        one fused here and the best fetched by id."""
        alone = kind is SearchMode.SPARSE
        n = query.limit if alone else query.prefetch_limit
        lists = [
            models.QueryRequest(
                query=_sparse(vector),
                using=name,
                filter=qfilter,
                limit=n,
                with_payload=alone,
                with_vector=[pl.dense_vector_name(query.space)] if alone and query.explain else False,
            )
            for name, vector in by_group
        ]
        if not alone:
            dense, dense_using = _vector(query, SearchMode.DENSE)
            lists.insert(
                0,
                models.QueryRequest(
                    query=dense, using=dense_using, filter=qfilter, params=params, limit=n, with_payload=False
                ),
            )
        found = []
        if lists:
            with _translated("search"):
                found = [
                    response.points
                    for response in await client.query_batch_points(self.collection, requests=lists)
                ]
        if alone:
            return assemble_hits(kind, _rows(merge_by_score(found, n)))
        dense_rows, *sparse_lists = found
        return await self._fetch_fused(
            client, query, fused_plan(query, dense_rows, merge_by_score(sparse_lists, n))
        )

    async def _fetch_fused(self, client: AsyncQdrantClient, query: StoreQuery, plan: FusedPlan) -> list[Hit]:
        """The fused plan's points fetched by id, as hits in fused order."""
        ids = [plan.raw_ids[point_id] for point_id, _ in plan.order]
        with_vectors = [pl.dense_vector_name(query.space)] if query.explain else False
        fetched = await _fetch(client, self.collection, ids, with_vectors)
        return assemble_hits(
            SearchMode.HYBRID, fused_rows(plan, fetched), plan.dense, plan.sparse, query.dense
        )

    async def facet(self, key: str, flt: PointFilter, *, limit: int = 1000) -> dict[str, int]:
        client = self._require_client()
        pl.require_indexed(key)
        with _translated("facet"):
            response = await client.facet(
                self.collection,
                key,
                facet_filter=_qdrant_filter(pl.filter_plan(flt)),
                limit=limit,
                exact=True,
            )
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.count > 0}

    def _require_client(self) -> AsyncQdrantClient:
        if self._client is None:
            raise StoreUnavailable(f"the store on {self._where} is not open", hint="call open() first")
        return self._client


def _connect_args(
    url: str | None, path: Path | None, api_key: str | None, timeout_s: float
) -> dict[str, Any]:
    if url == ":memory:":
        return {"location": ":memory:"}
    if path is not None:
        return {"path": str(path)}
    return {"url": url, "api_key": api_key, "timeout": max(1, round(timeout_s)), "check_compatibility": False}


async def _fetch(
    client: AsyncQdrantClient, collection: str, ids: list[object], with_vectors: list[str] | bool
) -> list[EnginePoint]:
    """Points by id, with their payload (and dense vector), in no particular order."""
    if not ids:
        return []
    with _translated("search"):
        records = await client.retrieve(
            collection, ids=[str(i) for i in ids], with_payload=True, with_vectors=with_vectors
        )
    return [EnginePoint(r.id, 0.0, r.payload, _dense_of(r.vector)) for r in records]


def _layout_problems(
    params: models.CollectionParams, dims: dict[str, int], sparse_names: Sequence[str]
) -> list[str]:
    vectors = params.vectors if isinstance(params.vectors, dict) else {}
    problems = []
    for name, dim in dims.items():
        dense = vectors.get(name)
        if dense is None:
            problems.append(f"no named dense vector {name!r}")
        elif dense.size != dim or dense.distance != models.Distance.COSINE:
            problems.append(f"{name}: index has size {dense.size} {dense.distance.value}, needs {dim} Cosine")
    for name in sparse_names:
        sparse = (params.sparse_vectors or {}).get(name)
        if sparse is None:
            problems.append(f"no sparse vector {name!r}")
        elif sparse.modifier != models.Modifier.IDF:
            problems.append(f"{name}: index has modifier {sparse.modifier}, needs idf")
    return problems


def _qdrant_filter(plan: pl.FilterPlan) -> models.Filter | None:
    return None if plan.is_empty else _qdrant_must(plan)


def _qdrant_must(plan: pl.FilterPlan) -> models.Filter:
    must: list[models.Condition] = []
    for match in plan.matches:
        cond: models.Match = (
            models.MatchValue(value=match.values[0])
            if len(match.values) == 1
            else models.MatchAny(any=list(match.values))
        )
        must.append(models.FieldCondition(key=match.key, match=cond))
    for bounds in plan.ranges:
        must.append(models.FieldCondition(key=bounds.key, range=models.Range(gte=bounds.gte, lte=bounds.lte)))
    if plan.ids is not None:
        must.append(models.HasIdCondition(has_id=[str(i) for i in plan.ids]))
    if plan.where is not None:  # ANDed: the user's filter can only narrow the scope above
        must.append(_qdrant_where(plan.where))
    must_not: list[models.Condition] = [
        models.FieldCondition(key=flag.key, match=models.MatchValue(value=flag.value))
        for flag in plan.excluded
    ]
    return models.Filter(must=must or None, must_not=must_not or None)


def _qdrant_where(flt: MetaFilter) -> models.Filter:
    """A user's filter expression as a Qdrant filter (its keys mapped onto the payload)."""
    return models.Filter(
        must=[_qdrant_node(n) for n in flt.must] or None,
        should=[_qdrant_node(n) for n in flt.should] or None,
        must_not=[_qdrant_node(n) for n in flt.must_not] or None,
    )


def _qdrant_node(node: FilterNode) -> models.Condition:
    if isinstance(node, MetaFilter):
        return _qdrant_where(node)
    key = pl.payload_key(node.key)
    if isinstance(node, EmptyCondition):
        empty = models.IsEmptyCondition(is_empty=models.PayloadField(key=key))
        return empty if node.empty else models.Filter(must_not=[empty])
    if isinstance(node, RangeCondition):
        if node.dates:
            dates = models.DatetimeRange(gt=node.gt, gte=node.gte, lt=node.lt, lte=node.lte)
            return models.FieldCondition(key=key, range=dates)
        numbers = models.Range(gt=node.gt, gte=node.gte, lt=node.lt, lte=node.lte)
        return models.FieldCondition(key=key, range=numbers)
    if len(node.values) == 1:
        return models.FieldCondition(key=key, match=models.MatchValue(value=node.values[0]))
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(node.values)))


def _index_schema(index: pl.PayloadIndex) -> models.PayloadSchemaParams | models.PayloadSchemaType:
    if index.kind is pl.IndexKind.FLOAT:
        return models.PayloadSchemaType.FLOAT
    if index.kind is pl.IndexKind.DATETIME:
        return models.PayloadSchemaType.DATETIME
    if index.kind is pl.IndexKind.BOOL:
        return models.BoolIndexParams(type=models.BoolIndexType.BOOL)
    if index.kind is pl.IndexKind.INTEGER:
        return models.IntegerIndexParams(type=models.IntegerIndexType.INTEGER, lookup=False, range=True)
    return models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=index.is_tenant or None)


def _to_point(chunk: StoredChunk, dims: dict[str, int], sparse: pl.SparseLayout) -> models.PointStruct:
    vectors: dict[str, Any] = dict([pl.require_dense(chunk, dims)])
    if chunk.sparse is not None:
        name, stored = sparse.stored(chunk, chunk.sparse)
        vectors[name] = _sparse(stored)
    return models.PointStruct(id=str(pl.point_uuid(chunk.id)), vector=vectors, payload=pl.to_payload(chunk))


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=[float(v) for v in vector.values])


def _from_record(
    raw_id: object, payload: dict[str, Any] | None, vector: Any, layout: pl.SparseLayout
) -> StoredChunk:
    vectors = vector if isinstance(vector, dict) else {}
    space, dense = pl.dense_of_point(vectors)
    sparse = layout.read_back(vectors, payload)
    return pl.from_point(raw_id, payload, dense=dense, sparse=sparse, space=space)


def _vector(query: StoreQuery, kind: SearchMode, sparse_using: str = pl.SPARSE_VECTOR) -> tuple[Any, str]:
    if kind is SearchMode.DENSE and query.dense is not None:
        return [float(x) for x in query.dense], pl.dense_vector_name(query.space)
    if kind is SearchMode.SPARSE and query.sparse is not None:
        return _sparse(query.sparse), sparse_using
    raise ValueError(f"no {kind.value} vector in the query")


def _int8(tuning: IndexTuning) -> models.ScalarQuantization | None:
    if not tuning.dense_int8:
        return None
    return models.ScalarQuantization(
        scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8, always_ram=True)
    )


def _dense_params(tuning: IndexTuning, *, filtered: bool, hnsw_ef: int | None = None) -> models.SearchParams:
    acorn = models.AcornSearchParams(enable=True) if tuning.acorn and filtered else None
    # off means off at once: an index keeps an int8 copy until its next optimize drops it
    rescored = (
        models.QuantizationSearchParams(rescore=True, oversampling=tuning.oversampling)
        if tuning.dense_int8
        else models.QuantizationSearchParams(ignore=True)
    )
    return models.SearchParams(hnsw_ef=hnsw_ef or tuning.hnsw_ef, acorn=acorn, quantization=rescored)


def _hybrid_requests(
    query: StoreQuery, qfilter: models.Filter | None, params: models.SearchParams | None, sparse_name: str
) -> list[models.QueryRequest]:
    (dense, dense_using), (sparse, sparse_using) = (
        _vector(query, SearchMode.DENSE),
        _vector(query, SearchMode.SPARSE, sparse_name),
    )
    n = query.prefetch_limit
    fused = models.QueryRequest(
        prefetch=[
            models.Prefetch(query=dense, using=dense_using, filter=qfilter, params=params, limit=n),
            models.Prefetch(query=sparse, using=sparse_using, filter=qfilter, limit=n),
        ],
        query=models.RrfQuery(rrf=models.Rrf(k=query.fusion.k, weights=fusion_weights(query))),
        limit=query.limit,
        with_payload=True,
        with_vector=[pl.dense_vector_name(query.space)] if query.explain else False,
    )
    return [
        fused,
        models.QueryRequest(
            query=dense, using=dense_using, filter=qfilter, params=params, limit=n, with_payload=False
        ),
        models.QueryRequest(query=sparse, using=sparse_using, filter=qfilter, limit=n, with_payload=False),
    ]


def _rows(points: Sequence[models.ScoredPoint]) -> list[EnginePoint]:
    return [EnginePoint(p.id, p.score, p.payload, _dense_of(p.vector)) for p in points]


def _dense_of(vectors: Any) -> Sequence[float] | None:
    return pl.dense_of_point(vectors)[1]


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    """Translate qdrant-client's exceptions (server, transport, local mode) into ragd's errors."""
    try:
        yield
    except RagError:
        raise
    except (ResponseHandlingException, httpx.TransportError, ConnectionError, TimeoutError) as exc:
        raise StoreUnavailable(f"Qdrant {what}: the server did not answer ({exc})") from exc
    except UnexpectedResponse as exc:
        detail = exc.content.decode("utf-8", "replace")[:500]
        raise store_failure(what, f"Qdrant {what} failed: HTTP {exc.status_code} {detail}") from exc
    except RuntimeError as exc:
        if "already accessed" in str(exc):
            raise StoreLocked(
                f"Qdrant {what}: {exc}", hint="stop the other process or use another path"
            ) from exc
        raise store_failure(what, f"Qdrant {what} failed: {exc}") from exc
    except (ValueError, KeyError, AssertionError) as exc:  # local mode reports bad requests this way
        raise store_failure(what, f"Qdrant {what} failed: {exc}") from exc
