"""``sample_corpus``: the fixed, documented SciFact sample the suite's quality gate runs on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragd.errors import InvalidRequest
from ragd.evaluation.beir import load_dataset, sample_corpus


def beir_folder(root: Path, docs: int, judged: dict[str, list[str]]) -> Path:
    root.mkdir()
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"doc {i}"}) + "\n" for i in range(docs))
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in [*judged, "unjudged"])
    )
    (root / "qrels").mkdir()
    rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t1" for q, ds in judged.items() for d in ds]
    (root / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return root


def test_the_sample_keeps_every_judged_document_and_fills_up_to_the_size(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path / "toy", 200, {"q1": ["d7", "d150"], "q2": ["d199"]})
    full = load_dataset(folder)
    data = load_dataset(folder, sample_docs=20)
    kept = {d.doc_id for d in data.corpus}
    assert len(kept) == 20
    assert {"d7", "d150", "d199"} <= kept
    assert data.queries == full.queries
    assert data.qrels == full.qrels
    assert data.name == "toy-sample20", "its own collection: never mixed with the full corpus's index"
    # the corpus order is the file's, and the choice depends only on the ids
    assert [d.doc_id for d in data.corpus] == [d.doc_id for d in full.corpus if d.doc_id in kept]
    reordered = type(full)(full.name, tuple(reversed(full.corpus)), full.queries, full.qrels)
    assert {d.doc_id for d in sample_corpus(reordered, 20).corpus} == kept


def test_a_sample_smaller_than_the_judged_set_keeps_the_judged_set(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path / "toy", 50, {"q1": ["d1", "d2", "d3"]})
    assert {d.doc_id for d in load_dataset(folder, sample_docs=2).corpus} == {"d1", "d2", "d3"}


def test_a_sample_larger_than_the_corpus_is_the_corpus(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path / "toy", 30, {"q1": ["d1"]})
    assert len(load_dataset(folder, sample_docs=1000).corpus) == 30


def test_a_sample_of_nothing_is_refused(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path / "toy", 5, {"q1": ["d1"]})
    with pytest.raises(InvalidRequest, match="at least 1"):
        load_dataset(folder, sample_docs=0)
