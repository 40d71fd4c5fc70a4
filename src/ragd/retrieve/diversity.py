"""Diversity: maximal marginal relevance, a per-file cap and near-duplicate removal.

Pure functions over hits that carry their stored dense vector (``Hit.vector``; a hit without one,
or with a vector of another dense model than the first hit's, is similar to nothing).  Order in,
order out: the input is ranked best first.

* :func:`diversify` picks ``k`` hits greedily.  With ``diversity`` d in [0, 1] (MMR's
  λ = 1 - d) the next pick maximises ``(1 - d) · score - d · max cos(hit, picked)``, where
  ``score`` is the hit's ranking score on ragd's [0, 1] scale; d = 0 keeps the ranking.  With
  ``max_per_file`` n, a file (collection, file id) contributes at most n hits.
* :func:`drop_near_duplicates` keeps the best of hits whose texts embed alike (cosine at or above
  the threshold): the same paragraph in two files, a page and its copy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragd.types import Hit


def file_key(hit: Hit) -> tuple[str, str]:
    """The file a hit belongs to: (collection, file id); a point without a file id is its own file.
    Two keys of the stored ``meta`` (:class:`ragd.types.ChunkMeta`), read directly: this runs for
    every candidate of every capped search, where a full parse cost 0.14 ms a query."""
    meta = hit.meta
    collection, file_id = meta.get("collection_name"), meta.get("file_id")
    return (
        collection if isinstance(collection, str) else "",
        file_id if isinstance(file_id, str) and file_id else hit.id,
    )


def _unit_rows(hits: Sequence[Hit]) -> np.ndarray:
    """One row per hit: its vector scaled to length 1 (zeros when it has none, or when it is of
    another model: cosines between two models' vectors mean nothing)."""
    first = next((h for h in hits if h.vector is not None), None)
    dim = 0 if first is None or first.vector is None else len(first.vector)
    space = None if first is None else first.space
    rows = np.zeros((len(hits), dim), dtype=np.float32)
    for i, hit in enumerate(hits):
        if hit.vector is not None and len(hit.vector) == dim and hit.space == space:
            vector = np.asarray(hit.vector, dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                rows[i] = vector / norm
    return rows


def diversify(
    hits: Sequence[Hit], k: int, *, diversity: float = 0.0, max_per_file: int | None = None
) -> list[Hit]:
    """Up to ``k`` of ``hits`` chosen by MMR and the per-file cap (module docstring)."""
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be between 0 and 1, got {diversity}")
    if max_per_file is not None and max_per_file < 1:
        raise ValueError(f"max_per_file must be at least 1, got {max_per_file}")
    per_file: dict[tuple[str, str], int] = {}

    def allowed(hit: Hit) -> bool:
        return max_per_file is None or per_file.get(file_key(hit), 0) < max_per_file

    def take(hit: Hit) -> None:
        per_file[file_key(hit)] = per_file.get(file_key(hit), 0) + 1

    if diversity <= 0.0 and max_per_file is None:
        return list(hits[:k])
    if diversity <= 0.0:
        out: list[Hit] = []
        for hit in hits:
            if len(out) == k:
                break
            if allowed(hit):
                take(hit)
                out.append(hit)
        return out
    rows = _unit_rows(hits)
    scores = np.array([h.score for h in hits], dtype=np.float64)
    closest = np.full(len(hits), -np.inf if rows.shape[1] else 0.0)  # max cos to a picked hit
    left = list(range(len(hits)))
    picked: list[int] = []
    while left and len(picked) < k:
        candidates = [i for i in left if allowed(hits[i])]
        if not candidates:
            break
        similarity = np.where(np.isfinite(closest[candidates]), closest[candidates], 0.0)
        value = (1.0 - diversity) * scores[candidates] - diversity * similarity
        best = candidates[int(np.argmax(value))]  # ties: the better-ranked hit (argmax is first)
        picked.append(best)
        left.remove(best)
        take(hits[best])
        if rows.shape[1]:
            closest = np.maximum(closest, rows @ rows[best])
    return [hits[i] for i in picked]


def drop_near_duplicates(hits: Sequence[Hit], threshold: float) -> list[Hit]:
    """``hits`` without those whose cosine to a better-ranked kept hit is ``threshold`` or more."""
    if threshold >= 1.0 + 1e-9 or len(hits) < 2:
        return list(hits)
    rows = _unit_rows(hits)
    if not rows.shape[1]:
        return list(hits)
    kept: list[int] = []
    for i, hit in enumerate(hits):
        if hit.vector is None or not kept or float(np.max(rows[kept] @ rows[i])) < threshold:
            kept.append(i)
    return [hits[i] for i in kept]
