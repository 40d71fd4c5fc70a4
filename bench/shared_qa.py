"""Answer-in-top-k on ../shared/documents: the figure a user sees, read from ``ragd search --json``.

    python bench/shared_qa.py [../shared/documents] [--k 5] [--mode hybrid] [--data-dir DIR]
                              [--search-args "--diversity 0.3 --max-per-file 2"]
                              [--questions FILE [--questions FILE ...] | --only-shared] [--index-all]

Indexes the folder with ``ragd ingest`` into a fresh data dir (or reuses ``--data-dir``, building the
index there when the folder holds none), then asks every question with ``ragd search --json -k K``
and counts a question as answered when one of the top K hits comes from the question's file and
contains its ``answer_substring`` (after collapsing white space and Markdown backslash escapes, as the
extraction tests compare).  The questions are those of
``<documents>/qa.jsonl`` plus, by default, ``bench/data/shared_qa_extra.jsonl`` (harder ones: table
cells, spreadsheet rows, slides, facts deep in long HTML pages, OCR pages, non-English files);
``--questions FILE`` (repeatable) replaces that extra file, ``--only-shared`` keeps ``qa.jsonl`` alone.
Every file holds one JSON object a line: ``{"file", "question", "answer_substring"}``.  The folder's
answer key and source list (``qa.jsonl``, ``SOURCES.md``) are not indexed: they hold the questions
word for word and a line about every file, so they would take top-5 slots from the documents
(``--index-all`` indexes them too, as a plain ``ragd ingest`` of the folder would).  Prints one row
per question, the share answered overall and per file-type group (pdf, office, html, spreadsheet/csv,
other) and the mean number of distinct files among the top K (what the diversity knobs buy).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
EXTRA_QUESTIONS = Path(__file__).parent / "data" / "shared_qa_extra.jsonl"
NOT_DOCUMENTS = ("qa.jsonl", "SOURCES.md")  # the folder's answer key and its list of sources
GROUPS = {  # file suffix -> the group its share is reported under; anything else is "other"
    ".pdf": "pdf",
    ".docx": "office",
    ".pptx": "office",
    ".odt": "office",
    ".xlsx": "spreadsheet/csv",
    ".xls": "spreadsheet/csv",
    ".csv": "spreadsheet/csv",
    ".html": "html",
    ".htm": "html",
}
GROUP_ORDER = ("pdf", "office", "html", "spreadsheet/csv", "other")


def normalise(text: str) -> str:
    return " ".join(_ESCAPE.sub(r"\1", text).split())


def load_questions(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def group_of(name: str) -> str:
    return GROUPS.get(Path(name).suffix.lower(), "other")


def ragd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragd.cli.app", *args], capture_output=True, text=True, check=False
    )


def answered(hits: list[dict[str, object]], item: dict[str, str]) -> int | None:
    """The 1-based rank of the first hit from the right file holding the answer, or None."""
    answer = normalise(item["answer_substring"])
    for rank, hit in enumerate(hits, 1):
        meta = hit.get("meta") or {}
        source = str(meta.get("source") or meta.get("name") or "") if isinstance(meta, dict) else ""
        if Path(source).name == item["file"] and answer in normalise(str(hit.get("content", ""))):
            return rank
    return None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("documents", nargs="?", default="../shared/documents", type=Path)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument(
        "--data-dir", type=Path,
        help="reuse the index in this folder (built there first when it holds none) instead of a fresh one",
    )  # fmt: skip
    parser.add_argument("--search-args", default="", help="more ragd search options, e.g. the knobs")
    parser.add_argument(
        "--index-all", action="store_true",
        help=f"index the whole folder, {' and '.join(NOT_DOCUMENTS)} included (they hold the questions)",
    )  # fmt: skip
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--questions", type=Path, action="append",
        help=f"a question file asked besides qa.jsonl, instead of {EXTRA_QUESTIONS.name} (repeatable)",
    )  # fmt: skip
    which.add_argument("--only-shared", action="store_true", help="ask only <documents>/qa.jsonl")
    args = parser.parse_args()
    extra = [] if args.only_shared else (args.questions or [EXTRA_QUESTIONS])
    sources = [args.documents / "qa.jsonl", *extra]
    loaded = {path: load_questions(path) for path in sources}
    questions = [item for items in loaded.values() for item in items]
    print("questions: " + ", ".join(f"{len(items)} from {path}" for path, items in loaded.items()))
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="ragd-qa-"))
    print(f"index: {data_dir}")
    if args.data_dir is None or not (data_dir / "qdrant").is_dir():  # a folder without an index: build it
        started = time.perf_counter()
        ignored = () if args.index_all else tuple(f"--ignore={name}" for name in NOT_DOCUMENTS)
        folder = str(args.documents)
        done = ragd("ingest", folder, "--collection", "qa", "--data-dir", str(data_dir), *ignored)
        print(f"ingest: exit {done.returncode} in {time.perf_counter() - started:.0f} s")
        print("\n".join(done.stdout.strip().splitlines()[-12:]))
    hits_found = 0
    distinct: list[int] = []
    per_group: dict[str, list[int]] = {group: [0, 0] for group in GROUP_ORDER}  # answered, asked
    for item in questions:
        tally = per_group[group_of(item["file"])]
        tally[1] += 1
        result = ragd(
            "search", item["question"], "-c", "qa", "-k", str(args.k), "--mode", args.mode,
            "--json", "--data-dir", str(data_dir), *shlex.split(args.search_args),
        )  # fmt: skip
        if result.returncode != 0:
            print(f"  ERROR {item['file']}: {result.stderr.strip()[-200:]}")
            continue
        hits = json.loads(result.stdout)
        distinct.append(len({str((h.get("meta") or {}).get("file_id")) for h in hits}))
        rank = answered(hits, item)
        hits_found += rank is not None
        tally[0] += rank is not None
        print(f"  {'rank ' + str(rank) if rank else 'MISS  '}  {item['file']}: {item['question'][:70]}")
    share = hits_found / len(questions)
    how = f"{args.mode} {args.search_args}".strip()
    print(f"answer in top {args.k} ({how}): {hits_found}/{len(questions)} = {share:.1%}")
    for group, (found, asked) in per_group.items():
        if asked:
            print(f"  {group:<16} {found}/{asked} = {found / asked:.1%}")
    print(f"distinct files in the top {args.k}: mean {sum(distinct) / max(1, len(distinct)):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
