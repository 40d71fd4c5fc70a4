"""HNSW and optimiser settings shared by both adapters, and why.

Searches are almost always filtered to a few tenants (``meta.collection_name``,
an ``is_tenant`` keyword index), sometimes to one file, sometimes not at all.

* ``m=16`` keeps the global graph, so unfiltered and many-tenant searches stay
  on HNSW.  (The reference ingestion-service uses ``m=0``: no global graph,
  so every search without a tenant filter is a full scan.)
* ``payload_m=16`` adds per-value links for indexed keyword keys, so a search
  filtered to one tenant walks that tenant's sub-graph instead of a global
  graph where most neighbours are filtered out.
* ``full_scan_threshold_kb=10_000`` (~6.5k 384-d vectors): a filter matching
  fewer points than that is answered exactly from the payload index, which is
  faster than HNSW at that size and has perfect recall.
* ``indexing_threshold_kb=10_000``: segments smaller than that stay plain
  (exact); bigger ones get HNSW when the optimiser runs.  Edge builds indexes
  only in ``optimize()``, which the ingest use-case calls after a batch.

Measured with ``bench/store_latency.py`` (see docs/payload.md for numbers).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IndexTuning:
    m: int = 16
    payload_m: int = 16
    ef_construct: int = 100
    full_scan_threshold_kb: int = 10_000
    indexing_threshold_kb: int = 10_000
    max_indexing_threads: int = 0  # 0: the engine picks (all cores)
