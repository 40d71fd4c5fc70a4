"""Does one fixed relevance floor keep the answers and drop off-topic context?

    python bench/relevance.py [../shared/documents] [--data-dir DIR] [--threshold 0.5]
                              [--modes hybrid dense sparse]

Indexes the folder with ``ragd ingest`` (or reuses ``--data-dir``), asks every ``qa.jsonl`` question
and every question of ``bench/data/unanswerable.jsonl`` (general knowledge, other domains, other
languages, chit-chat: written for ragd, none answerable from the shared documents) through the
search pipeline (k=5, no floor) in each mode asked (hybrid by default), and reports, for each mode
and each threshold on ``Hit.relevance``:

* answers kept: the share of qa questions whose answer (right file, answer substring) is still in
  the top 5 after hits below the threshold are dropped;
* off-topic silenced: the share of unanswerable questions left with no hit at all;

and the ROC AUC of the top-1 relevance as a score separating answerable from unanswerable questions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from ragd.bootstrap import open_services  # noqa: E402
from ragd.retrieve.pipeline import PipelineRequest  # noqa: E402
from ragd.settings import Settings  # noqa: E402
from ragd.types import Hit, SearchMode  # noqa: E402
from relevance_fit import roc_auc  # noqa: E402
from shared_qa import answered  # noqa: E402

THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]


def above(hits: list[dict[str, object]], threshold: float) -> list[dict[str, object]]:
    return [h for h in hits if float(h["relevance"]) >= threshold]  # type: ignore[arg-type]


def hit_rows(hits: tuple[Hit, ...]) -> list[dict[str, object]]:
    return [{"content": h.content, "meta": dict(h.meta), "relevance": h.relevance} for h in hits]


async def ask(data_dir: Path, questions: list[str], mode: SearchMode) -> list[list[dict[str, object]]]:
    async with open_services(Settings(data_dir=data_dir)) as services:
        out = []
        for question in questions:
            request = PipelineRequest(collections=("qa",), queries=(question,), k=5, mode=mode)
            out.append(hit_rows((await services.pipeline.run(request)).hits))
        return out


def report(
    data_dir: Path, qa: list[dict[str, str]], off: list[dict[str, str]], mode: SearchMode, threshold: float
) -> None:
    answers = asyncio.run(ask(data_dir, [q["question"] for q in qa], mode))
    silence = asyncio.run(ask(data_dir, [q["question"] for q in off], mode))

    def kept(t: float) -> float:
        found = [answered(above(hits, t), q) for q, hits in zip(qa, answers, strict=True)]
        return sum(rank is not None for rank in found) / len(qa)

    def silenced(t: float) -> float:
        return sum(all(float(h["relevance"]) < t for h in hits) for hits in silence) / len(off)

    print(f"\n{mode.value}: {len(qa)} answerable, {len(off)} off-topic questions")
    print("threshold  answers kept  off-topic silenced")
    for t in sorted({*THRESHOLDS, threshold}):
        mark = "  <- default" if t == threshold else ""
        print(f"{t:9.2f}  {kept(t):12.1%}  {silenced(t):18.1%}{mark}")
    top1 = [float(hits[0]["relevance"]) if hits else 0.0 for hits in answers + silence]
    labels = [1.0] * len(answers) + [0.0] * len(silence)
    auc = roc_auc(np.array(top1), np.array(labels))
    print(f"ROC AUC of the top-1 relevance (answerable vs off-topic): {auc:.3f}")
    for q, hits in zip(off, silence, strict=True):
        loud = [round(float(h["relevance"]), 2) for h in hits if float(h["relevance"]) >= threshold]
        if loud:
            print(f"  off-topic with hits at {threshold}: {q['question']!r} {loud}")
    for q, hits in zip(qa, answers, strict=True):
        if answered(above(hits, threshold), q) is None:
            scores = [round(float(h["relevance"]), 2) for h in hits]
            print(f"  answer lost at {threshold}: {q['question']!r} {scores}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("documents", nargs="?", default="../shared/documents", type=Path)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--threshold", type=float, default=None, help="default: chat.min_score")
    parser.add_argument("--modes", nargs="+", default=["hybrid"], choices=[m.value for m in SearchMode])
    args = parser.parse_args()
    qa = [json.loads(line) for line in (args.documents / "qa.jsonl").read_text().splitlines() if line]
    off = [json.loads(line) for line in (ROOT / "bench/data/unanswerable.jsonl").read_text().splitlines()]
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="ragd-relevance-"))
    if not data_dir.is_dir() or not any(data_dir.iterdir()):  # a new or empty data dir: index first
        cmd = [sys.executable, "-m", "ragd.cli.app", "ingest", str(args.documents), "-c", "qa"]
        subprocess.run([*cmd, "--data-dir", str(data_dir)], check=True)
    threshold = Settings().chat.min_score if args.threshold is None else args.threshold
    for mode in args.modes:
        report(data_dir, qa, off, SearchMode(mode), threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
