"""A user filter's cost: dense top-10 over N chunks of one dataset, unfiltered vs a filter that
admits 1 % of them, in the embedded engine (Qdrant Edge) through ragd's store adapter.

Synthetic chunks shaped like embeddings (384-d unit vectors in clusters inside a low-rank
subspace, not uniform noise: HNSW recall on uniform vectors means nothing) in one collection,
each with the user metadata a file gives its chunks: ``meta.tags`` (1 % carry ``rare``; a
keyword-indexed key), ``meta.fields.level`` (0-9999, 1 % below 100; a float index, as a field a
dataset records gets) and ``meta.fields.bucket`` (the same values, no index).  Then per
query shape, p50/p99 over ``--queries`` interleaved rounds, and each shape's p50 as a ratio of the
unfiltered one measured in the same run:

* unfiltered (the dataset scope alone)
* ``{"must": [{"key": "tags", "match": {"value": "rare"}}]}``           1 %, indexed key
* ``{"must": [{"key": "fields.level", "range": {"lt": 100}}]}``         1 %, a float index
* ``{"must": [{"key": "fields.bucket", "range": {"lt": 100}}]}``        1 %, no payload index
* the exact count of each filter (what ``filter_matched`` costs)

plus recall@10 of each filtered search against exact numpy over the admitted chunks.

    python bench/filtered_search.py --chunks 100000     # what was measured (docs/benchmarks.md)
    python bench/filtered_search.py                     # 1,000,000 chunks: not measured here
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np

from ragd.retrieve.filters import parse_filter
from ragd.store.edge_store import EdgeStore
from ragd.store.payload import IndexKind, field_index
from ragd.store.tuning import IndexTuning
from ragd.types import IndexManifest, MetaFilter, PointFilter, StoredChunk, StoreQuery

log = logging.getLogger("filtered_search")
DIM = 384
MANIFEST = IndexManifest("bench", DIM, "", "", "bench-bm25", "bench")
COLLECTION = "dataset-1"
FILTERS = {
    "tag (indexed)": {"must": [{"key": "tags", "match": {"value": "rare"}}]},
    "field range (indexed)": {"must": [{"key": "fields.level", "range": {"lt": 100}}]},
    "field range (unindexed)": {"must": [{"key": "fields.bucket", "range": {"lt": 100}}]},
}


def make_corpus(n: int, clusters: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit vectors around ``clusters`` topics in a 48-d subspace; 1 % tagged, buckets 0-9999."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    basis = np.linalg.qr(rng.normal(size=(DIM, 48)))[0].astype(np.float32)
    dense = np.empty((n, DIM), dtype=np.float32)
    step = 50_000
    for start in range(0, n, step):
        m = min(step, n - start)
        topic = rng.integers(0, clusters, size=m)
        spread = rng.normal(scale=0.12, size=(m, 48)).astype(np.float32) @ basis.T
        block = centers[topic] + spread + rng.normal(scale=0.01, size=(m, DIM)).astype(np.float32)
        dense[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    rare = rng.random(n) < 0.01
    bucket = rng.integers(0, 10_000, size=n)
    return dense, rare, bucket


def chunk_batches(dense: np.ndarray, rare: np.ndarray, bucket: np.ndarray, size: int = 5_000):  # type: ignore[no-untyped-def]
    for start in range(0, len(dense), size):
        yield [
            StoredChunk(
                id=str(uuid.UUID(int=i + 1)),
                content=f"chunk {i}",
                meta={
                    "collection_name": COLLECTION,
                    "file_id": f"f{i // 20}",
                    "tags": ["rare", "common"] if rare[i] else ["common"],
                    "fields": {"bucket": int(bucket[i]), "level": int(bucket[i])},
                },
                dense=dense[i],
            )
            for i in range(start, min(start + size, len(dense)))
        ]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000.0


async def run(args: argparse.Namespace) -> None:
    dense, rare, bucket = make_corpus(args.chunks, args.clusters, args.seed)
    admitted = {
        "tag (indexed)": rare,
        "field range (indexed)": bucket < 100,
        "field range (unindexed)": bucket < 100,
    }
    rng = np.random.default_rng(args.seed + 1)
    picks = rng.integers(0, len(dense), size=args.queries)
    queries = dense[picks] + rng.normal(scale=0.05, size=(args.queries, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    wheres: dict[str, MetaFilter | None] = {"unfiltered": None}
    wheres.update({name: parse_filter(raw) for name, raw in FILTERS.items()})

    with tempfile.TemporaryDirectory(prefix="ragd-filtered-") as tmp:
        store = EdgeStore(Path(tmp) / "data", "bench", tuning=IndexTuning())
        await store.open(MANIFEST)
        # what a dataset recording a number field gets (kb.file_metadata); "bucket" stays unindexed
        await store.ensure_index(field_index("level", IndexKind.FLOAT))
        started = time.perf_counter()
        for batch in chunk_batches(dense, rare, bucket):
            await store.upsert(batch)
        upserted = time.perf_counter() - started
        started = time.perf_counter()
        await store.optimize()
        built = time.perf_counter() - started
        print(f"{args.chunks:,} chunks: upsert {upserted:.1f} s, optimize {built:.1f} s")

        def query(i: int, where: MetaFilter | None) -> StoreQuery:
            flt = PointFilter(collection_names=(COLLECTION,), where=where)
            return StoreQuery(flt, 10, dense=queries[i], prefetch_limit=10, explain=False)

        for i in range(min(20, args.queries)):  # warm up
            for where in wheres.values():
                await store.search(query(i, where))
        samples: dict[str, list[float]] = {name: [] for name in wheres}
        counts: dict[str, list[float]] = {name: [] for name in FILTERS}
        hits: dict[str, list[list[str]]] = {name: [] for name in FILTERS}
        for i in range(args.queries):  # interleaved: every shape sees the same machine noise
            for name, where in wheres.items():
                q = query(i, where)
                found: list[list[str]] = []

                async def search(q: StoreQuery = q, found: list[list[str]] = found) -> None:
                    found.append([h.id for h in await store.search(q)])

                samples[name].append(await timed(search))
                if name in FILTERS:
                    hits[name].append(found[0])
                    flt = q.filter
                    counts[name].append(await timed(lambda flt=flt: store.count(flt)))
        matched = {name: await store.count(query(0, wheres[name]).filter) for name in FILTERS}
        await store.close()

    base, _ = percentiles(samples["unfiltered"])
    print(f"dense top-10, {args.queries} queries, p50 / p99 ms, ratio of p50 to unfiltered:")
    for name, values in samples.items():
        p50, p99 = percentiles(values)
        extra = ""
        if name in FILTERS:
            share = matched[name] / args.chunks
            found = recall(hits[name], admitted[name], dense, queries)
            extra = f"  admits {matched[name]:,} ({share:.2%}), recall@10 {found:.3f}"
        print(f"  {name:<24} p50 {p50:7.3f}  p99 {p99:7.3f}  x{p50 / base:5.2f}{extra}")
    for name, values in counts.items():
        p50, p99 = percentiles(values)
        print(f"  count, {name:<17} p50 {p50:7.3f}  p99 {p99:7.3f}  x{p50 / base:5.2f}")


def recall(found: list[list[str]], mask: np.ndarray, dense: np.ndarray, queries: np.ndarray) -> float:
    rows = np.flatnonzero(mask)
    got = 0
    for ids, q in zip(found, queries, strict=False):
        best = rows[np.argsort(-(dense[rows] @ q))[:10]]
        got += len({str(uuid.UUID(int=int(i) + 1)) for i in best} & set(ids))
    return got / (10 * len(found))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
