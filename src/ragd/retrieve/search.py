"""The search use-case: one function behind ``ragd search`` and ``POST /search``.

query -> embed (dense and/or sparse) -> store.search (fused inside Qdrant)
      -> normalise scores -> de-duplicate -> top k
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ragd.embed.base import DenseEmbedder, SparseEmbedder
from ragd.errors import InvalidRequest
from ragd.language import detect_language
from ragd.retrieve.ranking import (
    dedup_by_content,
    fusion_for_language,
    normalise_scores,
    prefetch_limit,
    result_limit,
)
from ragd.settings import RetrievalSettings
from ragd.store.base import VectorStore
from ragd.types import Hit, PointFilter, SearchMode, SparseVector, StoreQuery

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    collections: tuple[str, ...]
    k: int = 5
    mode: SearchMode = SearchMode.HYBRID
    #: how many candidates to return before the caller's own re-ranking (>= k)
    candidates: int | None = None
    #: hybrid: fill each hit's dense and sparse component scores too (an extra engine pass)
    explain: bool = False


class Retriever:
    """Searches the store with dense, sparse or hybrid retrieval."""

    def __init__(
        self,
        store: VectorStore,
        dense: DenseEmbedder,
        sparse: SparseEmbedder | None,
        settings: RetrievalSettings,
        model_languages: Sequence[str],
    ) -> None:
        self._store = store
        self._dense = dense
        self._sparse = sparse
        self._settings = settings
        self._languages = tuple(model_languages)

    def _check(self, request: SearchRequest) -> None:
        if not request.collections:
            raise InvalidRequest("at least one collection name is required")
        if request.k < 1:
            raise InvalidRequest(f"k must be at least 1, got {request.k}")
        if request.mode is not SearchMode.DENSE and self._sparse is None:
            raise InvalidRequest(
                f"search mode {request.mode.value!r} needs sparse vectors, which are disabled",
                hint="use --mode dense or enable RAGD_SPARSE__ENABLED",
            )

    async def search(self, request: SearchRequest) -> list[Hit]:
        self._check(request)
        if not request.query.strip():
            return []
        want = max(request.k, request.candidates or 0)
        # the model runs on its own thread: weigh the query's terms and language meanwhile
        dense_task = (
            asyncio.ensure_future(self._dense.embed_query(request.query))
            if request.mode is not SearchMode.SPARSE
            else None
        )
        try:
            await asyncio.sleep(0)  # let the task hand the query to the model's thread
            sparse_vec = self._sparse_query(request.query, request.mode)
            fusion = fusion_for_language(
                detect_language(request.query) if request.mode is SearchMode.HYBRID else None,
                self._languages,
                k=self._settings.rrf_k,
                foreign_dense_weight=self._settings.foreign_dense_weight,
            )
        except BaseException:
            if dense_task is not None:
                dense_task.cancel()
            raise
        dense_vec = await dense_task if dense_task is not None else None
        limit = prefetch_limit(want, self._settings.prefetch_multiplier, self._settings.prefetch_min)
        query = StoreQuery(
            filter=PointFilter(collection_names=tuple(request.collections)),
            limit=result_limit(want, limit),
            dense=dense_vec,
            sparse=sparse_vec,
            prefetch_limit=limit,
            fusion=fusion,
            explain=request.explain,
        )
        hits = await self._store.search(query)
        ranked = dedup_by_content(normalise_scores(hits, request.mode, fusion))
        log.debug("search mode=%s hits=%d fusion=%s", request.mode.value, len(ranked), fusion)
        return ranked[:want]

    def _sparse_query(self, text: str, mode: SearchMode) -> SparseVector | None:
        if mode is SearchMode.DENSE or self._sparse is None:
            return None
        return self._sparse.embed_query(text)  # microseconds: not worth a thread hop
