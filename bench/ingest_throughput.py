"""End-to-end ingest throughput as a ratio to the bare embedding throughput of the same chunks.

    python bench/ingest_throughput.py ../shared/datasets/scifact [--docs N]

Writes each corpus document to a .txt file, runs the real folder ingest (extract, chunk, dense + BM25,
Qdrant Edge writes) into a fresh data dir, and separately embeds exactly the same chunk texts with the
bare embedder.  Every phase gets fresh services and the same warm-up; the order alternates by round
(bare first, then e2e first, ...) and medians are reported, so machine noise and warm caches hit both
sides alike.  Also prints the peak RSS of the whole process.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from pathlib import Path

from ragd.bootstrap import open_services
from ragd.evaluation.beir import load_dataset
from ragd.ingest.batch import ingest_files
from ragd.ingest.sources import collect
from ragd.settings import Settings
from ragd.types import Document


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


WARM_UP = 64  # texts embedded before either phase is timed: onnxruntime's first runs per shape are slow


async def chunk_texts(corpus_dir: Path, work: Path) -> list[str]:
    """The embedding texts of every chunk the ingest will make, from the same chunker."""
    async with open_services(Settings(data_dir=work / "chunking")) as services:
        texts: list[str] = []
        for f in collect([corpus_dir]):
            doc = Document(text=f.path.read_text(), extractor="text")
            texts.extend(c.embedding_text() for c in services.chunker.chunk(doc))
        return texts


async def end_to_end(corpus_dir: Path, data_dir: Path, warm: list[str]) -> tuple[float, int]:
    settings = Settings(data_dir=data_dir)
    files = collect([corpus_dir])
    async with open_services(settings) as services:
        await services.dense.embed_documents(warm)
        started = time.perf_counter()
        reports = await ingest_files(
            services.ingestor, services.store, files, "bench", concurrency=settings.ingest_concurrency
        )
        seconds = time.perf_counter() - started
    failed = [r for r in reports if r.code]
    assert not failed, failed[:3]
    return seconds, sum(r.chunks for r in reports)


async def bare(texts: list[str], data_dir: Path, warm: list[str]) -> float:
    async with open_services(Settings(data_dir=data_dir)) as services:
        await services.dense.embed_documents(warm)
        started = time.perf_counter()
        await services.dense.embed_documents(texts)
        return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data = load_dataset(args.dataset)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus_dir = work / "corpus"
        corpus_dir.mkdir()
        for doc in data.corpus[: args.docs]:
            (corpus_dir / f"{doc.doc_id}.txt").write_text(doc.full_text)
        texts = await chunk_texts(corpus_dir, work)
        warm = [t[::-1] for t in texts[:WARM_UP]]  # same lengths, other text: nothing is cached
        e2e_rates, bare_rates = [], []
        for i in range(args.rounds):
            # fresh services for every phase, and the order alternates, so neither side inherits
            # a warmer model or page cache from the other
            phases = ("e2e", "bare") if i % 2 else ("bare", "e2e")
            for phase in phases:
                if phase == "e2e":
                    seconds, chunks = await end_to_end(corpus_dir, work / f"e2e-{i}", warm)
                    assert chunks == len(texts), (chunks, len(texts))
                    e2e_rates.append(chunks / seconds)
                else:
                    bare_rates.append(len(texts) / await bare(texts, work / f"bare-{i}", warm))
            print(
                f"round {i} ({' then '.join(phases)}): {len(texts)} chunks, "
                f"e2e {e2e_rates[-1]:.1f}/s, bare embedding {bare_rates[-1]:.1f}/s, "
                f"ratio {e2e_rates[-1] / bare_rates[-1]:.3f}",
                flush=True,
            )
    e2e_med, bare_med = statistics.median(e2e_rates), statistics.median(bare_rates)
    print(f"median e2e {e2e_med:.1f} chunks/s, bare {bare_med:.1f} chunks/s, ratio {e2e_med / bare_med:.3f}")
    print(f"peak RSS {peak_rss_mb():.0f} MB (the whole benchmark process)")


if __name__ == "__main__":
    asyncio.run(main())
