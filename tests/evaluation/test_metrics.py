"""Our metrics agree with trec_eval (pytrec_eval) on random runs."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from ragd.evaluation.metrics import mrr_at, ndcg_at, percentile, recall_at


def random_case(rng: random.Random) -> tuple[dict[str, float], dict[str, int]]:
    docs = [f"d{i}" for i in range(60)]
    run = {d: round(rng.random(), 2) for d in rng.sample(docs, 40)}  # rounding makes ties
    qrels = {d: rng.choice([1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 8))}
    return run, qrels


@pytest.mark.parametrize("seed", range(25))
def test_metrics_match_trec_eval(seed: int) -> None:
    run, qrels = random_case(random.Random(seed))
    ev = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"ndcg_cut.10", "recall.100", "recip_rank"})
    ref = ev.evaluate({"q": run})["q"]
    assert math.isclose(ndcg_at(run, qrels, 10), ref["ndcg_cut_10"], abs_tol=1e-9)
    assert math.isclose(recall_at(run, qrels, 100), ref["recall_100"], abs_tol=1e-9)
    # trec_eval's recip_rank has no cut-off; with the first relevant hit in the top 10 they agree
    if mrr_at(run, qrels, 10) > 0:
        assert math.isclose(mrr_at(run, qrels, 10), ref["recip_rank"], abs_tol=1e-9)


def test_no_relevant_documents_scores_zero() -> None:
    assert ndcg_at({"a": 1.0}, {}, 10) == 0.0
    assert recall_at({"a": 1.0}, {"b": 0}, 100) == 0.0
    assert mrr_at({"a": 1.0}, {"b": 1}, 10) == 0.0


def test_percentile_nearest_rank() -> None:
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile([1.0, 2.0], 99) == 2.0
    assert percentile([], 50) == 0.0
