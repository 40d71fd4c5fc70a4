"""Ingest many files with a bounded number in flight, reporting progress per file."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from ragd.ingest.ids import file_id_for_path
from ragd.ingest.pipeline import Ingestor, failure_report, success_report
from ragd.ingest.sources import SourceFile
from ragd.store.base import VectorStore
from ragd.types import Blob, FileRef, IngestReport

ProgressCallback = Callable[[IngestReport], None]


def ref_for(file: SourceFile, collection: str) -> FileRef:
    return FileRef(
        file_id=file_id_for_path(file.path),
        collection_name=collection,
        name=file.path.name,
        source=file.source,
        extra={"collection_type": "local"},
    )


async def ingest_files(
    ingestor: Ingestor,
    store: VectorStore,
    files: Sequence[SourceFile],
    collection: str,
    *,
    concurrency: int = 128,
    force: bool = False,
    on_done: ProgressCallback | None = None,
) -> list[IngestReport]:
    """Ingest ``files`` into ``collection``; a failing file never stops the batch."""
    queue: asyncio.Queue[SourceFile] = asyncio.Queue()
    for f in files:
        queue.put_nowait(f)
    reports: list[IngestReport] = []

    async def worker() -> None:
        while not queue.empty():
            file = queue.get_nowait()
            ref = ref_for(file, collection)
            started = time.perf_counter()
            try:
                outcome = await ingestor.ingest(Blob(name=file.path.name, path=file.path), ref, force=force)
                report = success_report(file.source, ref, outcome, started)
            except Exception as exc:
                report = failure_report(file.source, ref, exc, time.perf_counter() - started)
            reports.append(report)
            if on_done is not None:
                on_done(report)

    async with store.bulk():  # indexes built every so many chunks: a big folder's build stays bounded
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    await store.optimize()
    order = {f.source: i for i, f in enumerate(files)}
    return sorted(reports, key=lambda r: order.get(r.source, 0))
