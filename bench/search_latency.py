"""In-process search latency at 100k chunks, query embedding included: what ``ragd search`` costs.

    python bench/search_latency.py [--points 100000] [--queries 300] [--rounds 5] [--index DIR]
                                   [--dense-on-disk] [--sparse-groups G] [--bulk-segment K]
                                   [--page-cache as-is|cold|warm] [--served-writes]

The index holds ``--points`` chunks in 50 tenants: dense vectors are the synthetic
chunk-like vectors of ``store_latency.py`` (embedding 100k real texts would take an
hour here); the text of each chunk is 40 words drawn Zipf-style from ragd's own docs,
so its sparse vector comes from the real BM25 and queries hit real posting lists.
Each query is real text: the real all-MiniLM-L6-v2 embeds it (the full cost is paid),
BM25 weighs it, the store runs the search, the retriever normalises and de-duplicates
— ``Retriever.search`` end to end.  One substitution keeps the geometry honest: the
store is searched with a vector near the tenant's own synthetic chunks (as a real
query lands near the chunks that answer it), not with the real embedding, which lies
nowhere near synthetic data and would send HNSW on a long walk (``--raw-vectors`` to
see that).  Reported per mode: p50 / p99 over ``--rounds`` x ``--queries`` searches, the modes
interleaved query by query, with each round's p50 beside it; and the query embedding alone.

``--index DIR`` keeps the index in DIR (built there when DIR has none, reused when it has): a
1M-chunk index takes a while to build, and the timed run then happens in a fresh process, so the
resident memory it reports is a serving process's (the model and the open index), not the
builder's.  The builder makes the synthetic corpus a batch at a time (``StreamCorpus``), so its
peak is the index build's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from ragd.embed.bm25 import Bm25SparseEmbedder
from ragd.embed.local_onnx import OnnxDenseEmbedder
from ragd.retrieve.search import Retriever, SearchRequest
from ragd.settings import EmbeddingSettings, RetrievalSettings, SparseSettings
from ragd.store.edge_store import EdgeStore
from ragd.store.payload import grouping_for
from ragd.store.tuning import IndexTuning
from ragd.types import IndexManifest, PointFilter, SearchMode, StoredChunk, StoreQuery
from store_latency import DIM, MANIFEST

REPO = Path(__file__).resolve().parents[1]
WORD = re.compile(r"[a-z]{3,}")


def vocabulary() -> list[str]:
    text = " ".join(
        p.read_text().lower() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    )
    counts: dict[str, int] = {}
    for word in WORD.findall(text):
        counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: -counts[w])


def texts(n: int, vocab: list[str], seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, len(vocab) + 1)
    p = (1 / ranks) / (1 / ranks).sum()
    return [" ".join(vocab[i] for i in rng.choice(len(vocab), 40, p=p)) for _ in range(n)]


def rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def set_page_cache(where: Path, state: str) -> None:
    """Put the index's files in the page cache state to time from: "cold" drops their pages (as after
    a reboot), "warm" reads every file through (as right after a build or a backup).  A page fault
    maps what is cached around the page, so the resident memory a search leaves depends on it."""
    if state == "as-is":
        return
    os.sync()  # dirty pages are not dropped
    for path in sorted(p for p in where.rglob("*") if p.is_file()):
        if state == "cold":
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        else:
            with path.open("rb") as f:
                while f.read(1 << 24):
                    pass


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


class StreamCorpus:
    """``n`` synthetic chunks in 50 tenants, made a batch at a time: the ``lowrank`` vectors of
    ``store_latency.make_corpus`` (topic centres, a 48-d spread) and 40-word texts of ``vocab``.

    A batch depends only on the seed and its start, so a builder holds one batch and not the corpus
    (1M chunks of vectors, sparse rows and texts took ~4 GB of the builder's memory), and what it
    measures is the index's."""

    def __init__(self, n: int, seed: int, vocab: list[str], tenants: int = 50, clusters: int = 200) -> None:
        self.n, self.seed, self.tenants, self.vocab = n, seed, tenants, vocab
        rng = np.random.default_rng(seed)
        centers = rng.normal(size=(clusters, DIM)).astype(np.float32)
        self.centers = centers / np.linalg.norm(centers, axis=1, keepdims=True)
        self.basis = np.linalg.qr(rng.normal(size=(DIM, 48)))[0].astype(np.float32)
        ranks = np.arange(1, len(vocab) + 1)
        self.word_p = (1 / ranks) / (1 / ranks).sum()

    def batch(self, start: int, size: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Chunks ``start`` to ``start + size``: unit dense rows, tenants, texts."""
        size = min(size, self.n - start)
        rng = np.random.default_rng([self.seed, start])
        tenant = rng.integers(0, self.tenants, size=size)
        topic = (tenant * 7 + rng.integers(0, 12, size=size)) % len(self.centers)
        spread = rng.normal(scale=0.12, size=(size, 48)).astype(np.float32) @ self.basis.T
        spread += rng.normal(scale=0.01, size=(size, DIM)).astype(np.float32)
        dense = self.centers[topic] + spread
        dense /= np.linalg.norm(dense, axis=1, keepdims=True)
        draws = rng.choice(len(self.vocab), (size, 40), p=self.word_p)
        return dense.astype(np.float32), tenant, [" ".join(self.vocab[i] for i in row) for row in draws]


def chunk_batch(corpus: StreamCorpus, sparse: Bm25SparseEmbedder, start: int, size: int) -> list[StoredChunk]:
    """Chunks ``start`` to ``start + size`` of ``corpus``: dense vectors, tenants, the BM25 of the texts."""
    dense, tenant, words = corpus.batch(start, size)
    vectors = sparse.embed_documents(words)
    return [
        StoredChunk(
            id=str(uuid.UUID(int=start + i + 1)),
            content=text,
            meta={"collection_name": f"t{tenant[i]}", "file_id": f"f{start + i}"},
            dense=dense[i],
            sparse=vectors[i],
        )
        for i, text in enumerate(words)
    ]


async def build(store: EdgeStore, corpus: StreamCorpus, sparse: Bm25SparseEmbedder, *, served: bool) -> None:
    started = time.perf_counter()
    # served: as a served dataset's jobs write, plain upserts, nothing optimised; else as ``ragd
    # ingest`` writes, indexes built every bulk_segment_chunks and at the end
    async with contextlib.nullcontext() if served else store.bulk():
        for start in range(0, corpus.n, 2048):
            await store.upsert(chunk_batch(corpus, sparse, start, 2048))
    if not served:
        await store.optimize()
    print(
        f"indexed {corpus.n} chunks in {time.perf_counter() - started:.0f} s;"
        f" resident memory {rss_mb():.0f} MB, peak {peak_rss_mb():.0f} MB"
    )


def near_vectors(corpus: StreamCorpus, seed: int, per_tenant: int = 64) -> np.ndarray:
    """Query vectors near each tenant's chunks (tenants x per_tenant x dim), drawn once: the timed
    path pays the real embedding and nothing else (drawing one took ~0.1 ms of numpy).  Each is a
    chunk of a few batches spread over the corpus, moved a little."""
    rng = np.random.default_rng(seed)
    picked: list[list[np.ndarray]] = [[] for _ in range(corpus.tenants)]
    starts = rng.permutation(range(0, corpus.n, 2048))
    for start in starts:
        dense, tenant, _ = corpus.batch(int(start), 2048)
        for t in range(corpus.tenants):
            room = per_tenant - len(picked[t])
            rows = np.flatnonzero(tenant == t)[:room]
            picked[t].extend(dense[rows])
        if all(len(p) >= per_tenant for p in picked):
            break
    out = []
    for rows in picked:
        chosen = np.stack(rows)[rng.choice(len(rows), per_tenant)]
        q = chosen + rng.normal(scale=0.05, size=chosen.shape).astype(np.float32)
        out.append((q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32))
    return np.stack(out)


class NearTenantQueries:
    """The real embedder's cost and prefixes, answering with a vector near the current tenant's data."""

    def __init__(self, inner: OnnxDenseEmbedder, near: np.ndarray) -> None:
        self._inner = inner
        self._near_vectors = near
        self._draws = 0
        self.spec, self.tenant = inner.spec, 0

    @property
    def tokenizer(self) -> object:
        return self._inner.tokenizer

    async def embed_query(self, text: str) -> np.ndarray:
        await self._inner.embed_query(text)  # pay the real cost
        return self._near()

    def claim_alone(self) -> bool:
        return self._inner.claim_alone()

    def release_alone(self) -> None:
        self._inner.release_alone()

    def embed_query_now(self, text: str, *, claimed: bool = False) -> np.ndarray:
        """The in-process path ``Retriever`` takes with the local model (one worker hand-off)."""
        self._inner.embed_query_now(text, claimed=claimed)  # pay the real cost
        return self._near()

    def _near(self) -> np.ndarray:
        self._draws += 1
        pool = self._near_vectors[self.tenant]
        return pool[self._draws % len(pool)]

    async def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        return await self._inner.embed_documents(texts)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300, help="per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--raw-vectors", action="store_true", help="search with the real query embeddings")
    parser.add_argument("--index", type=Path, help="keep the index here (built if absent, else reused)")
    parser.add_argument("--dense-on-disk", action="store_true", help="RAGD_STORE__DENSE_ON_DISK")
    parser.add_argument("--payload-on-disk", action="store_true", help="RAGD_STORE__PAYLOAD_ON_DISK")
    parser.add_argument(
        "--sparse-groups", type=int, default=0, help="RAGD_STORE__SPARSE_GROUPS (fixed when DIR is built)"
    )
    parser.add_argument(
        "--bulk-segment",
        type=int,
        default=IndexTuning().bulk_segment_chunks,
        help="RAGD_STORE__BULK_SEGMENT_CHUNKS for the build (0: one optimise, at the end)",
    )
    parser.add_argument(
        "--served-writes",
        action="store_true",
        help="build as a served dataset's jobs write (upserts outside bulk(), no optimise)",
    )
    parser.add_argument(
        "--page-cache",
        choices=("as-is", "cold", "warm"),
        default="as-is",
        help="with --index DIR reused: drop DIR's pages from the page cache (cold) or read it all"
        " (warm) before timing",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.index or Path(tmp)
        near_file = where / "near-queries.npy"
        reuse = near_file.is_file()
        if reuse:
            set_page_cache(where, args.page_cache)
        dense = OnnxDenseEmbedder.from_settings(EmbeddingSettings(query_cache=0), Path(tmp) / "models")
        sparse = Bm25SparseEmbedder(SparseSettings().language)  # the default: per-query language
        tuning = IndexTuning(
            dense_on_disk=args.dense_on_disk,
            payload_on_disk=args.payload_on_disk,
            bulk_segment_chunks=args.bulk_segment,
        )
        store = EdgeStore(where / "index", "bench", tuning=tuning)
        await store.open(
            IndexManifest(
                dense.spec.model,
                384,
                "",
                "",
                sparse.name,
                MANIFEST.chunker_version,
                sparse_groups=args.sparse_groups,
                sparse_grouping=grouping_for(args.sparse_groups),  # as ragd makes a new index
            )
        )
        if reuse:
            print(f"reusing the index in {where} ({await store.count(PointFilter())} chunks)")
            near_queries = np.load(near_file)
        else:
            corpus = StreamCorpus(args.points, args.seed, vocabulary())
            await build(store, corpus, sparse, served=args.served_writes)
            near_queries = near_vectors(corpus, args.seed)
            if args.index is not None:  # time it in a fresh process: a server's memory, not the builder's
                np.save(near_file, near_queries)
                await store.close()
                await dense.aclose()
                print(f"built; timing in a fresh process on {where}", flush=True)
                sys.exit(subprocess.run([sys.executable, *sys.argv], check=False).returncode)
        near = NearTenantQueries(dense, near_queries)
        retriever = Retriever(
            store, dense if args.raw_vectors else near, sparse, RetrievalSettings(), ("en",)
        )
        queries = [" ".join(q.split()[:8]) for q in texts(args.queries, vocabulary(), args.seed + 7)]
        rng = np.random.default_rng(args.seed)
        for q in queries[:20]:  # warm-up
            await retriever.search(SearchRequest(q, ("t0",), k=10))
        embed = []
        for q in queries:
            t = time.perf_counter()
            await dense.embed_query(q)
            embed.append((time.perf_counter() - t) * 1000)
        print(
            f"query embedding alone: p50 {percentiles(embed)[0]:.2f} ms  p99 {percentiles(embed)[1]:.2f} ms"
        )
        store_only = []
        for q in queries:
            near.tenant = int(rng.integers(0, 50))
            vec = await near.embed_query(q)
            flt = PointFilter(collection_names=(f"t{near.tenant}",))
            t = time.perf_counter()
            await store.search(StoreQuery(flt, 40, dense=vec, prefetch_limit=40))
            store_only.append((time.perf_counter() - t) * 1000)
        print(f"store dense search alone (limit 40): p50 {percentiles(store_only)[0]:.2f} ms")
        print(f"resident memory after warm-up {rss_mb():.0f} MB")
        # modes interleaved query by query, in a shuffled order: drift on a shared machine
        # lands on every mode alike; several rounds, pooled: a burst of load from a neighbour
        # moves one round's median, not the pooled one (each round's is printed too)
        samples: dict[SearchMode, list[float]] = {mode: [] for mode in SearchMode}
        for round_no in range(args.rounds):
            this_round: dict[SearchMode, list[float]] = {mode: [] for mode in SearchMode}
            for q in queries:
                near.tenant = int(rng.integers(0, 50))
                for mode in rng.permutation(list(SearchMode)):
                    t = time.perf_counter()
                    await retriever.search(
                        SearchRequest(q, (f"t{near.tenant}",), k=10, mode=SearchMode(mode))
                    )
                    this_round[SearchMode(mode)].append((time.perf_counter() - t) * 1000)
            medians = "  ".join(f"{m.value} {percentiles(v)[0]:.2f}" for m, v in this_round.items())
            print(f"round {round_no + 1}/{args.rounds}: p50 ms  {medians}")
            for mode, values in this_round.items():
                samples[mode].extend(values)
        print(f"pooled over {args.rounds} rounds x {len(queries)} queries:")
        for mode, values in samples.items():
            p50, p99 = percentiles(values)
            print(f"{mode.value:>6}: p50 {p50:.2f} ms  p99 {p99:.2f} ms  (query embedding included)")
        print(f"resident memory now {rss_mb():.0f} MB, peak {peak_rss_mb():.0f} MB (model + index)")
        await dense.aclose()
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
