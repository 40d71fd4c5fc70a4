"""One folder kept mirrored into one collection: a sync at start, then one per burst of changes.

A sync is what ``ragd ingest DIR`` does: walk the folder (``.gitignore`` honoured), index what is
new or changed (unchanged files are skipped by their hash), then prune the files that are gone
(:func:`ragd.ingest.removal.prune_missing`) — unless a folder could not be listed, when nothing is
removed.  A symlink that leads out of the folder is never read: it is a failed file (``FORBIDDEN``)
in every sync's reports.  Syncs never overlap.  An image this server cannot OCR (no OCR engine:
``OCR_UNAVAILABLE``) is *skipped*, not failed: a docs folder's screenshots are pictures, not
documents to fix; each sync's summary line counts them once.  ``ragd proxy`` runs one
:class:`FolderMirror`; the watch function (over ``watchfiles``) is handed in by the composition root.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragd.errors import OcrUnavailable, RagError
from ragd.extract.mime import FileKind, file_type_for_name
from ragd.ingest.batch import ProgressCallback, ingest_files
from ragd.ingest.pipeline import Ingestor
from ragd.ingest.removal import RemovedFile, prune_missing
from ragd.ingest.sources import collect
from ragd.observe.logging import sanitize
from ragd.store.base import VectorStore
from ragd.types import IngestReport, IngestStatus

log = logging.getLogger(__name__)

#: (root, ignore patterns, debounce ms, stop) -> batches of changed keys
WatchFn = Callable[[Path, Sequence[str], int, asyncio.Event], AsyncIterator[set[str]]]


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    reports: tuple[IngestReport, ...]
    removed: tuple[RemovedFile, ...]
    #: False when pruning was off or skipped (a folder could not be listed)
    pruned: bool
    finished_at: float
    seconds: float

    def count(self, status: IngestStatus) -> int:
        """Files that ended ``status`` (a skipped image is not a failure)."""
        return sum(r.status is status and not skipped_image(r) for r in self.reports)

    @property
    def skipped(self) -> int:
        """Images skipped: there is no OCR engine to read them."""
        return sum(skipped_image(r) for r in self.reports)


def skipped_image(report: IngestReport) -> bool:
    """An image that failed only because this server has no OCR engine (or OCR is off)."""
    if report.status is not IngestStatus.FAILED or report.code != OcrUnavailable.code:
        return False
    found = file_type_for_name(Path(report.source).name)
    return found is not None and found.kind is FileKind.IMAGE


async def sync_folder(
    ingestor: Ingestor,
    store: VectorStore,
    folder: Path,
    collection: str,
    *,
    ignore: Sequence[str] = (),
    concurrency: int = 128,
    force: bool = False,
    prune: bool = True,
    on_done: ProgressCallback | None = None,
) -> SyncOutcome:
    """Index ``folder`` into ``collection`` and (``prune``) remove its files that are gone.

    Raises NotFound when the folder is missing: nothing is touched then."""
    started = time.perf_counter()
    unlisted: list[IngestReport] = []
    refused: list[IngestReport] = []  # symlinks out of the folder: reported, never read
    files = await asyncio.to_thread(
        collect, [folder], ignore, unlisted=unlisted.append, refused=refused.append
    )
    reports = await ingest_files(
        ingestor, store, files, collection, concurrency=concurrency, force=force, on_done=on_done
    )
    prunable = prune and not unlisted
    if prune and unlisted:
        log.warning("not pruning %s: %d folders could not be listed", sanitize(str(folder)), len(unlisted))
    removed = await prune_missing(ingestor, store, collection, [folder], files) if prunable else []
    return SyncOutcome(
        reports=(*unlisted, *refused, *reports),
        removed=tuple(removed),
        pruned=prunable,
        finished_at=time.time(),
        seconds=time.perf_counter() - started,
    )


class FolderMirror:
    """Keeps ``folder`` synced into ``collection`` while :meth:`run` runs; :meth:`sync` on demand."""

    def __init__(
        self,
        folder: Path,
        collection: str,
        *,
        ingestor: Ingestor,
        store: VectorStore,
        watch: WatchFn | None = None,
        ignore: Sequence[str] = (),
        concurrency: int = 128,
        debounce_ms: int = 500,
    ) -> None:
        self.folder, self.collection = folder, collection
        self._ingestor, self._store = ingestor, store
        self._watch, self._ignore = watch, tuple(ignore)
        self._concurrency, self._debounce_ms = concurrency, debounce_ms
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        #: the latest report of every file, by source (updated as a sync goes)
        self._files: dict[str, IngestReport] = {}
        self.last: SyncOutcome | None = None
        self.last_error: RagError | None = None
        self.syncs = 0
        #: set once the first sync has ended, however it ended (readiness waits for it)
        self.first_sync = asyncio.Event()

    @property
    def syncing(self) -> bool:
        return self._lock.locked()

    def files(self) -> list[IngestReport]:
        """The folder's files as last seen, in path order."""
        return [self._files[source] for source in sorted(self._files)]

    async def sync(self, *, force: bool = False) -> SyncOutcome:
        """One sync now (after the one under way, if any)."""
        async with self._lock:
            try:
                outcome = await sync_folder(
                    self._ingestor,
                    self._store,
                    self.folder,
                    self.collection,
                    ignore=self._ignore,
                    concurrency=self._concurrency,
                    force=force,
                    on_done=self._seen,
                )
            except RagError as exc:
                self.last_error = exc
                raise
            finally:
                self.first_sync.set()
            self._files = {r.source: r for r in outcome.reports}
            self.last, self.last_error = outcome, None
            self.syncs += 1
            return outcome

    async def run(self, stop: asyncio.Event) -> None:
        """Sync now, then after every burst of changes in the folder, until ``stop`` is set."""
        follower = asyncio.create_task(self._follow(stop)) if self._watch else None
        try:
            while not stop.is_set():
                self._wake.clear()
                await self._sync_logged()
                await _first(self._wake.wait(), stop.wait())
        finally:
            if follower is not None:
                follower.cancel()
                with suppress(asyncio.CancelledError):
                    await follower

    async def _sync_logged(self) -> None:
        try:
            outcome = await self.sync()
        except RagError as exc:
            log.warning("folder %s: sync failed: %s %s", sanitize(str(self.folder)), exc.code, exc)
            return
        except Exception as exc:  # the mirror outlives one bad sync; the next change retries
            log.error("folder %s: sync failed", sanitize(str(self.folder)), exc_info=exc)
            return
        skipped = (
            f"; {outcome.skipped} images skipped (no OCR here: install Tesseract, with "
            "RAGD_EXTRACT__OCR=auto, to read them)"
            if outcome.skipped
            else ""
        )
        log.info(
            "folder %s: %d indexed, %d unchanged, %d failed, %d removed in %.1f s%s",
            sanitize(str(self.folder)),
            outcome.count(IngestStatus.INDEXED),
            outcome.count(IngestStatus.UNCHANGED),
            outcome.count(IngestStatus.FAILED),
            len(outcome.removed),
            outcome.seconds,
            skipped,
        )

    async def _follow(self, stop: asyncio.Event) -> None:
        assert self._watch is not None
        try:
            async for changed in self._watch(self.folder, self._ignore, self._debounce_ms, stop):
                log.debug("folder %s: %d changed paths", sanitize(str(self.folder)), len(changed))
                self._wake.set()
        except (RagError, OSError) as exc:
            log.warning("cannot watch %s: %s", sanitize(str(self.folder)), sanitize(str(exc)))

    def _seen(self, report: IngestReport) -> None:
        self._files[report.source] = report


async def _first(*waits: Coroutine[Any, Any, object]) -> None:
    """Wait until the first of ``waits`` finishes; cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
