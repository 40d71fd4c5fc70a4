"""Synthetic but realistic-looking store data: clustered unit vectors, BM25-like sparse vectors."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragd.types import Hit, IndexManifest, SparseVector, StoredChunk

DIM = 384
ID_NAMESPACE = uuid.UUID("6f1c2a4e-8d0b-4f53-9a51-3c1d2e7b9f10")
VOCAB = 2_000


def manifest(**changes: object) -> IndexManifest:
    base = IndexManifest(
        dense_model="packaged:all-MiniLM-L6-v2",
        dense_dim=DIM,
        query_prefix="",
        document_prefix="",
        sparse_model="bm25:auto",
        chunker_version="token-v1",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def chunk_id(file_id: str, position: int) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, f"{file_id}:{position}"))


def unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def random_sparse(rng: np.random.Generator, terms: int = 12) -> SparseVector:
    indices = np.sort(rng.choice(VOCAB, size=terms, replace=False))
    values = rng.uniform(0.2, 2.5, size=terms)
    return SparseVector(tuple(int(i) for i in indices), tuple(float(v) for v in values))


@dataclass(frozen=True)
class Corpus:
    chunks: list[StoredChunk]
    centers: np.ndarray

    def by_id(self) -> dict[str, StoredChunk]:
        return {c.id: c for c in self.chunks}

    def ids_where(self, **meta: str) -> set[str]:
        return {c.id for c in self.chunks if all(c.meta.get(k) == v for k, v in meta.items())}


def corpus(
    *,
    seed: int = 7,
    collections: Sequence[str] = ("kb-alpha", "kb-beta", "file-gamma"),
    files_per_collection: int = 3,
    chunks_per_file: int = 8,
    clusters: int = 6,
) -> Corpus:
    """Chunks in clusters of nearby dense vectors, spread over collections and files."""
    rng = np.random.default_rng(seed)
    centers = np.stack([unit(rng.normal(size=DIM)) for _ in range(clusters)])
    chunks = []
    for c_index, collection in enumerate(collections):
        for f in range(files_per_collection):
            file_id = f"{collection}-file-{f}"
            for position in range(chunks_per_file):
                center = centers[(c_index + f + position) % clusters]
                dense = unit(center + 0.35 * rng.normal(size=DIM) / np.sqrt(DIM) * 4)
                meta = {
                    "collection_name": collection,
                    "collection_type": "file" if collection.startswith("file-") else "knowledge",
                    "file_id": file_id,
                    "name": f"{file_id}.md",
                    "source": f"{file_id}.md",
                    "split_id": position,
                    "headers": ["Intro", f"Part {position // 3}"],
                    "headers_breadcrumb": f"Intro > Part {position // 3}",
                    "page": None,
                    "extractor": "kreuzberg",
                }
                chunks.append(
                    StoredChunk(
                        id=chunk_id(file_id, position),
                        content=f"chunk {position} of {file_id}: text about topic {position % clusters}",
                        meta=meta,
                        dense=dense,
                        sparse=random_sparse(rng),
                    )
                )
    return Corpus(chunks=chunks, centers=centers)


def query_near(rng: np.random.Generator, center: np.ndarray) -> np.ndarray:
    return unit(center + 0.5 * rng.normal(size=DIM) / np.sqrt(DIM) * 4)


def tie_groups(hits: Sequence[Hit], rel: float = 1e-6) -> list[tuple[float, frozenset[str]]]:
    """Hits grouped by (nearly) equal score in rank order: engines may order ties differently."""
    groups: list[tuple[float, set[str]]] = []
    for hit in hits:
        if groups and abs(groups[-1][0] - hit.score) <= rel * max(1.0, abs(hit.score)):
            groups[-1][1].add(hit.id)
        else:
            groups.append((hit.score, {hit.id}))
    return [(score, frozenset(ids)) for score, ids in groups]
