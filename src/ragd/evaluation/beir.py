"""Loading a retrieval benchmark in BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ragd.errors import InvalidRequest


@dataclass(frozen=True, slots=True)
class CorpusDoc:
    doc_id: str
    title: str
    text: str

    @property
    def full_text(self) -> str:
        return f"{self.title}\n\n{self.text}" if self.title.strip() else self.text


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    corpus: tuple[CorpusDoc, ...]
    queries: dict[str, str]  # only queries that have judgements
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> Iterator[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _qrels(folder: Path, split: str) -> dict[str, dict[str, int]]:
    path = folder / "qrels" / f"{split}.tsv"
    if not path.is_file():
        raise InvalidRequest(f"{folder}: missing qrels/{split}.tsv (BEIR layout expected)")
    out: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if not row or row[0] == "query-id":
                continue
            out.setdefault(row[0], {})[row[1]] = int(float(row[2]))
    return out


def load_dataset(folder: Path, split: str = "test", max_queries: int | None = None) -> Dataset:
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise InvalidRequest(f"{folder}: missing {name} (BEIR layout expected)")
    qrels = _qrels(folder, split)
    corpus = tuple(
        CorpusDoc(str(d["_id"]), d.get("title") or "", d.get("text") or "")
        for d in _jsonl(folder / "corpus.jsonl")
    )
    queries = {str(q["_id"]): q["text"] for q in _jsonl(folder / "queries.jsonl") if str(q["_id"]) in qrels}
    if max_queries is not None:
        queries = dict(list(queries.items())[:max_queries])
    return Dataset(folder.name, corpus, queries, {q: qrels[q] for q in queries})
