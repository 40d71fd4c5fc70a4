"""The search use-case: one function behind ``ragd search`` and ``POST /search``.

query -> embed (dense and/or sparse) -> store.search (both lists, fused: convex or RRF)
      -> normalise scores -> de-duplicate -> top k -> relevance (calibrated, absolute)

Hybrid searches always ask the engine for each hit's dense and BM25 scores too (the
``explain`` batch): a hit's relevance is computed from them (:mod:`ragd.retrieve.relevance`);
a sparse search embeds the query too, once it has its hits, and gives them their cosine (the
relevance of a hybrid search); a dense search has no BM25 score, and its own calibration.

With the local model and the embedded engine (the default), a search that finds the model idle
embeds its query and runs the engine query back to back on one of the store's worker threads:
each hand-off between the event loop and a worker costs ~0.15-0.2 ms on a 2-core VM, a tenth of
the whole search.  Under concurrent load the query goes through ``embed_query`` instead, which
embeds the queries that arrive together in one model call (:mod:`ragd.embed.query_batcher`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ragd.embed.base import DenseEmbedder, InProcessQueryEmbedder, SparseEmbedder
from ragd.embed.spaces import DenseSpaces
from ragd.errors import InvalidRequest
from ragd.language import detect_language
from ragd.retrieve.ranking import (
    dedup_by_content,
    dense_understands,
    fusion_for_language,
    merge_best,
    needs_deeper_page,
    normalise_scores,
    prefetch_limit,
    result_limit,
)
from ragd.retrieve.relevance import Evidence, evidence_for, with_cosines, with_relevance
from ragd.settings import RetrievalSettings
from ragd.store.base import InProcessSearch, VectorStore
from ragd.types import (
    CollectionVersion,
    DenseVector,
    FusionParams,
    HiddenVersions,
    Hit,
    MetaFilter,
    PointFilter,
    SearchMode,
    SparseVector,
    StoreQuery,
)

log = logging.getLogger(__name__)

#: how long the index's point count (BM25's N, which BM25-alone relevance reads) is reused, seconds
INDEX_POINTS_TTL = 60.0

#: reports how long a stage of a search took: ``embed_sparse``, ``embed_dense``, ``qdrant``
StageTimer = Callable[[str, float], None]


def _untimed(stage: str, seconds: float) -> None:
    """The timer of a retriever built without one."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    collections: tuple[str, ...]
    k: int = 5
    mode: SearchMode = SearchMode.HYBRID
    #: how many candidates to return before the caller's own re-ranking (>= k)
    candidates: int | None = None
    #: kept for callers that ask; hybrid hits always carry their component scores (relevance needs them)
    explain: bool = False
    #: hybrid: the dense list's share of the fusion (0-1, BM25 gets the rest); None: the setting
    vector_weight: float | None = None
    #: only chunks in one of these languages (ISO 639-1); empty: every language
    languages: tuple[str, ...] = ()
    #: the dense search's HNSW ef (None: the store's setting)
    hnsw_ef: int | None = None
    #: the user's filter expression (:mod:`ragd.retrieve.filters`), ANDed with ``collections``
    where: MetaFilter | None = None
    #: which version of a collection's chunks to read, over the one it serves (a migration
    #: evaluating its new version before the switch); unnamed collections read what they serve
    versions: Mapping[str, CollectionVersion] | None = None


class Retriever:
    """Searches the store with dense, sparse or hybrid retrieval."""

    def __init__(
        self,
        store: VectorStore,
        dense: DenseEmbedder,
        sparse: SparseEmbedder | None,
        settings: RetrievalSettings,
        model_languages: Sequence[str],
        spaces: DenseSpaces | None = None,
        timings: StageTimer | None = None,
    ) -> None:
        """``spaces``: the named dense models datasets may choose; a search over collections of
        several models embeds the query once per model and merges the lists (:meth:`search`)."""
        self._store = store
        self._dense = dense
        self._spaces = spaces or DenseSpaces(dense)
        self._timed: StageTimer = timings or _untimed
        self._sparse = sparse
        self._settings = settings
        self._languages = tuple(model_languages)
        self._points: tuple[float, int] | None = None  # (when counted, how many points)
        if sparse is None:
            log.warning("sparse vectors are disabled (RAGD_SPARSE__ENABLED=false): hybrid searches run dense")
        # the local model and the embedded engine: embed and search on one worker thread
        self._in_process = (
            (dense, store)
            if isinstance(dense, InProcessQueryEmbedder) and isinstance(store, InProcessSearch)
            else None
        )

    def _check(self, request: SearchRequest) -> None:
        if not request.collections:
            raise InvalidRequest("at least one collection name is required")
        if request.k < 1:
            raise InvalidRequest(f"k must be at least 1, got {request.k}")
        if request.mode is SearchMode.SPARSE and self._sparse is None:
            raise InvalidRequest(
                "search mode 'sparse' needs sparse vectors, which are disabled",
                hint="use --mode dense or enable RAGD_SPARSE__ENABLED",
            )

    def effective_mode(self, mode: SearchMode) -> SearchMode:
        """The mode a search asked for ``mode`` really runs: hybrid is dense without a BM25 index."""
        return SearchMode.DENSE if mode is SearchMode.HYBRID and self._sparse is None else mode

    async def search(self, request: SearchRequest) -> list[Hit]:
        """The hits of one query.  Collections whose datasets chose different dense models are
        searched once per model (the query embedded by each); the lists are merged on the one
        normalised score scale (rank-based, so comparable across models), best first."""
        self._check(request)
        request = replace(request, mode=self.effective_mode(request.mode))
        if not request.query.strip():
            return []
        with self._spaces.searching():  # a migration about to write waits for it (DenseSpaces.drain)
            return await self._search(request)

    async def _search(self, request: SearchRequest) -> list[Hit]:
        groups, hidden = await self._plan(request)
        if len(groups) == 1:
            ((space, names),) = groups.items()
            return await self._search_space(request, names, space, hidden)
        lists = await asyncio.gather(
            *(self._search_space(request, names, space, hidden) for space, names in groups.items())
        )
        return dedup_by_content(merge_best(lists))[: max(request.k, request.candidates or 0)]

    async def _plan(
        self, request: SearchRequest
    ) -> tuple[dict[str | None, tuple[str, ...]], dict[str, HiddenVersions]]:
        """The collections by the model of the version they serve (first appearance order), and
        the versions to leave out of each collection that holds more than one (a migration)."""
        versions = await self._spaces.versions()
        if request.versions:
            versions = {**versions, **request.versions}
        if not versions:
            return await self._spaces.group(request.collections), {}
        plain = tuple(c for c in request.collections if c not in versions)
        looked_up = await self._spaces.group(plain) if plain else {}
        groups: dict[str | None, list[str]] = {}
        hidden: dict[str, HiddenVersions] = {}
        for name in request.collections:
            version = versions.get(name)
            if version is None:
                space = next(s for s, names in looked_up.items() if name in names)
            else:
                space = version.space
                if version.hidden:
                    hidden[name] = HiddenVersions(name, version.hidden)
            groups.setdefault(space, []).append(name)
        return {space: tuple(names) for space, names in groups.items()}, hidden

    async def _search_space(
        self,
        request: SearchRequest,
        collections: tuple[str, ...],
        space: str | None,
        hidden: Mapping[str, HiddenVersions] | None = None,
    ) -> list[Hit]:
        """One query over ``collections``, whose vectors were all made by the model of ``space``;
        ``hidden``: versions of some of them no search may read."""
        left_out = tuple(hidden[c] for c in collections if c in hidden) if hidden else ()
        want = max(request.k, request.candidates or 0)
        model_languages = self._spaces.languages(space, self._languages)
        started = time.perf_counter()
        sparse_vec = self._sparse_query(request.query, request.mode)
        if sparse_vec is not None:
            self._timed("embed_sparse", time.perf_counter() - started)
        language = detect_language(request.query) if request.mode is not SearchMode.DENSE else None
        fusion = self._fusion(request, language, model_languages)
        depth = prefetch_limit(want, self._settings.prefetch_multiplier, self._settings.prefetch_min)

        def store_query(dense_vec: DenseVector | None) -> StoreQuery:
            return StoreQuery(
                filter=PointFilter(
                    collection_names=collections,
                    languages=request.languages or None,
                    where=request.where,
                    hidden=left_out,
                ),
                limit=result_limit(want, depth),
                dense=dense_vec,
                sparse=sparse_vec,
                prefetch_limit=depth,
                fusion=fusion,
                explain=True,
                space=space,
                hnsw_ef=request.hnsw_ef,
            )

        query, hits = await self._engine_search(request, space, store_query)
        ranked = dedup_by_content(normalise_scores(hits, request.mode, fusion))
        if needs_deeper_page(len(ranked), want, len(hits), query.limit, depth):
            # duplicate texts used up the head-room: the whole fused list, once
            hits = await self._store.search(replace(query, limit=depth))
            ranked = dedup_by_content(normalise_scores(hits, request.mode, fusion))
        log.debug("search mode=%s hits=%d fusion=%s", request.mode.value, len(ranked), fusion)
        if space is not None:
            ranked = [replace(h, space=space) for h in ranked]
        terms = len(sparse_vec.indices) if sparse_vec is not None else 0
        trusted = request.mode is SearchMode.DENSE or dense_understands(language, model_languages)
        evidence = evidence_for(request.mode, dense_trusted=trusted)
        top = ranked[:want]
        if request.mode is SearchMode.SPARSE and evidence is Evidence.BOTH and top:
            # the cosine a hybrid search would have: the same relevance for the same match
            started = time.perf_counter()
            top = with_cosines(top, await self._spaces.embedder(space).embed_query(request.query))
            self._timed("embed_dense", time.perf_counter() - started)
        points = await self._index_points() if evidence is Evidence.SPARSE and top else 0
        return with_relevance(top, terms, evidence, points)

    async def _index_points(self) -> int:
        """How many points the index holds (the N of BM25's IDF), counted at most once a minute."""
        now = time.monotonic()
        if self._points is None or now - self._points[0] > INDEX_POINTS_TTL:
            self._points = (now, await self._store.count(PointFilter()))
        return self._points[1]

    def _fusion(
        self, request: SearchRequest, language: str | None, model_languages: Sequence[str]
    ) -> FusionParams:
        weight = self._settings.vector_weight if request.vector_weight is None else request.vector_weight
        if not 0.0 <= weight <= 1.0:
            raise InvalidRequest(f"vector_weight must be between 0 and 1, got {weight}")
        return fusion_for_language(
            language,
            model_languages,
            k=self._settings.rrf_k,
            foreign_dense_weight=self._settings.foreign_dense_weight,
            vector_weight=weight,
            method=self._settings.fusion,
        )

    async def _engine_search(
        self,
        request: SearchRequest,
        space: str | None,
        store_query: Callable[[DenseVector | None], StoreQuery],
    ) -> tuple[StoreQuery, list[Hit]]:
        """Embed the query (unless sparse) and run the store query; times ``embed_dense`` and
        ``qdrant``.  Alone on the local model and the embedded engine, both run back to back on
        one store worker (two thread hand-offs fewer)."""
        started = time.perf_counter()
        embedding = 0.0  # seconds of the span spent embedding the query
        if request.mode is SearchMode.SPARSE:
            query = store_query(None)
            hits = await self._store.search(query)
        elif space is None and self._in_process is not None and self._in_process[0].claim_alone():
            (model, engine), text = self._in_process, request.query
            used = False

            def prepare() -> StoreQuery:
                nonlocal used, embedding
                used = True
                began = time.perf_counter()
                vector = model.embed_query_now(text, claimed=True)
                embedding = time.perf_counter() - began
                return store_query(vector)

            try:
                query, hits = await engine.search_after(prepare)
            finally:
                if not used:  # never reached the worker: the claim goes back here
                    model.release_alone()
        else:
            vector = await self._spaces.embedder(space).embed_query(request.query)
            embedding = time.perf_counter() - started
            query = store_query(vector)
            hits = await self._store.search(query)
        if request.mode is not SearchMode.SPARSE:
            self._timed("embed_dense", embedding)
        self._timed("qdrant", time.perf_counter() - started - embedding)
        return query, hits

    def _sparse_query(self, text: str, mode: SearchMode) -> SparseVector | None:
        if mode is SearchMode.DENSE or self._sparse is None:
            return None
        return self._sparse.embed_query(text)  # microseconds: not worth a thread hop
