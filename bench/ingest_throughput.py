"""End-to-end ingest throughput as a ratio to the bare embedding throughput of the same chunks.

    python bench/ingest_throughput.py ../shared/datasets/scifact [--docs N]

Writes each corpus document to a .txt file, runs the real folder ingest (extract, chunk, dense + BM25,
Qdrant Edge writes) into a fresh data dir, then embeds exactly the same chunk texts with the bare
embedder in the same process.  Rounds are interleaved (e2e, bare, e2e, bare, ...) and medians reported,
so machine noise hits both sides.  Also prints peak RSS.
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


async def one_round(corpus_dir: Path, work: Path, round_no: int) -> tuple[float, float, int]:
    settings = Settings(data_dir=work / f"data-{round_no}")
    files = collect([corpus_dir])
    async with open_services(settings) as services:
        started = time.perf_counter()
        reports = await ingest_files(
            services.ingestor, services.store, files, "bench", concurrency=settings.ingest_concurrency
        )
        e2e = time.perf_counter() - started
        chunks = sum(r.chunks for r in reports)
        texts = []
        for f in files:
            doc = Document(text=f.path.read_text(), extractor="text")
            texts.extend(c.embedding_text() for c in services.chunker.chunk(doc))
        started = time.perf_counter()
        await services.dense.embed_documents(texts)
        bare = time.perf_counter() - started
    assert len(texts) == chunks, (len(texts), chunks)
    return e2e, bare, chunks


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data = load_dataset(args.dataset)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus_dir = work / "corpus"
        corpus_dir.mkdir()
        for doc in data.corpus[: args.docs]:
            (corpus_dir / f"{doc.doc_id}.txt").write_text(doc.full_text)
        e2e_rates, bare_rates = [], []
        for i in range(args.rounds):
            e2e, bare, chunks = await one_round(corpus_dir, work, i)
            e2e_rates.append(chunks / e2e)
            bare_rates.append(chunks / bare)
            print(
                f"round {i}: {chunks} chunks, e2e {chunks / e2e:.1f}/s, bare embedding {chunks / bare:.1f}/s"
            )
    e2e_med, bare_med = statistics.median(e2e_rates), statistics.median(bare_rates)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"median e2e {e2e_med:.1f} chunks/s, bare {bare_med:.1f} chunks/s, ratio {e2e_med / bare_med:.3f}")
    print(f"peak RSS {rss_mb:.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
