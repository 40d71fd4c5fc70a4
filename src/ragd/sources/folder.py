"""A local folder as a source: every file the ignore rules keep, fingerprinted by its sha256.

Keys are POSIX paths relative to the root; the rules are those of the folder
ingest (:mod:`ragd.sources.ignore`), re-read on every scan.  Hashing streams
each file in :data:`HASH_CHUNK` pieces in a worker thread; the walk runs in a
thread too, so the event loop never blocks on the disk.

Skipping unchanged files.  Given ``known`` (key -> (size, mtime_ns,
fingerprint), from an earlier :meth:`FolderSource.scan_with_stats`), a file
whose size and mtime_ns both match is not read again: its old fingerprint is
reused.  The trade-off, as in git and rsync: an edit that keeps the size and
restores the mtime (``os.utime``, some backup tools) goes unseen until the
file changes again.  A file modified within :data:`RACY_WINDOW_NS` of being
hashed could still change again inside the same clock tick without its mtime
moving (timestamps are coarse: a jiffy on Linux, 2 s on FAT), so its entry is
marked not ``stable`` and its ``known`` is None: store nothing and the next
scan hashes it again.

Safety.  A symlink under the root that resolves outside it is reported as an
:class:`ItemFailure` (``FORBIDDEN``) and never read; :meth:`FolderSource.load`
refuses any key that is absolute, climbs with ``..``, resolves outside the
root or names an ignored path.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ragd.errors import ExtractionError, Forbidden, NotFound
from ragd.sources.base import ItemFailure, ItemMetadata, SourceItem
from ragd.sources.ignore import LEAVES_ROOT, IgnoreRules, leaves_root, os_reason, walk_files
from ragd.types import Blob

__all__ = ["HASH_CHUNK", "RACY_WINDOW_NS", "FolderEntry", "FolderSource", "KnownStat"]

logger = logging.getLogger(__name__)

HASH_CHUNK = 1 << 20
RACY_WINDOW_NS = 2_000_000_000

#: what a caller keeps per key between scans: (size, mtime_ns, fingerprint)
KnownStat = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class FolderEntry:
    """A scanned file with the stat its fingerprint belongs to (taken before hashing)."""

    item: SourceItem
    mtime_ns: int
    #: False when the file was modified too recently to trust (size, mtime_ns) next time
    stable: bool

    @property
    def known(self) -> KnownStat | None:
        """What to pass back as ``known[key]`` on the next scan, or None (store nothing)."""
        return (self.item.size, self.mtime_ns, self.item.fingerprint) if self.stable else None


class FolderSource:
    """:class:`ragd.sources.base.SourceReader` over the files under ``root``."""

    def __init__(
        self, root: Path, ignore: Sequence[str] = (), *, known: Mapping[str, KnownStat] | None = None
    ) -> None:
        self.root = Path(root)
        self.ignore = tuple(ignore)
        self._known: Mapping[str, KnownStat] = known or {}

    async def scan(self) -> AsyncIterator[SourceItem | ItemFailure]:
        """Every file now, reusing fingerprints from the ``known`` given to the constructor."""
        async for entry in self.scan_with_stats():
            yield entry.item if isinstance(entry, FolderEntry) else entry

    async def scan_with_stats(
        self, known: Mapping[str, KnownStat] | None = None
    ) -> AsyncIterator[FolderEntry | ItemFailure]:
        """Like :meth:`scan` with each file's mtime; ``known`` overrides the constructor's.

        Raises NotFound when the root is missing or not a folder, ExtractionError when it cannot be
        listed.  A subfolder that cannot be listed is one listing ``ItemFailure`` keyed ``"sub/dir/"``
        that hides that prefix (its files are unknown, not deleted); a file or subfolder that vanishes
        during the scan is left out (it is deleted).
        """
        known = self._known if known is None else known
        root = await asyncio.to_thread(self._resolved_root)
        unlisted: list[tuple[Path, OSError]] = []
        paths = await asyncio.to_thread(
            lambda: list(walk_files(root, self.ignore, unlisted=lambda *failure: unlisted.append(failure)))
        )
        for failure in _unlisted(root, unlisted):
            yield failure
        for path in paths:
            key = path.relative_to(root).as_posix()
            entry = await asyncio.to_thread(_examine, root, path, key, known.get(key))
            if entry is not None:
                yield entry

    async def load(self, item: SourceItem) -> Blob:
        """The file as a Blob on disk; NotFound when it vanished, Forbidden outside the root."""
        path = await asyncio.to_thread(self._locate, item.key)
        return Blob(name=item.name, path=path)

    async def release(self, blob: Blob) -> None:
        """Nothing to free (the Blob is the file itself); here so callers can treat all sources alike."""

    async def item_metadata(self, item: SourceItem) -> ItemMetadata:
        return path_metadata(item.key)

    def _resolved_root(self) -> Path:
        if not self.root.is_dir():
            raise NotFound(f"no such folder: {self.root}", hint="check the source's path")
        return self.root.resolve()

    def _locate(self, key: str) -> Path:
        """The real path of ``key`` after every check of the module docstring."""
        rel = PurePosixPath(key)
        if not key or "\0" in key or rel.is_absolute() or ".." in rel.parts:
            raise Forbidden(f"{key!r} is not a path inside the folder")
        root = self._resolved_root()
        if IgnoreRules(root, self.ignore).excluded(root.joinpath(*rel.parts), is_dir=False):
            raise NotFound(f"{key!r} is not part of the folder source (ignored)")
        try:
            real = root.joinpath(*rel.parts).resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise NotFound(f"{key!r} no longer exists in the folder") from exc
        except OSError as exc:  # a symlink loop
            raise NotFound(f"{key!r} cannot be resolved ({type(exc).__name__})") from exc
        if not real.is_relative_to(root):
            raise Forbidden(f"{key!r} resolves outside the folder")
        if not real.is_file():
            raise NotFound(f"{key!r} is not a file")
        return real


def path_metadata(key: str) -> ItemMetadata:
    """A file's folders (its path relative to the root, file name excepted) as tags, and the whole
    relative path as the string field ``path``: ``reports/2024/q1.md`` -> tags ``reports``,
    ``2024``; ``path`` ``reports/2024/q1.md``."""
    folders = PurePosixPath(key).parts[:-1]
    return ItemMetadata(tags=tuple(folders), strings={"path": key})


def _unlisted(root: Path, failures: list[tuple[Path, OSError]]) -> list[ItemFailure]:
    """The folders the walk could not list, as prefix failures; raises when the root is one."""
    items: list[ItemFailure] = []
    for folder, exc in failures:
        if isinstance(exc, FileNotFoundError | NotADirectoryError):
            if folder == root:
                raise NotFound(f"no such folder: {root}", hint="check the source's path")
            continue  # deleted during the scan: its files are gone
        reason = os_reason(exc)
        if folder == root:
            raise ExtractionError(
                f"cannot list the folder {str(root)!r} ({reason}); nothing was changed",
                hint="give ragd's process read and execute permission on it",
            )
        key = folder.relative_to(root).as_posix() + "/"
        logger.warning("cannot list %r in a folder source, its indexed files are kept: %s", key, reason)
        message = f"cannot list the folder ({reason}); the files indexed from it are kept"
        items.append(ItemFailure(key, ExtractionError.code, message, hides=key, listing=True))
    return items


def _examine(root: Path, path: Path, key: str, known: KnownStat | None) -> FolderEntry | ItemFailure | None:
    """Stat and (unless ``known`` still holds) hash one file; blocking, run in a thread."""
    try:
        if leaves_root(root, path):
            return ItemFailure(key, Forbidden.code, LEAVES_ROOT)
        stat = path.stat()
        checked_at = time.time_ns()
        if known is not None and known[:2] == (stat.st_size, stat.st_mtime_ns):
            fingerprint = known[2]
        else:
            fingerprint = _sha256(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.info("cannot read %r in a folder source: %s", key, type(exc).__name__)
        return ItemFailure(key, ExtractionError.code, f"cannot read the file ({os_reason(exc)})")
    item = SourceItem(key=key, fingerprint=fingerprint, name=path.name, size=stat.st_size)
    stable = checked_at - stat.st_mtime_ns >= RACY_WINDOW_NS
    return FolderEntry(item=item, mtime_ns=stat.st_mtime_ns, stable=stable)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
