"""int8 against fp32 (RAGD_EMBEDDING__PRECISION), in the same run on the same machine.

    python bench/int8.py [--datasets ../shared/datasets] [--docs 600] [--rounds 3] [--queries 200]
                         [--skip-relevance] [--skip-speed]

Speed: every round runs one worker process per precision (the order alternates by round), each
with fresh services and the same warm-up, on the same SciFact documents written as .txt files:

* ingest chunks/s: the real folder ingest (extract, chunk, dense + BM25, Qdrant Edge writes);
* query embedding p50 (ms): ``embed_query`` of distinct questions one at a time (no cache hits);
* peak RSS (MB) of the worker.

Medians over the rounds and the ratio int8 / fp32 are printed.

Relevance: ``ragd eval --json`` of every shared dataset (BEIR folders under ``--datasets``) with
each precision, dense and hybrid modes; nDCG@10 of both and the delta int8 - fp32.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRECISIONS = ("fp32", "int8")
WARM_UP = 32


def _write_corpus(dataset: Path, docs: int, folder: Path) -> None:
    from ragd.evaluation.beir import load_dataset

    data = load_dataset(dataset, split="test", sample_docs=docs)
    folder.mkdir(parents=True, exist_ok=True)
    for index, doc in enumerate(data.corpus):
        (folder / f"{index:05d}.txt").write_text(f"{doc.title}\n\n{doc.text}", encoding="utf-8")


async def _speed(precision: str, corpus: Path, questions: list[str], work: Path) -> dict[str, float]:
    from ragd.bootstrap import open_services
    from ragd.ingest.batch import ingest_files
    from ragd.ingest.sources import collect
    from ragd.settings import EmbeddingSettings, Settings

    cache = work / "models"
    settings = Settings(
        data_dir=work / f"data-{precision}-{time.monotonic_ns()}",
        embedding=EmbeddingSettings(precision=precision, cache_dir=cache),  # type: ignore[arg-type]
    )
    files = collect([corpus])
    async with open_services(settings) as services:
        warm = [f"warm-up text number {i} about retrieval and ranking" for i in range(WARM_UP)]
        await services.dense.embed_documents(warm)
        for text in warm[:8]:
            await services.dense.embed_query(text)
        started = time.perf_counter()
        reports = await ingest_files(
            services.ingestor, services.store, files, "bench", concurrency=settings.ingest_concurrency
        )
        seconds = time.perf_counter() - started
        failed = [r for r in reports if r.code]
        assert not failed, failed[:3]
        chunks = sum(r.chunks for r in reports)
        latencies = []
        for question in questions:
            began = time.perf_counter()
            await services.dense.embed_query(question)
            latencies.append(time.perf_counter() - began)
    return {
        "chunks": chunks,
        "chunks_per_s": chunks / seconds,
        "query_p50_ms": statistics.median(latencies) * 1000,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _worker(args: argparse.Namespace) -> None:
    questions = json.loads(Path(args.questions).read_text(encoding="utf-8"))
    result = asyncio.run(_speed(args.worker, Path(args.corpus), questions, Path(args.work)))
    print(json.dumps(result))


def _run_worker(precision: str, corpus: Path, questions: Path, work: Path) -> dict[str, float]:
    command = [sys.executable, __file__, "--worker", precision, "--corpus", str(corpus)]
    command += ["--questions", str(questions), "--work", str(work)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def speed(args: argparse.Namespace, work: Path) -> None:
    from ragd.evaluation.beir import load_dataset

    scifact = args.datasets / "scifact"
    corpus = work / "corpus"
    _write_corpus(scifact, args.docs, corpus)
    data = load_dataset(scifact, split="test", max_queries=args.queries)
    questions = work / "questions.json"
    questions.write_text(json.dumps(list(data.queries.values())[: args.queries]), encoding="utf-8")
    for precision in PRECISIONS:  # build each graph once, outside the timed rounds
        _run_worker(precision, corpus, questions, work)
    rows: dict[str, list[dict[str, float]]] = {p: [] for p in PRECISIONS}
    for round_ in range(args.rounds):
        order = PRECISIONS if round_ % 2 == 0 else PRECISIONS[::-1]
        for precision in order:
            rows[precision].append(_run_worker(precision, corpus, questions, work))
            print(f"round {round_ + 1} {precision}: {rows[precision][-1]}", file=sys.stderr, flush=True)
    med = {p: {k: statistics.median(r[k] for r in rows[p]) for k in rows[p][0]} for p in PRECISIONS}
    print(
        f"\nspeed: {args.docs} SciFact documents, {int(med['fp32']['chunks'])} chunks, "
        f"{args.rounds} rounds, {os.cpu_count()} cores (medians)"
    )
    print(f"{'':22}{'fp32':>10}{'int8':>10}{'int8/fp32':>11}")
    for key, label in (
        ("chunks_per_s", "ingest chunks/s"),
        ("query_p50_ms", "query embed p50 ms"),
        ("peak_rss_mb", "peak RSS MB"),
    ):
        a, b = med["fp32"][key], med["int8"][key]
        print(f"{label:22}{a:10.2f}{b:10.2f}{b / a:10.2f}x")


def relevance(args: argparse.Namespace, work: Path) -> None:
    names = sorted(p.name for p in args.datasets.iterdir() if (p / "corpus.jsonl").is_file())
    print(f"\nrelevance: nDCG@10 by `ragd eval` ({', '.join(names)})")
    print(f"{'dataset':12}{'mode':8}{'fp32':>9}{'int8':>9}{'delta':>9}")
    for name in names:
        scores: dict[str, dict[str, float]] = {}
        for precision in PRECISIONS:
            env = {
                **os.environ,
                "RAGD_EMBEDDING__PRECISION": precision,
                "RAGD_EMBEDDING__CACHE_DIR": str(work / "models"),
                "RAGD_DATA_DIR": str(work / f"eval-{precision}"),
            }
            command = [sys.executable, "-m", "ragd.cli.app", "eval", str(args.datasets / name)]
            command += [
                "--mode",
                "dense",
                "--mode",
                "hybrid",
                "--json",
                "--data-dir",
                str(work / f"eval-{name}-{precision}"),
            ]
            out = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=ROOT)
            report = json.loads(out.stdout.strip().splitlines()[-1])
            (dataset,) = report["datasets"]
            scores[precision] = {row["mode"]: row["ndcg_at_10"] for row in dataset["modes"]}
        for mode in ("dense", "hybrid"):
            a, b = scores["fp32"][mode], scores["int8"][mode]
            print(f"{name:12}{mode:8}{a:9.4f}{b:9.4f}{b - a:+9.4f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-relevance", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--worker", choices=PRECISIONS, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--questions", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args)
        return
    if not (args.datasets / "scifact").is_dir():
        sys.exit(f"needs the shared datasets at {args.datasets} (clone ragd beside ../shared)")
    with tempfile.TemporaryDirectory(prefix="ragd-int8-") as tmp:
        work = Path(tmp)
        if not args.skip_speed:
            speed(args, work)
        if not args.skip_relevance:
            relevance(args, work)


if __name__ == "__main__":
    main()
