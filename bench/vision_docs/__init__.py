"""The vision benchmark's corpus: diagram and figure documents written for it, with questions whose
answers are only in the pictures (:mod:`.corpus`), and the writer that puts them in a folder.

    python -m bench.vision_docs OUT_DIR      (from the repository's root)

writes the files and ``questions.jsonl`` (one ``{"file", "kind", "question", "answer_substring"}``
a line; the same content as the committed ``bench/vision_docs/questions.jsonl``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .corpus import KINDS, SPECS, Spec

__all__ = ["KINDS", "SPECS", "Spec", "question_lines", "write_corpus"]


def question_lines() -> list[str]:
    """``questions.jsonl``'s lines: every question of every document, in corpus order."""
    return [
        json.dumps(
            {"file": spec.name, "kind": spec.kind, "question": q.question, "answer_substring": q.answer},
            ensure_ascii=False,
        )
        for spec in SPECS
        for q in spec.questions
    ]


def write_corpus(folder: Path) -> list[Path]:
    """Writes every document and ``questions.jsonl`` into ``folder``; returns the documents' paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in SPECS:
        path = folder / spec.name
        path.write_bytes(spec.build())
        paths.append(path)
    (folder / "questions.jsonl").write_text("\n".join(question_lines()) + "\n", encoding="utf-8")
    return paths
