"""Fit the relevance calibration (ragd.retrieve.relevance) per evidence kind, check it per mode.

    python bench/relevance_rows.py            # once: the hits of every mode on the shared datasets
    python bench/relevance_fit.py [--rows .ragd-bench/relevance_rows.json ...] [--floor 0.4]

Reads the rows ``bench/relevance_rows.py`` wrote (one a hit: raw component scores, label).  Fits a
logistic regression (Newton's method, a small ridge) for each evidence kind on SciFact's rows only:
positives are the judged-relevant hits among the top 10 of its *train* queries (the test split is
never fitted), negatives the top 5 hits of other datasets' queries against the SciFact index
(off-topic by construction).  Hybrid hits train ``both``, dense hits ``dense``, and sparse hits
the BM25-alone ``sparse`` kind (their BM25 score only: served, it judges the queries the dense
model does not understand; a sparse search in a known language is judged like a hybrid one, its
hits given their cosine).  Prints the weights to paste into ``relevance.py``, then for every
dataset and mode (hybrid, dense, sparse), with the weights in ``relevance.py`` now and the fitted
ones:

* answers kept: the share of the dataset's queries with a relevant hit in the top 10 that keep one
  at or above the floor (SciFact: its test split);
* off-topic silenced: the share of other datasets' queries left with no hit at the floor;
* the median relevance of each query's best relevant hit, and the ROC AUC over all hits.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ragd.retrieve.relevance import WEIGHTS, Evidence, evidence_for, features, relevance
from ragd.types import ComponentScores, SearchMode

Row = Mapping[str, object]


def fit_logistic(x: np.ndarray, y: np.ndarray, ridge: float = 1e-3, rounds: int = 50) -> np.ndarray:
    """Weights (bias first) of a ridge-regularised logistic regression, by Newton's method."""
    design = np.hstack([np.ones((len(x), 1)), x])
    weights = np.zeros(design.shape[1])
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-design @ weights))
        gradient = design.T @ (p - y) + ridge * weights
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + ridge * np.eye(len(weights))
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return weights


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The probability that a random positive scores above a random negative (ties count half)."""
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # average ranks of ties
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    positives = labels.sum()
    negatives = len(labels) - positives
    return float((ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def evidence_of(row: Row) -> Evidence:
    return evidence_for(SearchMode(str(row["mode"])), dense_trusted=bool(row["trusted"]))


def fitted_on(row: Row) -> Evidence | None:
    """Which kind a row's hit trains: hybrid hits of a language the model knows train ``both``,
    dense hits ``dense``, sparse hits (their BM25 score alone) ``sparse``."""
    if row["mode"] == "hybrid":
        return Evidence.BOTH if row["trusted"] else None
    return Evidence.DENSE if row["mode"] == "dense" else Evidence.SPARSE


def scores_of(row: Row) -> ComponentScores:
    dense, sparse = row["dense"], row["sparse"]
    return ComponentScores(
        dense=float(dense) if isinstance(dense, int | float) else None,
        sparse=float(sparse) if isinstance(sparse, int | float) else None,
    )


#: each dataset's index size, for rows written before the rows held it (chunks = points)
POINTS = {"scifact": 9808, "cranfield": 1856, "cisi": 1599, "xquad-de": 402}


def points_of(row: Row) -> int:
    points = row.get("points")
    return points if isinstance(points, int) else POINTS.get(str(row["dataset"]), 0)


def terms_of(row: Row) -> int:
    terms = row["terms"]
    return terms if isinstance(terms, int) else 0


def fit(rows: Sequence[Row]) -> dict[Evidence, tuple[float, ...]]:
    """The weights of each evidence kind, fitted on SciFact's train positives and off-topic hits."""
    fitted = {}
    for kind in Evidence:
        chosen = [
            r
            for r in rows
            if r["dataset"] == "scifact" and fitted_on(r) is kind and r["split"] in ("train", *_off(rows))
        ]
        if not chosen:
            fitted[kind] = tuple(WEIGHTS[kind])
            continue
        x = np.array([features(scores_of(r), terms_of(r), kind, points_of(r)) for r in chosen])
        y = np.array([float(r["label"]) for r in chosen])  # type: ignore[arg-type]
        fitted[kind] = tuple(round(float(w), 4) for w in fit_logistic(x, y))
        print(f"{kind.value}: {len(y)} hits, {int(y.sum())} relevant; weights {fitted[kind]}")
    return fitted


def _off(rows: Sequence[Row]) -> set[str]:
    return {str(r["split"]) for r in rows if str(r["split"]).startswith("off:")}


#: the one model of before 2026-11-27 (bias, cosine, BM25 per term, has dense, has sparse), whatever the mode
ONE_MODEL = (-12.6818, 27.3620, 4.8581, -0.6324, -2.6287)


def one_model(row: Row) -> float:
    """The relevance the single hybrid-fitted model gave: a mode's missing score counted as absent."""
    scores, trusted = scores_of(row), bool(row["trusted"]) or row["mode"] != "hybrid"
    dense = scores.dense if trusted else None
    x = (
        dense or 0.0,
        features(scores, terms_of(row), Evidence.BOTH)[1],
        float(dense is not None),
        float(scores.sparse is not None),
    )
    return float(1 / (1 + np.exp(-(ONE_MODEL[0] + np.dot(ONE_MODEL[1:], x)))))


def calibrated(weights: Mapping[Evidence, Sequence[float]]) -> Callable[[Row], float]:
    return lambda r: relevance(scores_of(r), terms_of(r), evidence_of(r), points_of(r), weights=weights)


def report(rows: Sequence[Row], value_of: Callable[[Row], float], floor: float, label: str) -> None:
    print(f"\n{label}: floor {floor}")
    print("dataset    mode    answers kept  off-topic silenced  median best relevant  AUC")
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        groups[(str(r["dataset"]), str(r["mode"]))].append(r)
    by_mode = groups.copy()
    for (dataset, mode), group in sorted(groups.items()):
        checked = "test" if dataset == "scifact" else None
        best: dict[str, float] = {}
        loudest: dict[str, float] = defaultdict(float)
        values, labels = [], []
        for r in group:
            split = str(r["split"])
            value = value_of(r)
            if split.startswith("off:"):
                key = f"{split}|{r['query']}"
                loudest[key] = max(loudest[key], value)
            elif checked in (None, split):
                best[str(r["query"])] = max(best.get(str(r["query"]), 0.0), value)
            else:
                continue
            values.append(value)
            labels.append(float(r["label"]))  # type: ignore[arg-type]
        # a query with no hit at all (BM25 matched no word) has no row: count it from the dense rows,
        # which always have k hits
        asked = len({f"{r['split']}|{r['query']}" for r in by_mode[(dataset, "dense")] if r["label"] == 0})
        asked = max(asked, len(loudest))
        kept = sum(v >= floor for v in best.values()) / max(1, len(best))
        silenced = 1 - sum(v >= floor for v in loudest.values()) / max(1, asked)
        median = float(np.median(list(best.values()))) if best else 0.0
        auc = roc_auc(np.array(values), np.array(labels)) if 0 < sum(labels) < len(labels) else float("nan")
        print(
            f"{dataset:10} {mode:7} {kept:11.1%} ({len(best):4}) {silenced:8.1%} ({asked:4})"
            f" {median:21.3f} {auc:5.3f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", nargs="+", default=[Path(".ragd-bench/relevance_rows.json")], type=Path)
    parser.add_argument("--floor", type=float, default=0.4)
    args = parser.parse_args()
    rows: list[Row] = [row for path in args.rows for row in json.loads(path.read_text())]
    fitted = fit(rows)
    report(rows, one_model, args.floor, "one model for every mode (before 2026-11-27)")
    report(rows, calibrated(WEIGHTS), args.floor, "weights in ragd/retrieve/relevance.py")
    report(rows, calibrated(fitted), args.floor, "fitted weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
