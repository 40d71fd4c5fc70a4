"""Restore a verified backup into an empty data dir, settling what an ingest left half-done.

The backup's index was read after its catalog copy, while ingests went on (:mod:`ragd.kb.backup`),
so a file may show two versions, a version with chunks missing, or points the catalog does not
know.  Before any point is written, :func:`plan_points` decides, per file:

- a file of a dataset keeps one *complete* version (every split 0..n-1 of one ``ingest_version``)
  whose chunk count the catalog records for it (preferring the one whose ``file_hash`` is the
  catalog's ``content_hash``); lacking one, its points are all left out, the catalog's chunk count
  becomes 0, and an ``indexed`` file becomes ``failed`` with code ``NOT_IN_BACKUP`` (re-index it);
- points of a dataset's collection whose file the catalog does not hold are left out;
- points of a raw collection (no dataset: the ingestion-service API) keep one complete version
  per file.

So every file is completely in or completely out, and the catalog's chunk count of each file is the
number of its points in the restored index.  A Qdrant server's snapshot (``index.snapshot``) is
recovered whole by the server first; the same plan then runs over the points it holds, and the
points left out are deleted (:func:`recover_snapshot`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragd.catalog.base import Catalog
from ragd.kb import backup_format as fmt
from ragd.kb_types import FileEntry, FileStatus
from ragd.store.base import VectorStore
from ragd.store.snapshots import IndexSnapshots
from ragd.types import ChunkMeta, PointFilter

log = logging.getLogger(__name__)

UPSERT_BATCH = 256
NOT_IN_BACKUP = "NOT_IN_BACKUP"


@dataclass(slots=True)
class _Version:
    file_hash: str | None
    chunk_count: int | None
    ids: list[str] = field(default_factory=list)
    splits: set[int] = field(default_factory=set)

    @property
    def complete(self) -> bool:
        n = self.chunk_count
        return n is not None and n == len(self.ids) and self.splits == set(range(n))


@dataclass(frozen=True, slots=True)
class PointPlan:
    keep: frozenset[str]
    #: catalog files whose points are not (all) in the backup, as they are to be recorded
    fixes: tuple[FileEntry, ...]
    dropped: int


def read_points(index: Path) -> Iterator[tuple[str, ChunkMeta]]:
    """Each point's id and meta (vectors are decoded only when written)."""
    with index.open(encoding="utf-8") as fh:
        for line in fh:
            chunk = fmt.decode_point(line)
            yield chunk.id, ChunkMeta.parse(chunk.meta)


def plan_points(
    points: Iterator[tuple[str, ChunkMeta]],
    files: Mapping[str, FileEntry],
    dataset_collections: frozenset[str],
) -> PointPlan:
    """Which points to restore and which catalog files to correct (module docstring)."""
    versions: dict[tuple[str, str], dict[str | None, _Version]] = defaultdict(dict)
    total = 0
    for point_id, meta in points:
        total += 1
        version = versions[(meta.collection_name, meta.file_id)].setdefault(
            meta.ingest_version, _Version(meta.file_hash, meta.chunk_count)
        )
        version.ids.append(point_id)
        if meta.split_id is not None:
            version.splits.add(meta.split_id)
    keep: set[str] = set()
    kept_files: set[str] = set()
    for (collection, file_id), found in versions.items():
        complete = [v for v in found.values() if v.complete]
        if collection not in dataset_collections:
            if complete:
                keep.update(complete[-1].ids)
            continue
        entry = files.get(file_id)
        if entry is None or entry.chunks <= 0:
            continue
        chosen = _choose(complete, entry)
        if chosen is not None:
            keep.update(chosen.ids)
            kept_files.add(file_id)
    fixes = tuple(_out(e) for e in files.values() if e.chunks > 0 and e.id not in kept_files)
    return PointPlan(keep=frozenset(keep), fixes=fixes, dropped=total - len(keep))


def _choose(complete: Sequence[_Version], entry: FileEntry) -> _Version | None:
    sized = [v for v in complete if v.chunk_count == entry.chunks]
    same = [v for v in sized if entry.content_hash is not None and v.file_hash == entry.content_hash]
    found = same or sized
    return found[0] if found else None


def _out(entry: FileEntry) -> FileEntry:
    if entry.status is not FileStatus.INDEXED:
        return replace(entry, chunks=0)  # queued or indexing: its job runs again; failed stays
    return replace(
        entry,
        chunks=0,
        status=FileStatus.FAILED,
        error_code=NOT_IN_BACKUP,
        error_message="its points were not complete in the backup it was restored from: re-index it",
    )


async def catalog_files(catalog: Catalog) -> tuple[dict[str, FileEntry], frozenset[str]]:
    """Every file of every dataset, by id, and the datasets' collection names."""
    files: dict[str, FileEntry] = {}
    datasets = await catalog.list_datasets(None)
    for dataset in datasets:
        offset = 0
        while page := await catalog.list_files(dataset.id, limit=1000, offset=offset):
            files.update((e.id, e) for e in page)
            offset += len(page)
    return files, frozenset(d.collection_name for d in datasets)


async def write_points(store: VectorStore, index: Path, keep: frozenset[str]) -> int:
    """Upsert the kept points of the backup's index, in batches; returns how many."""
    batch = []
    written = 0
    with index.open(encoding="utf-8") as fh:
        for line in fh:
            chunk = fmt.decode_point(line)
            if chunk.id not in keep:
                continue
            batch.append(chunk)
            if len(batch) >= UPSERT_BATCH:
                await store.upsert(batch)
                written += len(batch)
                batch = []
    if batch:
        await store.upsert(batch)
        written += len(batch)
    return written


async def recover_snapshot(
    store: VectorStore,
    snapshots: IndexSnapshots,
    snapshot: Path,
    sha256: str,
    files: Mapping[str, FileEntry],
    dataset_collections: frozenset[str],
) -> tuple[int, PointPlan]:
    """Recover the server's snapshot into the (empty) collection, then delete the points the plan
    leaves out; returns how many points are kept, and the plan."""
    await snapshots.recover(snapshot, sha256)
    points = await store_points(store)
    plan = plan_points(iter(points), files, dataset_collections)
    doomed = [point_id for point_id, _ in points if point_id not in plan.keep]
    for start in range(0, len(doomed), UPSERT_BATCH):
        await store.delete(PointFilter(ids=tuple(doomed[start : start + UPSERT_BATCH])))
    return len(points) - len(doomed), plan


async def store_points(store: VectorStore) -> list[tuple[str, ChunkMeta]]:
    """Each point's id and meta as the store holds them, page by page (no vectors)."""
    found: list[tuple[str, ChunkMeta]] = []
    offset: str | None = None
    while True:
        page, offset = await store.scroll(PointFilter(), limit=UPSERT_BATCH, offset=offset)
        found.extend((chunk.id, ChunkMeta.parse(chunk.meta)) for chunk in page)
        if offset is None:
            return found


async def apply_fixes(catalog: Catalog, fixes: Sequence[FileEntry]) -> None:
    for entry in fixes:
        await catalog.put_file(entry)
    if fixes:
        log.warning("restore: %d file(s) were not complete in the backup and need a re-index", len(fixes))
