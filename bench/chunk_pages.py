"""What a page of a file's chunks costs: the whole file read and sliced, against a ``split_id`` range.

    python bench/chunk_pages.py [--chunks 20000] [--page 50] [--rounds 30]

One file of ``--chunks`` chunks (the ingest limit is 20,000) among other files in an Edge store;
times :func:`ragd.store.file_chunks.file_chunks` for the whole file (what the chunk viewer and the
neighbours of a hit read before the range filter) and for a ``--page``-chunk range in the middle of
the file (what they read now), interleaved, and prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from ragd.store.edge_store import EdgeStore
from ragd.store.file_chunks import file_chunks
from ragd.types import SparseVector, StoredChunk
from store_latency import MANIFEST

DIM = MANIFEST.dense_dim
COLLECTION = "bench-pages"


def chunks_of(file_id: str, count: int, rng: np.random.Generator) -> list[StoredChunk]:
    out = []
    for position in range(count):
        dense = rng.normal(size=DIM).astype(np.float32)
        out.append(
            StoredChunk(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{file_id}/{position}")),
                content=f"chunk {position} of {file_id}: " + "words of a typical chunk " * 40,
                meta={
                    "collection_name": COLLECTION,
                    "file_id": file_id,
                    "name": f"{file_id}.pdf",
                    "source": f"{file_id}.pdf",
                    "split_id": position,
                },
                dense=dense / np.linalg.norm(dense),
                sparse=SparseVector((position % 1000, 1000 + position % 7), (1.0, 0.5)),
            )
        )
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--page", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory(prefix="ragd-pages-") as folder:
        store = EdgeStore(Path(folder))
        await store.open(MANIFEST)
        try:
            big = chunks_of("big", args.chunks, rng)
            for start in range(0, len(big), 1000):
                await store.upsert(big[start : start + 1000])
            for n in range(20):  # other files beside it
                await store.upsert(chunks_of(f"other-{n}", 100, rng))
            await store.optimize()
            first = args.chunks // 2
            span = (first, first + args.page - 1)
            whole: list[float] = []
            ranged: list[float] = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                everything = await file_chunks(store, COLLECTION, "big", include_disabled=True)
                page = everything[first : first + args.page]
                whole.append(time.perf_counter() - started)
                started = time.perf_counter()
                read = await file_chunks(store, COLLECTION, "big", include_disabled=True, split_ids=span)
                ranged.append(time.perf_counter() - started)
                assert [c.id for c in read] == [c.id for c in page], "the range and the slice differ"
        finally:
            await store.close()
    w, r = statistics.median(whole) * 1000, statistics.median(ranged) * 1000
    print(f"file of {args.chunks} chunks, page of {args.page}, {args.rounds} rounds")
    print(f"  whole file read and sliced: median {w:.1f} ms")
    print(f"  split_id range:             median {r:.2f} ms")
    print(f"  ratio {w / r:.0f}x")


if __name__ == "__main__":
    asyncio.run(main())
