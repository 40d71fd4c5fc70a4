"""Taking files out of the index: one file, a whole collection, the files a folder no longer has.

A folder ingest names each file by a stable id, ``file_id_for_path`` (uuid5 of the resolved path),
and records ``meta.source``: the path as the user wrote it (``docs/a.md``, relative to wherever
``ragd ingest`` ran).  The id cannot be read back into a path, so pruning works the other way:
for a stored file the folder walk did not see, every path under the folder that its source could
name (the folder joined with each tail of the source) is hashed into an id; the one that equals
the stored id *is* the file's path, proven.  A file is pruned only when that path no longer
exists (``stat`` says so, not "cannot tell"), so nothing outside the folder, nothing ingested
through the API under another id, and nothing unreadable right now is ever removed.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path, PurePath

from ragd.errors import NotFound
from ragd.ingest.ids import file_id_for_path
from ragd.ingest.pipeline import Ingestor
from ragd.ingest.sources import SourceFile
from ragd.store.base import VectorStore
from ragd.types import ChunkMeta, PointFilter

log = logging.getLogger(__name__)

FILE_ID_KEY = "meta.file_id"
MAX_FILES = 1_000_000
_GONE = (errno.ENOENT, errno.ENOTDIR)


@dataclass(frozen=True, slots=True)
class RemovedFile:
    file_id: str
    #: the file's path as it was ingested (``meta.source``), else its name
    source: str
    chunks: int


@dataclass(frozen=True, slots=True)
class RemovedCollection:
    name: str
    files: int
    chunks: int


async def remove_file(ingestor: Ingestor, store: VectorStore, collection: str, target: str) -> RemovedFile:
    """Remove one file of ``collection``, named by its file id or by the path it was ingested from.

    Raises NotFound when the collection holds no such file."""
    candidates = [target]
    with suppress(ValueError, OSError):  # not a path this system can name (a NUL, a loop)
        candidates.append(file_id_for_path(Path(target)))
    for file_id in dict.fromkeys(candidates):
        source = await _source_of(store, collection, file_id)
        if source is not None:
            return RemovedFile(file_id, source, await ingestor.delete(file_id, collection))
    raise NotFound(
        f"no file {target!r} in collection {collection!r}",
        hint="give a file id (ragd search --json shows meta.file_id) or the path the file was ingested from",
    )


async def remove_collection(store: VectorStore, collection: str) -> RemovedCollection:
    """Remove every point of ``collection``; NotFound when it holds none."""
    scope = PointFilter(collection_names=(collection,))
    files = await store.facet(FILE_ID_KEY, scope, limit=MAX_FILES)
    if not files:
        raise NotFound(f"collection {collection!r} does not exist (nothing is indexed in it)")
    return RemovedCollection(collection, len(files), await store.delete(scope))


async def prune_missing(
    ingestor: Ingestor,
    store: VectorStore,
    collection: str,
    folders: Sequence[Path],
    walked: Iterable[SourceFile],
) -> list[RemovedFile]:
    """Remove the files of ``collection`` that were ingested from under ``folders`` and are gone.

    ``walked``: what the walk of those folders found just now (those files are kept unlooked-at).
    Call it only after a walk that listed every folder completely.  A folder in which the walk found
    no file at all is not pruned (an unmounted disk looks like that): its files stay."""
    walked = list(walked)
    found = [f.path.resolve() for f in walked]
    roots = []
    for folder in (folder.resolve() for folder in folders):
        if any(path.is_relative_to(folder) for path in found):
            roots.append(folder)
        else:  # an unmounted disk or a mistyped folder looks exactly like this: never empty a collection
            log.warning("not pruning %s: the walk found no file in it", folder)
    if not roots:
        return []
    present = {file_id_for_path(f.path) for f in walked}
    stored = await store.facet(FILE_ID_KEY, PointFilter(collection_names=(collection,)), limit=MAX_FILES)
    removed: list[RemovedFile] = []
    for file_id in sorted(set(stored) - present):
        source = await _source_of(store, collection, file_id)
        path = None if source is None else _located(roots, source, file_id)
        if path is not None and _gone(path):
            removed.append(RemovedFile(file_id, source or "", await ingestor.delete(file_id, collection)))
    if removed:
        log.info("pruned %d files gone from the folder out of collection %s", len(removed), collection)
    return removed


async def _source_of(store: VectorStore, collection: str, file_id: str) -> str | None:
    """The stored file's ``meta.source`` (else its name), or None when it has no points here."""
    page, _ = await store.scroll(PointFilter(collection_names=(collection,), file_id=file_id), limit=1)
    if not page:
        return None
    meta = ChunkMeta.parse(page[0].meta)
    return meta.source or meta.name


def _located(roots: Sequence[Path], source: str, file_id: str) -> Path | None:
    """The path under one of ``roots`` whose file id is ``file_id``, among those ``source`` can name."""
    for candidate in _candidates(roots, source):
        if file_id_for_path(candidate) == file_id:
            return candidate
    return None


def _candidates(roots: Sequence[Path], source: str) -> Iterator[Path]:
    """Each root joined with each tail of ``source``, shortest tail first (``a.md``, ``docs/a.md``…)."""
    source_path = PurePath(source)
    parts = source_path.parts[1:] if source_path.anchor else source_path.parts
    for start in reversed(range(len(parts))):
        tail = parts[start:]
        if ".." in tail or "." in tail:
            continue
        for root in roots:
            yield root.joinpath(*tail)


def _gone(path: Path) -> bool:
    """True only when the path certainly does not exist (an unreadable one is not gone)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno in _GONE
    return False
