"""Latency of the embedded store (Qdrant Edge) at 100k points: what a search costs.

Builds a synthetic corpus that looks like chunk embeddings (384-d unit vectors
in clusters, BM25-like sparse vectors with Zipf-distributed terms, 50 tenants),
upserts it through :class:`ragd.store.edge_store.EdgeStore`, times
``optimize()``, then times, per query shape, p50/p99 over ``--queries``:

* dense top-10 filtered to one tenant
* hybrid, fused query alone (one engine call: dense + sparse prefetch, RRF)
* hybrid with component scores (what ``EdgeStore.search`` runs: a batch of 3)
* the same two for a three-tenant filter and for no filter

plus recall@10 of the tenant-filtered dense search against exact numpy, with the
engine's defaults, with ragd's parameters (ACORN; int8 rescoring when on), with ACORN
alone, with a larger ``hnsw_ef``, and exact.

    python bench/store_latency.py                      # 100k points, default tuning
    python bench/store_latency.py --m 0                # the reference ingestion-service's m=0
    python bench/store_latency.py --payload-m 0        # no per-tenant links
    python bench/store_latency.py --tenants 5          # 20k-point tenants
    python bench/store_latency.py --full-scan-kb 10000 # Qdrant's default exact-scan threshold
    python bench/store_latency.py --no-dense-int8      # float32 scans only
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from ragd.store import edge_store
from ragd.store.edge_store import EdgeStore
from ragd.store.payload import SPARSE_VECTOR, filter_plan
from ragd.store.tuning import IndexTuning
from ragd.types import IndexManifest, PointFilter, SparseVector, StoredChunk, StoreQuery

log = logging.getLogger("store_latency")
DIM = 384
VOCAB = 30_000
MANIFEST = IndexManifest("bench", DIM, "", "", "bench-bm25", "bench")


@dataclass
class Corpus:
    dense: np.ndarray  # (n, DIM) float32, unit rows
    tenant: np.ndarray  # (n,) int
    centers: np.ndarray
    sparse_rows: list[SparseVector]


def make_corpus(n: int, tenants: int, clusters: int, seed: int, shape: str) -> Corpus:
    """``lowrank``: spread inside a 48-d subspace (real embeddings have a low intrinsic
    dimension; cosine to the topic centre ~0.75).  ``isotropic``: spread in all 384 dimensions
    (cosine to the centre ~0.6, neighbours nearly random: the worst case for HNSW)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(clusters, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    # a tenant's documents come from a handful of topics
    tenant = rng.integers(0, tenants, size=n)
    topic = (tenant * 7 + rng.integers(0, 12, size=n)) % clusters
    if shape == "lowrank":
        basis = np.linalg.qr(rng.normal(size=(DIM, 48)))[0].astype(np.float32)
        spread = rng.normal(scale=0.12, size=(n, 48)).astype(np.float32) @ basis.T
        spread += rng.normal(scale=0.01, size=(n, DIM)).astype(np.float32)
    else:
        spread = rng.normal(scale=0.06, size=(n, DIM)).astype(np.float32)
    dense = centers[topic] + spread
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    ranks = np.arange(1, VOCAB + 1)
    zipf = (1 / ranks) / (1 / ranks).sum()
    rows = []
    for t in topic:
        terms = np.unique(
            np.concatenate([rng.choice(VOCAB, 30, p=zipf), (t * 97 + rng.integers(0, 40, 10)) % VOCAB])
        )
        tf = rng.integers(1, 4, size=len(terms)).astype(np.float64)
        rows.append(
            SparseVector(tuple(int(i) for i in terms), tuple(float(v) for v in tf * 1.2 / (tf + 1.2)))
        )
    return Corpus(dense.astype(np.float32), tenant, centers, rows)


def chunks(corpus: Corpus) -> list[StoredChunk]:
    return [
        StoredChunk(
            id=str(uuid.UUID(int=i + 1)),
            content=f"chunk {i}",
            meta={"collection_name": f"t{corpus.tenant[i]}", "file_id": f"t{corpus.tenant[i]}-f{i % 40}"},
            dense=corpus.dense[i],
            sparse=corpus.sparse_rows[i],
        )
        for i in range(len(corpus.tenant))
    ]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def queries(corpus: Corpus, count: int, tenants: int, seed: int) -> list[tuple[int, StoreQuery]]:
    rng = np.random.default_rng(seed + 1)
    out = []
    for _ in range(count):
        t = int(rng.integers(0, tenants))
        mine = np.flatnonzero(corpus.tenant == t)
        anchor = corpus.dense[rng.choice(mine)]
        q = anchor + rng.normal(scale=0.05, size=DIM).astype(np.float32)
        terms = tuple(sorted({int(x) for x in rng.choice(corpus.sparse_rows[rng.choice(mine)].indices, 5)}))
        out.append(
            (
                t,
                StoreQuery(
                    PointFilter(collection_names=(f"t{t}",)),
                    10,
                    (q / np.linalg.norm(q)).astype(np.float32),
                    SparseVector(terms, (1.0,) * len(terms)),
                    prefetch_limit=40,
                ),
            )
        )
    return out


def recall_at_10(store_hits: list[list[str]], corpus: Corpus, qs: list[tuple[int, StoreQuery]]) -> float:
    found = 0
    for hits, (t, q) in zip(store_hits, qs, strict=True):
        mine = np.flatnonzero(corpus.tenant == t)
        assert q.dense is not None
        best = mine[np.argsort(-(corpus.dense[mine] @ q.dense))[:10]]
        found += len({str(uuid.UUID(int=int(i) + 1)) for i in best} & set(hits))
    return found / (10 * len(qs))


async def run(args: argparse.Namespace) -> None:
    tuning = IndexTuning(
        m=args.m,
        payload_m=args.payload_m,
        full_scan_threshold_kb=args.full_scan_kb,
        dense_int8=args.dense_int8,
    )
    print(f"data={args.data} points={args.points} tenants={args.tenants}")
    corpus = make_corpus(args.points, args.tenants, args.clusters, args.seed, args.data)
    data = chunks(corpus)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        store = EdgeStore(Path(tmp), "bench", tuning=tuning)
        await store.open(MANIFEST)
        start = time.perf_counter()
        for i in range(0, len(data), 2048):
            await store.upsert(data[i : i + 2048])
        print(f"upsert {len(data)} points: {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        await store.optimize()
        print(f"optimize(): {time.perf_counter() - start:.1f} s  {await store.stats()}  tuning={tuning}")
        await report(store, corpus, args)
        await store.close()


async def report(store: EdgeStore, corpus: Corpus, args: argparse.Namespace) -> None:
    qs = queries(corpus, args.queries, args.tenants, args.seed)
    shard = store._require_shard()  # the bench reaches in to time the fused query on its own

    def fused_only(q: StoreQuery) -> Callable[[], Awaitable[object]]:
        flt = edge_store._edge_filter(filter_plan(q.filter))
        dense_list = edge_store._DenseList(
            q, flt, store._tuning, filtered=flt is not None, segments=store._segments
        )
        request = edge_store._hybrid_requests(q, flt, dense_list, SPARSE_VECTOR)[0]
        return lambda: store._run(lambda: shard.query(request))

    three = PointFilter(collection_names=tuple(f"t{i}" for i in range(3)))
    shapes: dict[str, Callable[[StoreQuery], Callable[[], Awaitable[object]]]] = {
        "dense, 1 tenant": lambda q: lambda: store.search(_replace(q, sparse=None)),
        "hybrid fused only, 1 tenant": fused_only,
        "hybrid + components (batch of 3), 1 tenant": lambda q: lambda: store.search(q),
        "hybrid fused only, 3 tenants": lambda q: fused_only(_replace(q, filter=three)),
        "hybrid + components, 3 tenants": lambda q: lambda: store.search(_replace(q, filter=three)),
        "hybrid fused only, no filter": lambda q: fused_only(_replace(q, filter=PointFilter())),
        "hybrid + components, no filter": lambda q: lambda: store.search(_replace(q, filter=PointFilter())),
    }  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in shapes}
    for n, (_, q) in enumerate(qs):  # interleaved, so load from other processes hits every shape alike
        names = list(shapes)
        for name in names[n % len(names) :] + names[: n % len(names)]:
            fn = shapes[name](q)
            start = time.perf_counter()
            await fn()
            samples[name].append((time.perf_counter() - start) * 1000)
    for name, values in samples.items():
        p50, p99 = percentiles(values[5:])  # the first few warm caches up
        print(f"{name:46s} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")
    await params_sweep(store, corpus, qs)


async def params_sweep(store: EdgeStore, corpus: Corpus, qs: list[tuple[int, StoreQuery]]) -> None:
    """Recall@10 and latency of the tenant-filtered dense search under a few search parameters."""
    shard = store._require_shard()

    def with_params(params: qe.SearchParams | None) -> Callable[[StoreQuery], qe.QueryRequest]:
        return lambda q: qe.QueryRequest(
            limit=10,
            query=qe.Query.Nearest(np.asarray(q.dense).tolist(), using="text-dense"),
            filter=edge_store._edge_filter(filter_plan(q.filter)),
            params=params,
        )

    def ragd_s(q: StoreQuery) -> qe.QueryRequest:  # the store's dense list, asked as the store asks it
        flt = edge_store._edge_filter(filter_plan(q.filter))
        dense_list = edge_store._DenseList(q, flt, store._tuning, filtered=True, segments=store._segments)
        return dense_list.request(10, with_payload=False)

    sweep: dict[str, Callable[[StoreQuery], qe.QueryRequest]] = {
        "engine defaults": with_params(None),
        "ragd's (the store's tuning)": ragd_s,
        "ACORN, nothing else": with_params(qe.SearchParams(acorn=qe.AcornSearchParams(enable=True))),
        "hnsw_ef=256": with_params(qe.SearchParams(hnsw_ef=256)),
        "exact": with_params(qe.SearchParams(exact=True)),
    }
    for name, make in sweep.items():
        hits, samples = [], []
        for _, q in qs:
            assert q.dense is not None
            request = make(q)
            start = time.perf_counter()
            points = await store._run(lambda r=request: shard.query(r))  # type: ignore[misc]
            samples.append((time.perf_counter() - start) * 1000)
            hits.append([str(p.id) for p in points])
        p50, p99 = percentiles(samples[5:])
        recall = recall_at_10(hits, corpus, qs)
        print(f"dense 1 tenant, {name:28s} recall@10 {recall:.3f}  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms")


def _replace(q: StoreQuery, **changes: object) -> StoreQuery:
    return dataclasses.replace(q, **changes)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--tenants", type=int, default=50)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--m", type=int, default=IndexTuning().m)
    parser.add_argument("--payload-m", type=int, default=IndexTuning().payload_m)
    parser.add_argument("--full-scan-kb", type=int, default=IndexTuning().full_scan_threshold_kb)
    parser.add_argument(
        "--dense-int8",
        action=argparse.BooleanOptionalAction,
        default=IndexTuning().dense_int8,
        help="scan an int8 copy of the dense vectors, rescored with float32 (ragd's default)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", choices=("lowrank", "isotropic"), default="lowrank")
    parser.add_argument("--tmp", type=Path, default=None, help="where the temporary shard goes")
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
