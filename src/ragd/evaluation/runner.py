"""``ragd eval``: index a BEIR corpus through the real pipeline, then score every mode.

Documents are chunked and embedded like any file (``Ingestor.ingest_document``);
queries go through the search pipeline every other surface uses (the configured
reranker and knobs included); a query's chunk hits are pooled per document by
their best score.  As in BEIR's evaluation, a hit whose document id equals the
query id is ignored (corpora whose queries are also documents).  Re-running on
the same data dir skips documents that are already indexed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragd.errors import EmptyDocument
from ragd.evaluation.beir import Dataset
from ragd.evaluation.metrics import mean, mrr_at, ndcg_at, percentile, recall_at
from ragd.ingest.pipeline import Ingestor
from ragd.retrieve.pipeline import PipelineRequest, Searcher
from ragd.types import ChunkMeta, Document, FileRef, Hit, SearchKnobs, SearchMode

Tick = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class ModeResult:
    mode: SearchMode
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    p50_ms: float
    p95_ms: float
    queries: int


@dataclass(frozen=True, slots=True)
class IndexResult:
    documents: int
    chunks: int
    seconds: float
    #: documents with no text (a corpus may hold empty records); they can't be retrieved
    empty: int = 0


def collection_for(dataset: Dataset) -> str:
    return f"beir-{dataset.name}"


async def index_dataset(
    ingestor: Ingestor, dataset: Dataset, *, concurrency: int = 128, tick: Tick | None = None
) -> IndexResult:
    collection = collection_for(dataset)
    queue = list(reversed(dataset.corpus))
    chunks = empty = 0
    started = time.perf_counter()

    async def worker() -> None:
        nonlocal chunks, empty
        while queue:
            doc = queue.pop()
            ref = FileRef(
                file_id=doc.doc_id,
                collection_name=collection,
                name=doc.title or doc.doc_id,
                source=doc.doc_id,
            )
            try:
                outcome = await ingestor.ingest_document(Document(text=doc.full_text, extractor="beir"), ref)
                chunks += outcome.chunks
            except EmptyDocument:
                empty += 1
            if tick:
                tick(1)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return IndexResult(len(dataset.corpus) - empty, chunks, time.perf_counter() - started, empty)


def pool_by_document(hits: Sequence[Hit], query_id: str | None = None) -> dict[str, float]:
    """Best score per document (hits come best first, so the first one wins); the query's own
    document, when the corpus holds it, is left out (BEIR's convention)."""
    run: dict[str, float] = {}
    for hit in hits:
        doc = ChunkMeta.parse(hit.meta).file_id
        if doc != query_id:
            run.setdefault(doc, hit.score)
    return run


async def evaluate_mode(
    searcher: Searcher,
    dataset: Dataset,
    mode: SearchMode,
    *,
    knobs: SearchKnobs | None = None,
    depth: int = 100,
    tick: Tick | None = None,
) -> ModeResult:
    """Score one mode; ``2 x depth`` chunks per query are pooled into documents."""
    collection = collection_for(dataset)
    ndcg, recall, mrr, latency = [], [], [], []
    for qid, text in dataset.queries.items():
        started = time.perf_counter()
        request = PipelineRequest(
            collections=(collection,), queries=(text,), k=2 * depth, mode=mode, knobs=knobs or SearchKnobs()
        )
        hits = (await searcher.run(request)).hits
        latency.append((time.perf_counter() - started) * 1000)
        run = pool_by_document(hits, qid)
        qrels = dataset.qrels[qid]
        ndcg.append(ndcg_at(run, qrels, 10))
        recall.append(recall_at(run, qrels, 100))
        mrr.append(mrr_at(run, qrels, 10))
        if tick:
            tick(1)
    return ModeResult(
        mode=mode,
        ndcg_at_10=mean(ndcg),
        recall_at_100=mean(recall),
        mrr_at_10=mean(mrr),
        p50_ms=percentile(latency, 50),
        p95_ms=percentile(latency, 95),
        queries=len(latency),
    )
