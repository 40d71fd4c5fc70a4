"""Run a dataset's evaluation set through the one search pipeline and score it (issue 31 §2).

:func:`score_labels` is the core: labelled queries, a search function (query -> ranked hits) and
``k`` in, an :class:`EvalReport` out; the metrics are :mod:`ragd.evaluation.metrics`' (nDCG@10,
recall@k, MRR@10).  Whatever answers the search (the dataset's settings, other knobs, later another
model or version of the dataset) is only the search function, so a migration compares two versions
by calling it twice.  :func:`run_evalset` binds it to the dataset search use-case
(:func:`ragd.kb.search.search_datasets`: the key's access, the dataset's reranker) with given knobs,
and with a baseline (the dataset's current settings unless given) reports both and, per query, wins
(the first expected hit ranked better) and losses.

Judging: a query labelled with files is judged on files (a file's rank is that of its best chunk
in the k hits); one labelled only with chunks, on chunk ids.  Each expected file or chunk has grade 1.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragd.errors import EvalRunTooLarge, InvalidRequest
from ragd.evaluation.metrics import mean, mrr_at, ndcg_at, recall_at
from ragd.kb.access import readable, require_chunk_reader
from ragd.kb.context import KbContext
from ragd.kb.evalsets import all_labels
from ragd.kb.search import search_datasets
from ragd.kb_types import EvalQuery, Principal
from ragd.retrieve.pipeline import Searcher
from ragd.types import ChunkMeta, Hit, SearchKnobs, SearchMode

#: query text and k -> the hits, best first
SearchFn = Callable[[str, int], Awaitable[Sequence[Hit]]]
Tick = Callable[[int], None]
MAX_K = 100


@dataclass(frozen=True, slots=True)
class EvalSpec:
    """How the set is searched: the mode, the knobs (``rerank`` None: the dataset's), ``k`` hits."""

    mode: SearchMode = SearchMode.HYBRID
    knobs: SearchKnobs = field(default_factory=SearchKnobs)
    k: int = 10


@dataclass(frozen=True, slots=True)
class QueryScore:
    query_id: str
    query: str
    #: 1-based rank of the first expected file (or chunk) among the judged results; None: not in k
    rank: int | None
    ndcg_at_10: float
    recall_at_k: float
    mrr_at_10: float


@dataclass(frozen=True, slots=True)
class EvalReport:
    k: int
    ndcg_at_10: float
    recall_at_k: float
    mrr_at_10: float
    queries: tuple[QueryScore, ...]


@dataclass(frozen=True, slots=True)
class EvalComparison:
    """A run (and its baseline's); ``wins``/``losses``: query ids whose first expected hit ranked
    better/worse than in the baseline (not in k counts as worst)."""

    report: EvalReport
    baseline: EvalReport | None
    wins: tuple[str, ...]
    losses: tuple[str, ...]
    #: the slice of the set that ran, and how many queries the set holds
    offset: int
    total: int


def judged_run(hits: Sequence[Hit], label: EvalQuery) -> dict[str, float]:
    """The hits as the metrics read them: file ids (best chunk first) or chunk ids, scored by rank
    (the first has the highest score), so the metrics rank exactly as the search did."""
    units: list[str] = []
    for hit in hits:
        unit = ChunkMeta.parse(hit.meta).file_id if label.files else hit.id
        if unit not in units:
            units.append(unit)
    return {unit: float(len(units) - i) for i, unit in enumerate(units)}


def score_query(hits: Sequence[Hit], label: EvalQuery, k: int) -> QueryScore:
    run = judged_run(hits, label)
    qrels = dict.fromkeys(label.files or label.chunks, 1)
    ranks = [i for i, unit in enumerate(run, 1) if unit in qrels and i <= k]
    return QueryScore(
        query_id=label.id,
        query=label.query,
        rank=ranks[0] if ranks else None,
        ndcg_at_10=ndcg_at(run, qrels, 10),
        recall_at_k=recall_at(run, qrels, k),
        mrr_at_10=mrr_at(run, qrels, 10),
    )


def summarise(scores: Sequence[QueryScore], k: int) -> EvalReport:
    """Means over ``scores`` (also how slices of one set run apart are put together)."""
    return EvalReport(
        k=k,
        ndcg_at_10=mean([s.ndcg_at_10 for s in scores]),
        recall_at_k=mean([s.recall_at_k for s in scores]),
        mrr_at_10=mean([s.mrr_at_10 for s in scores]),
        queries=tuple(scores),
    )


async def score_labels(
    labels: Sequence[EvalQuery], search: SearchFn, k: int, *, tick: Tick | None = None
) -> EvalReport:
    """Search each labelled query (``k`` hits) and score where its expected answers ranked."""
    scores = []
    for label in labels:
        scores.append(score_query(await search(label.query, k), label, k))
        if tick is not None:
            tick(1)
    return summarise(scores, k)


def wins_losses(report: EvalReport, baseline: EvalReport) -> tuple[tuple[str, ...], tuple[str, ...]]:
    def key(rank: int | None) -> float:
        return float("inf") if rank is None else rank

    before = {s.query_id: key(s.rank) for s in baseline.queries}
    wins = tuple(s.query_id for s in report.queries if key(s.rank) < before.get(s.query_id, key(None)))
    losses = tuple(s.query_id for s in report.queries if key(s.rank) > before.get(s.query_id, key(None)))
    return wins, losses


def dataset_search(
    ctx: KbContext, searcher: Searcher, principal: Principal, dataset_id: str, spec: EvalSpec
) -> SearchFn:
    """The dataset search use-case (what ``POST /api/v1/datasets/{id}/search`` runs) as a SearchFn."""

    async def search(query: str, k: int) -> Sequence[Hit]:
        found = await search_datasets(
            ctx, searcher, principal, query, dataset_ids=(dataset_id,), k=k, mode=spec.mode, knobs=spec.knobs
        )
        return found.hits

    return search


async def run_evalset(
    ctx: KbContext,
    searcher: Searcher,
    principal: Principal,
    dataset_id: str,
    spec: EvalSpec,
    *,
    baseline: EvalSpec | None = None,
    offset: int = 0,
    limit: int | None = None,
    max_run_queries: int,
    tick: Tick | None = None,
) -> EvalComparison:
    """Score the set's queries ``offset`` … ``offset + limit`` (None: to the end) with ``spec``, and
    with ``baseline`` too when given.  EVAL_RUN_TOO_LARGE past ``max_run_queries``; ``tick`` counts
    each search (a baseline doubles them)."""
    require_chunk_reader(principal)
    dataset = await readable(principal, ctx.catalog, dataset_id)
    if not 1 <= spec.k <= MAX_K or (baseline is not None and not 1 <= baseline.k <= MAX_K):
        raise InvalidRequest(f"k is 1 to {MAX_K}")
    total = await ctx.catalog.count_eval_queries(dataset.id)
    offset = max(0, offset)
    size = max(0, total - offset) if limit is None else max(0, min(limit, total - offset))
    if size > max_run_queries:
        raise EvalRunTooLarge(
            f"this run would search {size} queries, a run at most {max_run_queries} "
            "(RAGD_EVALUATION__MAX_RUN_QUERIES): run slices with offset and limit"
        )
    labels = await all_labels(ctx, dataset.id, offset=offset, limit=size) if size else []
    report = await score_labels(
        labels, dataset_search(ctx, searcher, principal, dataset.id, spec), spec.k, tick=tick
    )
    if baseline is None:
        return EvalComparison(report, None, (), (), offset, total)
    search = dataset_search(ctx, searcher, principal, dataset.id, baseline)
    base = await score_labels(labels, search, baseline.k, tick=tick)
    wins, losses = wins_losses(report, base)
    return EvalComparison(report, base, wins, losses, offset, total)


# -- the report as JSON (the API's answer, the CLI's --json) ---------------------------------------


def report_json(r: EvalReport) -> dict[str, Any]:
    return {
        "k": r.k,
        "ndcg_at_10": r.ndcg_at_10,
        "recall_at_k": r.recall_at_k,
        "mrr_at_10": r.mrr_at_10,
        "queries": [
            {
                "id": s.query_id,
                "query": s.query,
                "rank": s.rank,
                "ndcg_at_10": s.ndcg_at_10,
                "recall_at_k": s.recall_at_k,
                "mrr_at_10": s.mrr_at_10,
            }
            for s in r.queries
        ],
    }


def comparison_json(dataset_id: str, c: EvalComparison) -> dict[str, Any]:
    return {
        "dataset_id": dataset_id,
        "total": c.total,
        "offset": c.offset,
        "ran": len(c.report.queries),
        "report": report_json(c.report),
        "baseline": None if c.baseline is None else report_json(c.baseline),
        "wins": list(c.wins),
        "losses": list(c.losses),
    }
