"""HNSW, optimiser and search settings shared by both adapters, and why.

Searches are almost always filtered to one or a few tenants
(``meta.collection_name``, an ``is_tenant`` keyword index), sometimes to one
file, rarely not at all.  Measured with ``bench/store_latency.py`` (100k
384-d points, Qdrant Edge 0.9.0, 2 busy cores; docs/payload.md has the table):

* ``m=16`` keeps the global graph.  ``m=0`` (the reference ingestion-service's
  choice) builds only per-tenant graphs: a search over two tenants or none then
  had recall@10 0.52 / 0.32 — wrong answers, not just slow ones.
* ``payload_m=16`` adds per-tenant links; it made no measurable difference to
  filtered recall on synthetic data, and costs little to build.
* ``full_scan_threshold_kb=40_000``: a filter whose matches hold less than
  ~40 MB of vectors (~26k 384-d, ~10k 1024-d) is answered exactly from the
  payload index.  Filtered HNSW on a 20k-point tenant reached only recall@10
  0.67 (0.80 with ACORN) while the exact scan took ~3.5 ms with recall 1.0;
  Qdrant's default (10 MB) sends such tenants to HNSW.
* ``acorn=True``: ACORN for filtered dense searches that do use HNSW (e.g. a
  union of large tenants); the engine applies it only to selective filters.
* ``indexing_threshold_kb=10_000``: segments smaller than that stay plain
  (exact).  Edge builds HNSW only in ``optimize()`` (~2 minutes for 100k points
  on 2 cores), which the ingest use-case calls after a batch.
* ``payload_on_disk=False``: payloads (chunk text + meta) live in RAM.  At
  100k chunks, fetching the 40 payloads of a search from Edge's on-disk
  (mmap) payload storage took 2.2 ms of a 2.7 ms filtered search; in RAM the
  whole search took 0.6 ms (``bench/search_latency.py``).  RAM cost is about
  the size of the chunk text (~2 KB a chunk); corpora far beyond a few
  million chunks set ``RAGD_STORE__PAYLOAD_ON_DISK=true``.
* ``dense_int8=True``: an int8 copy of every dense vector (scalar quantization, a quarter of
  the float32 bytes, always in RAM) is what a dense search scans first; the best
  ``oversampling`` x limit candidates are then rescored with the float32 originals, so the
  scores a search returns are exact cosines.  A tenant's exact scan reads 4x fewer bytes:
  at 100k chunks the fused hybrid engine call measured 0.96/1.00 -> 0.80/0.82 ms (dense
  prefetch 0.52 -> 0.36-0.52), recall@10 against exact numpy 1.0 over 300 queries; without
  rescoring 0.975.  FP16 storage instead: 0.85/0.89 ms.  RAM: 384 bytes
  a chunk for MiniLM.  An index built without it gains it at its next optimize; turned off,
  searches send ``ignore=true`` at once (without it, an index that still held its copy was
  scanned in int8 and returned int8 scores until an optimize dropped the copy).
* Rescoring happens in each segment, so an embedded index of several sealed segments (a bulk
  load's) asks its dense lists in two stages: every segment's int8 candidates, then those pooled
  and rescored once (``edge_store._DenseList``).  A bulk-built 1M index of five segments, cold page
  cache: resident at the end of 2,700 searches 3.21 -> 2.51 GB, hybrid p99 23 -> 12 ms.
* ``dense_on_disk=False``: the float32 dense vectors live in RAM.  With ``True`` they are
  memory-mapped from disk: searches scan the int8 copy (in RAM) and read only the candidates they
  rescore, so a large index's resident memory drops by most of the float32 bytes (1.5 GB at 1M
  MiniLM chunks; figures in docs/benchmarks.md).
* ``bulk_segment_chunks=200_000``: Edge builds indexes only when asked, and every page of its
  memory-mapped storages that a build writes or reads stays in the process until the segment is
  unmapped.  A bulk load that asked only at its end built one segment of everything (the 1M-chunk
  index of 2026-11-27 peaked at 15.7 GB of RSS, ~4 GB of it the benchmark's own corpus).  A bulk
  load now optimizes every 200k chunks and reopens the shard after each optimize: at 1M chunks in
  64 sparse groups that peaked at 3.5 GB in 235 s (``bench/sparse_group_build.py``).  Two 200k
  segments outgrow the engine's merge limit (``max_segment_size``: 256 MB of vectors per indexing
  thread, ~170k MiniLM chunks a thread; 2 threads here), so they are never merged again.  Every
  100k, three segments fit one merge, and the merges cost more: 4.5 GB peak in 331 s.
* ``search_threads=0``: Qdrant Edge's search pool (per-segment reads in
  parallel) gets one thread per CPU.  Left to itself the engine started 8 on
  this 2-core machine; capped at 2 (or 1), a hybrid search with its query
  embedding measured 6.0 -> 5.5 ms (mean of three p50s, each config in its own
  process): fewer spinning threads fighting the model's for the cores.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IndexTuning:
    m: int = 16
    payload_m: int = 16
    ef_construct: int = 100
    full_scan_threshold_kb: int = 40_000
    indexing_threshold_kb: int = 10_000
    max_indexing_threads: int = 0  # 0: the engine picks (all cores)
    payload_on_disk: bool = False
    dense_on_disk: bool = False  # float32 dense vectors memory-mapped (the int8 copy stays in RAM)
    bulk_segment_chunks: int = 200_000  # a bulk load optimizes every this many chunks (0: at its end)
    # search time
    acorn: bool = True  # ACORN for filtered dense searches (the engine uses it for selective filters)
    hnsw_ef: int | None = None  # None: the engine's default
    search_threads: int = 0  # Edge's search pool; 0: one thread per CPU
    dense_int8: bool = True  # int8 copy of dense vectors in RAM, searched first, then rescored
    oversampling: float = 2.0  # candidates rescored with float32 vectors, x the limit
