"""Take a backup while the service serves and ingests: catalog first, then the index, then uploads.

Consistency is settled on restore, not by pausing writers (:mod:`ragd.kb.restore`): the catalog
copy is one committed state taken *before* the index is read, and the index is read page by page
while ingests go on, so a file being replaced may be caught half-way.  Every point carries its
file's version (``meta.ingest_version``) and chunk count, so restore keeps, per file, only a
complete version whose size the restored catalog records, and marks any other file as needing a
re-index.  Searches and writes never wait for a backup.

With a snapshot port (a Qdrant server store), the index is the server's own snapshot of the
collection instead (``index.snapshot``, downloaded and checked against its SHA-256): one consistent
copy of every tenant's points, settled on restore the same way.  The embedded engine's points are
scrolled.  A per-dataset export never uses a snapshot (it holds other tenants' points).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ragd import __version__
from ragd.errors import Conflict
from ragd.kb import backup_format as fmt
from ragd.store.base import VectorStore
from ragd.store.snapshots import IndexSnapshots
from ragd.types import PointFilter, StoredChunk

log = logging.getLogger(__name__)

SCROLL_PAGE = 256


@dataclass(frozen=True, slots=True)
class BackupReport:
    path: Path
    points: int
    bytes: int
    files: int
    seconds: float


async def take_backup(
    dest: Path,
    *,
    store: VectorStore,
    index_manifest: Mapping[str, Any],
    copy_catalog: Callable[[Path], None],
    files_dir: Path,
    catalog_kind: str = fmt.SQLITE,
    snapshots: IndexSnapshots | None = None,
) -> BackupReport:
    """Write a backup into ``dest`` (a new or empty folder); ``backup.json`` last, so a backup cut
    short has none and restore refuses it.  ``snapshots``: copy the index with the engine's own
    snapshot rather than by scrolling its points."""
    started = time.monotonic()
    _prepare(dest)
    parts: list[fmt.Part] = []
    catalog = dest / fmt.CATALOG_PARTS[catalog_kind]
    # blocking work runs off the event loop: searches and ingests go on while a server backs up
    await asyncio.to_thread(copy_catalog, catalog)  # first: the index read after it holds what it records
    parts.append(await asyncio.to_thread(_part, dest, catalog))
    if snapshots is None:
        points, index_part = await _dump_index(store, dest / fmt.INDEX)
    else:
        points, index_part = await _snapshot_index(store, snapshots, dest / fmt.SNAPSHOT)
    parts.append(index_part)
    parts.extend(await asyncio.to_thread(_copy_uploads, files_dir, dest / fmt.FILES, dest))
    info = fmt.BackupInfo(
        root=dest,
        created_at=time.time(),
        ragd_version=__version__,
        index_manifest=dict(index_manifest),
        points=points,
        parts=tuple(parts),
        catalog=catalog_kind,
        index=fmt.JSONL if snapshots is None else fmt.QDRANT_SNAPSHOT,
    )
    fmt.write_info(dest, info)
    report = BackupReport(
        path=dest,
        points=points,
        bytes=sum(p.bytes for p in parts),
        files=len(parts) - 2,
        seconds=time.monotonic() - started,
    )
    log.info("backup %s: %d points, %d bytes in %.1f s", dest, points, report.bytes, report.seconds)
    return report


def _prepare(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise Conflict(f"{dest} exists and is not an empty folder", hint="give a new backup folder")
    dest.mkdir(parents=True, exist_ok=True)


def _part(root: Path, path: Path) -> fmt.Part:
    return fmt.Part(
        path=path.relative_to(root).as_posix(), bytes=path.stat().st_size, sha256=fmt.sha256_of(path)
    )


async def _dump_index(store: VectorStore, path: Path) -> tuple[int, fmt.Part]:
    """Every point with its vectors, page by page (writers go on meanwhile), hashed as written."""
    digest = hashlib.sha256()
    points = size = 0
    offset: str | None = None
    with path.open("wb") as fh:

        def write(page: list[StoredChunk]) -> int:
            block = "".join(fmt.encode_point(c) + "\n" for c in page).encode("utf-8")
            fh.write(block)
            digest.update(block)
            return len(block)

        while True:
            page, offset = await store.scroll(
                PointFilter(), limit=SCROLL_PAGE, offset=offset, with_vectors=True
            )
            size += await asyncio.to_thread(write, page)
            points += len(page)
            if offset is None:
                break
        await asyncio.to_thread(_sync, fh)
    return points, fmt.Part(path=fmt.INDEX, bytes=size, sha256=digest.hexdigest())


async def _snapshot_index(store: VectorStore, snapshots: IndexSnapshots, path: Path) -> tuple[int, fmt.Part]:
    """The engine's snapshot of the collection; ``points`` is the count just before it (writers may
    add some meanwhile: restore settles what the snapshot holds)."""
    points = await store.count(PointFilter())
    got = await snapshots.take(path)
    return points, fmt.Part(path=fmt.SNAPSHOT, bytes=got.bytes, sha256=got.sha256)


def _sync(fh: BinaryIO) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def _copy_uploads(files_dir: Path, into: Path, root: Path) -> list[fmt.Part]:
    """The stored uploads (written once, under their file id); one vanishing mid-copy is skipped
    (its file was deleted: the catalog copy then either lacks it or restore marks it)."""
    parts: list[fmt.Part] = []
    if not files_dir.is_dir():
        return parts
    for source in sorted(p for p in files_dir.rglob("*") if p.is_file() and not p.name.startswith(".")):
        target = into / source.relative_to(files_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(source, target)
        except FileNotFoundError:
            continue
        parts.append(_part(root, target))
    return parts
