"""Backup and restore throughput, and search latency during a backup against idle.

    python bench/backup.py [--points 100000] [--queries 200]

An embedded index (Qdrant Edge) of ``--points`` synthetic chunks (``store_latency.py``'s dense
vectors and BM25-like sparse rows, 10 chunks a file, 50 tenants) and an empty SQLite catalog.
Reported: backup (``ragd.kb.backup.take_backup``: catalog copy, every point with its vectors,
SHA-256 of each part) and restore (``ragd.bootstrap.backups.restore_into``: verify every part,
plan, upsert into a fresh index, optimize) in MB/s and chunks/s; and the p50 of a hybrid search of
one tenant while the backup runs, as a ratio to the idle p50 measured just before it in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from ragd.bootstrap.backups import restore_into
from ragd.catalog.sql import open_catalog
from ragd.catalog.sql.snapshot import copy_catalog
from ragd.kb.backup import take_backup
from ragd.settings import Settings
from ragd.store.edge_store import EdgeStore
from ragd.store.manifest_io import manifest_to_dict
from ragd.types import PointFilter, SparseVector, StoredChunk, StoreQuery
from store_latency import MANIFEST, make_corpus

TENANTS = 50
PER_FILE = 10


async def build(data_dir: Path, n: int) -> tuple[EdgeStore, list[StoreQuery]]:
    corpus = make_corpus(n, TENANTS, 200, 7, "lowrank")
    store = EdgeStore(data_dir)
    await store.open(MANIFEST)
    batch: list[StoredChunk] = []
    for i in range(n):
        meta = {
            "collection_name": f"t{corpus.tenant[i - i % PER_FILE]}",  # a file lies in one tenant
            "file_id": f"f{i // PER_FILE}",
            "split_id": i % PER_FILE,
            "chunk_count": PER_FILE,
            "ingest_version": "v1",
        }
        batch.append(StoredChunk(f"{i:032x}", f"chunk {i}", meta, corpus.dense[i], corpus.sparse_rows[i]))
        if len(batch) == 1024:
            await store.upsert(batch)
            batch = []
    if batch:
        await store.upsert(batch)
    await store.optimize()
    rng = np.random.default_rng(11)
    queries = []
    for _ in range(64):
        t = int(rng.integers(0, TENANTS))
        q = corpus.centers[(t * 7) % len(corpus.centers)] + rng.normal(scale=0.05, size=corpus.dense.shape[1])
        terms = tuple(sorted({int(x) for x in rng.integers(0, 3000, 4)}))
        queries.append(
            StoreQuery(
                PointFilter(collection_names=(f"t{t}",)),
                10,
                (q / np.linalg.norm(q)).astype(np.float32),
                SparseVector(terms, (1.0,) * len(terms)),
                prefetch_limit=40,
                explain=False,
            )
        )
    return store, queries


async def searches(
    store: EdgeStore, queries: list[StoreQuery], count: int, until: asyncio.Event | None
) -> list[float]:
    """Searches one after another: ``count`` of them, or (with ``until``) until it is set."""
    took = []
    i = 0
    while (until is None and i < count) or (until is not None and not until.is_set()):
        started = time.perf_counter()
        await store.search(queries[i % len(queries)])
        took.append(time.perf_counter() - started)
        i += 1
    return took


async def main(points: int, queries_n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="ragd-bench-backup-") as tmp:
        root = Path(tmp)
        source = Settings(data_dir=root / "source")
        source.data_dir.mkdir()
        catalog = await open_catalog(source.catalog_url)
        await catalog.aclose()
        print(f"building an index of {points:,} chunks ...", flush=True)
        store, queries = await build(source.data_dir, points)
        await searches(store, queries, 50, None)  # warm
        idle = await searches(store, queries, queries_n, None)
        done = asyncio.Event()
        during_task = asyncio.create_task(searches(store, queries, 0, done))
        started = time.perf_counter()
        report = await take_backup(
            root / "backup",
            store=store,
            index_manifest=manifest_to_dict(MANIFEST),
            copy_catalog=lambda path: copy_catalog(source.catalog_url, path),
            files_dir=source.files_dir,
        )
        backup_s = time.perf_counter() - started
        done.set()
        during = await during_task
        await store.close()

        target = Settings(data_dir=root / "restored")
        started = time.perf_counter()
        restored = await restore_into(target, root / "backup")
        restore_s = time.perf_counter() - started
        assert restored.points == points, (restored.points, points)

        mb = report.bytes / 1e6
        p50_idle = statistics.median(idle) * 1000
        p50_during = statistics.median(during) * 1000
        print(f"chunks {points:,}, backup size {mb:.1f} MB")
        print(f"backup : {backup_s:6.1f} s  {mb / backup_s:6.1f} MB/s  {points / backup_s:8,.0f} chunks/s")
        print(f"restore: {restore_s:6.1f} s  {mb / restore_s:6.1f} MB/s  {points / restore_s:8,.0f} chunks/s")
        print(
            f"hybrid search p50: idle {p50_idle:.2f} ms ({len(idle)} searches), during the backup "
            f"{p50_during:.2f} ms ({len(during)} searches): ratio {p50_during / p50_idle:.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.points - args.points % PER_FILE, args.queries))
