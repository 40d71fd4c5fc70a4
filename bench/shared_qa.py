"""Answer-in-top-k on ../shared/documents: the figure a user sees, read from ``ragd search --json``.

    python bench/shared_qa.py [../shared/documents] [--k 5] [--mode hybrid] [--data-dir DIR]
                              [--search-args "--diversity 0.3 --max-per-file 2"]

Indexes the folder with ``ragd ingest`` into a fresh data dir (or reuses ``--data-dir``), then asks
every ``qa.jsonl`` question with ``ragd search --json -k K`` and counts a question as answered when
one of the top K hits comes from the question's file and contains its ``answer_substring`` (after
collapsing white space and Markdown backslash escapes, as the extraction tests compare).  Prints one
row per question, the share answered and the mean number of distinct files among the top K (what the
diversity knobs buy).
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


def normalise(text: str) -> str:
    return " ".join(_ESCAPE.sub(r"\1", text).split())


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
    parser.add_argument("--data-dir", type=Path, help="reuse this index instead of building a fresh one")
    parser.add_argument("--search-args", default="", help="more ragd search options, e.g. the knobs")
    args = parser.parse_args()
    questions = [json.loads(line) for line in (args.documents / "qa.jsonl").read_text().splitlines() if line]
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="ragd-qa-"))
    if args.data_dir is None:
        started = time.perf_counter()
        done = ragd("ingest", str(args.documents), "--collection", "qa", "--data-dir", str(data_dir))
        print(f"ingest: exit {done.returncode} in {time.perf_counter() - started:.0f} s")
        print("\n".join(done.stdout.strip().splitlines()[-12:]))
    hits_found = 0
    distinct: list[int] = []
    for item in questions:
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
        print(f"  {'rank ' + str(rank) if rank else 'MISS  '}  {item['file']}: {item['question'][:70]}")
    share = hits_found / len(questions)
    how = f"{args.mode} {args.search_args}".strip()
    print(f"answer in top {args.k} ({how}): {hits_found}/{len(questions)} = {share:.1%}")
    print(f"distinct files in the top {args.k}: mean {sum(distinct) / max(1, len(distinct)):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
