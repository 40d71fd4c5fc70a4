"""Fit the relevance calibration (ragd.retrieve.relevance): relevant answers versus off-topic hits.

    python bench/relevance_fit.py [../shared/datasets/scifact] [--data-dir .ragd-bench/scifact]
                                  [--off-topic ../shared/datasets/cranfield ../shared/datasets/cisi ...]

Indexes SciFact through the real pipeline (reused when the data dir already holds it).  Positives:
the hits, among the top 10 of each SciFact *train* query (the test split is never looked at), whose
document the train qrels judge relevant.  Negatives: the top 5 hits of other datasets' queries
(aerodynamics, library science, German Wikipedia questions) against the SciFact index: off-topic by
construction.  (SciFact's unjudged near misses are left out: they are on topic, so neither label
fits them.)  The features are the ones ragd serves (:func:`ragd.retrieve.relevance.features`); a
logistic regression (Newton's method, a small ridge) fits their weights.  Prints the weights to
paste into ``relevance.py`` and the fit's ROC AUC.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import numpy as np

from ragd.bootstrap import open_services
from ragd.evaluation.beir import load_dataset
from ragd.evaluation.runner import collection_for, index_dataset
from ragd.retrieve.relevance import features
from ragd.retrieve.search import SearchRequest
from ragd.settings import Settings
from ragd.types import SearchMode


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


async def collect(folder: Path, data_dir: Path, off_topic: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    data = load_dataset(folder, split="train")
    async with open_services(Settings(data_dir=data_dir)) as services:
        indexed = await index_dataset(services.ingestor, data)
        await services.store.optimize()
        print(f"indexed {indexed.documents} documents ({indexed.chunks} chunks) in {indexed.seconds:.0f} s")
        rows, labels = [], []
        for qid, text in data.queries.items():
            request = SearchRequest(text, (collection_for(data),), k=10, mode=SearchMode.HYBRID)
            hits = await services.retriever.search(request)
            terms = len(services.sparse.embed_query(text).indices) if services.sparse else 0
            relevant = {doc for doc, grade in data.qrels[qid].items() if grade > 0}
            for hit in hits:
                if str(hit.meta.get("file_id")) in relevant:
                    rows.append(features(hit.scores, terms, dense_trusted=True))
                    labels.append(1.0)
        for other in off_topic:
            queries = list(load_dataset(other).queries.values())[:300]
            for text in queries:
                request = SearchRequest(text, (collection_for(data),), k=5, mode=SearchMode.HYBRID)
                hits = await services.retriever.search(request)
                terms = len(services.sparse.embed_query(text).indices) if services.sparse else 0
                for hit in hits:
                    rows.append(features(hit.scores, terms, dense_trusted=_english(text)))
                    labels.append(0.0)
        return np.array(rows), np.array(labels)


def _english(text: str) -> bool:
    from ragd.language import detect_language

    return detect_language(text, default="en") == "en"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", nargs="?", default="../shared/datasets/scifact", type=Path)
    parser.add_argument("--data-dir", default=".ragd-bench/scifact", type=Path)
    shared = Path("../shared/datasets")
    parser.add_argument(
        "--off-topic",
        nargs="*",
        type=Path,
        default=[shared / "cranfield", shared / "cisi", shared / "xquad-de"],
    )
    args = parser.parse_args()
    x, y = asyncio.run(collect(args.dataset, args.data_dir, args.off_topic))
    weights = fit_logistic(x, y)
    scores = 1 / (1 + np.exp(-(np.hstack([np.ones((len(x), 1)), x]) @ weights)))
    print(f"{len(y)} hits, {int(y.sum())} relevant; ROC AUC of the fitted relevance {roc_auc(scores, y):.3f}")
    print("weights (bias, " + ", ".join(f"w{i}" for i in range(1, len(weights))) + "):")
    print("    " + ", ".join(f"{w:.4f}" for w in weights))
    return 0


if __name__ == "__main__":
    sys.exit(main())
