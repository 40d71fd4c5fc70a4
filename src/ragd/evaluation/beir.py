"""Loading a retrieval benchmark in BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv."""

from __future__ import annotations

import csv
import hashlib
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


def load_dataset(
    folder: Path, split: str = "test", max_queries: int | None = None, sample_docs: int | None = None
) -> Dataset:
    """A BEIR dataset; ``sample_docs`` keeps a fixed sample of the corpus (see :func:`sample_corpus`)."""
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
    data = Dataset(folder.name, corpus, queries, {q: qrels[q] for q in queries})
    return data if sample_docs is None else sample_corpus(data, sample_docs)


def sample_corpus(data: Dataset, docs: int) -> Dataset:
    """The same queries over a smaller corpus: every document judged for them, then the others
    in a fixed order (by SHA-256 of their id) up to ``docs`` documents in all.

    The sample depends only on the ids, so every machine and every run evaluates the same
    documents; it is named ``<name>-sample<docs>`` so it never shares an index with the full
    corpus.  Fewer distractors make every figure higher than the full corpus's: compare a sample's
    figures with the same sample's, never with the full corpus's (docs/benchmarks.md lists both).
    """
    if docs < 1:
        raise InvalidRequest("sample_docs must be at least 1")
    judged = {d for rels in data.qrels.values() for d in rels}
    others = sorted(
        (d.doc_id for d in data.corpus if d.doc_id not in judged),
        key=lambda doc_id: hashlib.sha256(doc_id.encode()).digest(),
    )
    keep = judged | set(others[: max(0, docs - len(judged))])
    corpus = tuple(d for d in data.corpus if d.doc_id in keep)
    return Dataset(f"{data.name}-sample{docs}", corpus, data.queries, data.qrels)


def load_labels(folder: Path, split: str = "test") -> list[tuple[str, str, dict[str, int]]]:
    """The judged queries of a BEIR folder without its corpus: ``(query id, text, {doc id: grade})``
    in the order of queries.jsonl, only queries with a relevant (grade > 0) document."""
    if not (folder / "queries.jsonl").is_file():
        raise InvalidRequest(f"{folder}: missing queries.jsonl (BEIR layout expected)")
    qrels = _qrels(folder, split)
    out = []
    for q in _jsonl(folder / "queries.jsonl"):
        qid = str(q["_id"])
        relevant = {doc: grade for doc, grade in qrels.get(qid, {}).items() if grade > 0}
        if relevant:
            out.append((qid, str(q["text"]), relevant))
    return out
