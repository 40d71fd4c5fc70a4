"""The search pipeline behind ``POST /search`` (and the chat proxy's retrieval).

    request -> resolve queries (explicit | LLM-generated | last user turn)
            -> per query: retrieve k x multiplier candidates -> rerank (fails open)
            -> merge across queries (best score per chunk) -> de-duplicate
            -> drop hits below ``min_score`` relevance -> drop near-duplicates (opt-in)
            -> top k, by MMR and a per-file cap when asked (:mod:`ragd.retrieve.diversity`)

All queries' results come back as **one** ranked list: Open WebUI reads only
the first list of a ``/search`` response, so per-query lists would lose every
query but the first.  The whole run is bounded by a deadline, query generation
included: generation may use half of it (then the last user message is searched),
and past the deadline the caller gets what was already retrieved.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Protocol

from ragd.errors import InvalidRequest, RagError
from ragd.observe.metrics import Metrics
from ragd.rerank.base import Reranker
from ragd.retrieve.diversity import diversify, drop_near_duplicates
from ragd.retrieve.queries import QueryGenerator, resolve_queries
from ragd.retrieve.ranking import apply_rerank, dedup_by_content, merge_best
from ragd.retrieve.relevance import above
from ragd.retrieve.search import Retriever, SearchRequest
from ragd.settings import RerankSettings
from ragd.types import CollectionVersion, Hit, Message, SearchKnobs, SearchMode

log = logging.getLogger(__name__)

#: with diversity asked for, each query fetches k x this candidates (at most MAX_DIVERSITY_POOL)
DIVERSITY_POOL = 4
MAX_DIVERSITY_POOL = 200
#: ``hybrid_path_total{path}``: the retrieval agent's values for the path a query took — fusion of
#: sparse vectors inside Qdrant (``native_sparse``), dense alone (``dense_only``); ragd's sparse-only
#: mode has no counterpart there (``sparse_only``), and ragd never runs its ``bm25_fallback``
HYBRID_PATHS = {
    SearchMode.HYBRID: "native_sparse",
    SearchMode.DENSE: "dense_only",
    SearchMode.SPARSE: "sparse_only",
}


@dataclass(frozen=True, slots=True)
class PipelineRequest:
    collections: tuple[str, ...]
    queries: tuple[str, ...] = ()
    messages: tuple[Message, ...] = ()
    k: int = 5
    mode: SearchMode = SearchMode.HYBRID
    prompt_template: str | None = None
    #: wall-clock bound on the whole run; past it, what was retrieved so far is returned
    deadline_s: float | None = None
    #: floors, fusion weight, diversity: one record for every surface
    knobs: SearchKnobs = field(default_factory=SearchKnobs)
    #: read these versions of the collections named (a migration evaluating its new version)
    versions: Mapping[str, CollectionVersion] | None = None


@dataclass(frozen=True, slots=True)
class PipelineResult:
    queries: tuple[str, ...]
    hits: tuple[Hit, ...]
    #: "reranked", "rerank_failed" (failed open) or "unranked" (no reranker)
    rerank: str = "unranked"
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: agentic search only: search rounds run, and why the loop stopped
    #: ("accept", "timeout", "budget", "max_iterations" or "fallback"); 0 and "" otherwise
    iterations: int = 0
    stopped: str = ""


class Searcher(Protocol):
    """The search use-case as its callers see it: :class:`SearchPipeline` or an agent around one."""

    async def run(self, request: PipelineRequest) -> PipelineResult: ...


#: ``SearchKnobs.rerank`` values with a meaning of their own
DEFAULT_RERANKER, NO_RERANKER = "default", "none"


@dataclass(frozen=True, slots=True)
class RerankStage:
    """A configured reranker and how many candidates it is given."""

    reranker: Reranker
    settings: RerankSettings


def unknown_reranker(name: str, configured: Sequence[str]) -> InvalidRequest:
    """The refusal of a reranker name that is not configured (a request's or a dataset's)."""
    return InvalidRequest(
        f"unknown reranker {name[:64]!r} (configured: {', '.join(configured) or 'none is configured'})",
        hint="a configured name (RAGD_RERANK__* is 'default', more in RAGD_RERANKERS), or none",
    )


class SearchPipeline:
    """Resolve queries, retrieve, rerank, merge: the one search use-case for every face.

    ``rerankers`` are the configured rerankers by name (``default``: ``RAGD_RERANK__*``; more in
    ``RAGD_RERANKERS``); a request picks one with ``SearchKnobs.rerank`` (a name, ``none``), else
    the default one runs when there is one."""

    def __init__(
        self,
        retriever: Retriever,
        *,
        rerankers: Mapping[str, RerankStage] | None = None,
        generator: QueryGenerator | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._retriever = retriever
        self._rerankers = dict(rerankers or {})
        self._generator = generator
        self._metrics = metrics or Metrics()

    @property
    def reranker_names(self) -> tuple[str, ...]:
        return tuple(self._rerankers)

    def rerank_stage(self, choice: str | None) -> RerankStage | None:
        """The stage a request's ``rerank`` choice selects (None: no reranking).

        Raises :class:`InvalidRequest` for a name that is not configured."""
        if choice == NO_RERANKER:
            return None
        if choice is None:
            return self._rerankers.get(DEFAULT_RERANKER)
        stage = self._rerankers.get(choice)
        if stage is None:
            raise unknown_reranker(choice, tuple(self._rerankers))
        return stage

    async def run(self, request: PipelineRequest) -> PipelineResult:
        stage = self.rerank_stage(request.knobs.rerank)  # an unknown name fails before any work
        attributes = {"mode": request.mode.value, "k": request.k, "collections": len(request.collections)}
        with self._metrics.tracing.span("search", **attributes):
            return await self._run(request, stage)

    async def _run(self, request: PipelineRequest, stage: RerankStage | None) -> PipelineResult:
        started = time.monotonic()
        deadline = request.deadline_s
        with self._metrics.stage("query_generation"):
            queries = await resolve_queries(
                request.queries,
                request.messages,
                self._generator,
                request.prompt_template,
                budget_s=None if deadline is None else deadline / 2,
            )
        if not queries:
            return PipelineResult(queries=(), hits=())
        per_query: list[tuple[list[Hit], str]] = []
        notes: tuple[str, ...] = ()
        left = None if deadline is None else max(0.0, deadline - (time.monotonic() - started))
        try:
            async with asyncio.timeout(left):
                for query in queries:
                    per_query.append(await self._one(query, request, stage))
        except TimeoutError:
            log.warning(
                "search deadline of %ss passed after %d/%d queries",
                request.deadline_s,
                len(per_query),
                len(queries),
            )
            notes = ("deadline",)
        outcome = _rerank_outcome([o for _, o in per_query])
        knobs = request.knobs
        merged = above(dedup_by_content(merge_best(hits for hits, _ in per_query)), knobs.min_score)
        with self._metrics.stage("diversity") if knobs.diversifies else nullcontext():
            if knobs.near_duplicates is not None:
                merged = drop_near_duplicates(merged, knobs.near_duplicates)
            chosen = diversify(merged, request.k, diversity=knobs.diversity, max_per_file=knobs.max_per_file)
        self._metrics.results_returned.observe(len(chosen))
        return PipelineResult(queries=tuple(queries), hits=tuple(chosen), rerank=outcome, notes=notes)

    async def _one(
        self, query: str, request: PipelineRequest, stage: RerankStage | None
    ) -> tuple[list[Hit], str]:
        want = request.k
        if stage is not None:
            rr = stage.settings
            want = min(max(request.k * rr.multiplier, request.k), rr.max_candidates)
        if request.knobs.diversifies:  # room to choose from
            want = max(want, min(max(request.k * DIVERSITY_POOL, 20), MAX_DIVERSITY_POOL))
        with self._metrics.stage("retrieve", candidates=want):
            hits = await self._retriever.search(
                SearchRequest(
                    query=query,
                    collections=request.collections,
                    k=request.k,
                    mode=request.mode,
                    candidates=want,
                    vector_weight=request.knobs.vector_weight,
                    languages=request.knobs.languages,
                    hnsw_ef=request.knobs.hnsw_ef,
                    where=request.knobs.where,
                    versions=request.versions,
                )
            )
        self._metrics.candidates_fetched.observe(len(hits))
        self._metrics.hybrid_path.labels(HYBRID_PATHS[self._retriever.effective_mode(request.mode)]).inc()
        if stage is None or not hits:
            return hits, "unranked"
        return await self._reranked(query, hits, stage.reranker)

    async def _reranked(self, query: str, hits: Sequence[Hit], reranker: Reranker) -> tuple[list[Hit], str]:
        try:
            with self._metrics.stage("rerank"):
                scores = await reranker.rerank(query, [h.content for h in hits])
            return apply_rerank(hits, scores), "reranked"
        except (RagError, ValueError) as exc:
            reason = exc.code if isinstance(exc, RagError) else "bad_scores"
            log.warning("reranker %s failed (%s); returning unranked candidates", reranker.name, reason)
            self._metrics.reranker_failures.labels(reason).inc()
            return list(hits), "rerank_failed"


def _rerank_outcome(outcomes: Sequence[str]) -> str:
    if "rerank_failed" in outcomes:
        return "rerank_failed"
    return "reranked" if "reranked" in outcomes else "unranked"
