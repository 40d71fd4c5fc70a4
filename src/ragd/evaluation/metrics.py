"""Retrieval-quality metrics as pure functions (the trec_eval definitions).

``run`` maps a query's retrieved doc ids to scores; ``qrels`` maps doc ids to
graded relevance (<= 0: not relevant).  nDCG uses linear gains (trec_eval's
``ndcg_cut``), ties in the run are broken by doc id descending like trec_eval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping


def ranked(run: Mapping[str, float]) -> list[str]:
    """Doc ids best first; ties broken the way trec_eval does (doc id descending)."""
    return [doc for doc, _ in sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def ndcg_at(run: Mapping[str, float], qrels: Mapping[str, int], k: int) -> float:
    gains = [max(0, qrels.get(doc, 0)) for doc in ranked(run)[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(run: Mapping[str, float], qrels: Mapping[str, int], k: int) -> float:
    relevant = {doc for doc, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked(run)[:k])) / len(relevant)


def mrr_at(run: Mapping[str, float], qrels: Mapping[str, int], k: int) -> float:
    for i, doc in enumerate(ranked(run)[:k]):
        if qrels.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100])."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
