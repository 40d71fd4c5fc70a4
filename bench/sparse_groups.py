"""Store-level hybrid search over 1, several or all collections, on indexes with and without sparse groups.

    python bench/sparse_groups.py DIR [DIR ...] [--queries 200] [--rounds 2] [--widths 1,5,0]

Each DIR is an index that ``bench/search_latency.py --index DIR`` built (and its
``near-queries.npy``); each is opened with the manifest it was built with, so one built with
``--sparse-groups 64`` searches its group vectors (``RAGD_STORE__SPARSE_GROUPS``).  A search names
``width`` random collections of the 50 (0: no collection filter, so a grouped index queries every
group); its dense vector lies near the first one's chunks and its BM25 vector is a real query's.
What is timed is ``EdgeStore.search`` (limit 10, each list 100 deep, the served default), with no
query embedding; the indexes are interleaved search by search, and the first round warms up
(page cache) and is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import numpy as np

from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.settings import SparseSettings
from ragd.store.edge_store import EdgeStore
from ragd.store.manifest_io import MANIFEST_FILE, read_manifest_file
from ragd.store.tuning import IndexTuning
from ragd.types import PointFilter, StoreQuery
from search_latency import texts, vocabulary

TENANTS = 50


async def open_index(where: Path) -> tuple[EdgeStore, int]:
    """The index in ``where``, opened with its own manifest, and its number of sparse groups."""
    manifest = read_manifest_file(where / "index" / "qdrant" / "bench" / MANIFEST_FILE)
    if manifest is None:
        raise SystemExit(f"{where} holds no index of bench/search_latency.py --index")
    store = EdgeStore(where / "index", "bench", tuning=IndexTuning(dense_on_disk=True))
    await store.open(manifest)
    return store, manifest.sparse_groups


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dirs", type=Path, nargs="+")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="the first one warms up")
    parser.add_argument("--widths", default="1,5,0", help="collections a search names (0: no filter)")
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    sparse = Bm25SparseEmbedder(SparseSettings().language)
    opened = [await open_index(d) for d in args.dirs]
    stores = [store for store, _ in opened]
    near = [np.load(d / "near-queries.npy") for d in args.dirs]
    queries = [sparse.embed_query(" ".join(q.split()[:8])) for q in texts(args.queries, vocabulary(), 8)]
    rng = np.random.default_rng(1)
    samples: dict[tuple[int, int], list[float]] = {(i, w): [] for i in range(len(stores)) for w in widths}
    for round_no in range(args.rounds):
        for n, vector in enumerate(queries):
            for width in widths:
                tenants = rng.choice(TENANTS, max(width, 1), replace=False)
                names = tuple(f"t{t}" for t in tenants) if width else None
                for i, store in enumerate(stores):
                    query = StoreQuery(
                        PointFilter(collection_names=names),
                        10,
                        dense=near[i][tenants[0]][n % near[i].shape[1]],
                        sparse=vector,
                        prefetch_limit=100,
                    )
                    started = time.perf_counter()
                    await store.search(query)
                    if round_no:
                        samples[i, width].append((time.perf_counter() - started) * 1000)
    for (i, width), values in samples.items():
        groups = opened[i][1]
        what = f"{width} collection{'s' if width > 1 else ''}" if width else "no filter"
        print(f"{args.dirs[i]} (sparse groups {groups}), {what}: p50 {statistics.median(values):.2f} ms")
    for store in stores:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
