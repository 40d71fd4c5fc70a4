"""Collect the relevance model's raw evidence for every search mode on the shared BEIR datasets.

    python bench/relevance_rows.py [--datasets ../shared/datasets] [--data-root .ragd-bench]
                                   [--out .ragd-bench/relevance_rows.json]

Indexes each dataset (scifact, cranfield, cisi, xquad-de) through the real pipeline into
``<data-root>/<name>`` (reused when it already holds it), then searches it in each mode (hybrid,
dense, sparse) with:

* its own queries (SciFact: train and test split; the others: their one split, at most 300): the
  hits among the top 10 whose document the qrels judge relevant are the positives;
* 200 queries of each *other* dataset: their top 5 hits are off-topic by construction (aerodynamics,
  library science, biomedical claims and German Wikipedia questions do not answer each other).

Writes one row a hit, ``{dataset, split, mode, label, query, dense, sparse, terms, trusted,
points}``: the raw component scores, the query's distinct BM25 terms, whether the dense model
understands the query's language and how many points the index holds.  ``bench/relevance_fit.py``
fits the weights of every evidence kind on the SciFact train rows and reports each mode's floor
on every dataset.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ragd.bootstrap import open_services
from ragd.evaluation.beir import load_dataset
from ragd.evaluation.runner import collection_for, index_dataset
from ragd.language import detect_language
from ragd.retrieve.ranking import dense_understands
from ragd.retrieve.search import SearchRequest
from ragd.settings import Settings
from ragd.types import PointFilter, SearchMode

NAMES = ("scifact", "cranfield", "cisi", "xquad-de")
MODES = (SearchMode.HYBRID, SearchMode.DENSE, SearchMode.SPARSE)
OWN_QUERIES = 300  # per split, the first ones
OFF_TOPIC = 200  # per other dataset


def splits(folder: Path) -> list[str]:
    return sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))


async def collect(
    root: Path, data_root: Path, name: str, modes: tuple[SearchMode, ...] = MODES
) -> list[dict[str, object]]:
    folder = root / name
    own = {split: load_dataset(folder, split=split) for split in splits(folder)}
    first = next(iter(own.values()))
    off = {
        other: list(load_dataset(root / other, split=splits(root / other)[-1]).queries.values())[:OFF_TOPIC]
        for other in NAMES
        if other != name
    }
    rows: list[dict[str, object]] = []
    async with open_services(Settings(data_dir=data_root / name)) as services:
        if not await services.store.count(PointFilter(collection_names=(collection_for(first),))):
            indexed = await index_dataset(services.ingestor, first)
            await services.store.optimize()
            print(
                f"{name}: indexed {indexed.documents} documents ({indexed.chunks} chunks)"
                f" in {indexed.seconds:.0f} s"
            )
        languages = services.settings.embedding.languages
        points = await services.store.count(PointFilter())

        async def search(text: str, k: int, mode: SearchMode) -> list[tuple[str, float | None, float | None]]:
            hits = await services.retriever.search(
                SearchRequest(text, (collection_for(first),), k=k, mode=mode)
            )
            return [(str(h.meta.get("file_id")), h.scores.dense, h.scores.sparse) for h in hits]

        def row(
            split: str, mode: SearchMode, label: int, text: str, dense: float | None, sparse: float | None
        ) -> dict[str, object]:
            terms = len(services.sparse.embed_query(text).indices) if services.sparse else 0
            trusted = dense_understands(detect_language(text), languages)
            return {
                "dataset": name,
                "split": split,
                "mode": mode.value,
                "label": label,
                "query": text,
                "dense": dense,
                "sparse": sparse,
                "terms": terms,
                "trusted": trusted,
                "points": points,
            }

        for mode in modes:
            for split, data in own.items():
                for qid, text in list(data.queries.items())[
                    : (None if name == "scifact" and split == "train" else OWN_QUERIES)
                ]:
                    relevant = {doc for doc, grade in data.qrels[qid].items() if grade > 0}
                    for doc, dense, sparse in await search(text, 10, mode):
                        if doc in relevant:
                            rows.append(row(split, mode, 1, text, dense, sparse))
            for other, texts in off.items():
                for text in texts:
                    for _, dense, sparse in await search(text, 5, mode):
                        rows.append(row(f"off:{other}", mode, 0, text, dense, sparse))
            print(f"{name} {mode.value}: {len(rows)} rows so far", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", default=Path("../shared/datasets"), type=Path)
    parser.add_argument("--data-root", default=Path(".ragd-bench"), type=Path)
    parser.add_argument("--out", default=Path(".ragd-bench/relevance_rows.json"), type=Path)
    parser.add_argument("--only", nargs="*", default=list(NAMES))
    parser.add_argument("--modes", nargs="*", default=[m.value for m in MODES])
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    for name in args.only:
        rows += asyncio.run(collect(args.datasets, args.data_root, name, tuple(map(SearchMode, args.modes))))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows))
    print(f"{len(rows)} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
