"""The ingest use-case: one file in, its chunks replaced atomically in the store.

    Blob -extract-> Document -chunk-> [Chunk] -embed dense+sparse-> [StoredChunk] -replace->

Replacement is blue/green over content-derived ids: the new version's points
are written first (an unchanged chunk keeps its id and is overwritten with
identical text), then the previous version's leftover points are deleted.
If anything fails before that, only the points this run added are removed,
so the previous version stays complete and searchable — never partial,
never duplicated.  Ingests of the same file id are serialised.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

from ragd.chunk.base import Chunker
from ragd.embed.base import DenseEmbedder, SparseEmbedder
from ragd.embed.spaces import DenseSpaces
from ragd.errors import EmbeddingFailed, EmptyDocument, PayloadTooLarge, RagError
from ragd.extract.base import Extractor
from ragd.ingest.ids import blob_hash, sha256_hex
from ragd.ingest.locks import KeyedLocks
from ragd.ingest.points import ROUTE_META, build_points, is_current, is_disabled, stored_route
from ragd.store.base import VectorStore
from ragd.store.payload import GENERATION_FIELD
from ragd.types import Blob, Document, FileRef, IngestReport, IngestStatus, PointFilter, StoredChunk

log = logging.getLogger(__name__)

SCROLL_PAGE = 1000


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """Per-call choices: a dataset's own chunker, its file's enabled flag (None: keep the stored
    one), and ``admit``: called with the new version's chunk count after chunking, before anything
    is embedded or written (a storage quota raises there, and the stored version stays whole)."""

    chunker: Chunker | None = None
    disabled: bool | None = None
    admit: Callable[[int], Awaitable[None]] | None = None
    #: one version of a dataset (issue 31: migrations): the file's points of that version only are
    #: read and replaced, made with its model; None: the collection's points, its model looked up
    version: IngestVersion | None = None


@dataclass(frozen=True, slots=True)
class IngestVersion:
    """A version of a dataset's chunks: ``tag`` its generation (``""``: the untagged version built
    before any migration), ``space`` the named dense model it is embedded with (None: the default)."""

    tag: str
    space: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    status: IngestStatus
    chunks: int
    extractor: str | None = None
    #: the ``auto`` router's decision for the file (``Document.meta["extraction_route"]``), if any
    route: Mapping[str, Any] | None = None


class Ingestor:
    """Ingests files into the store; every failure is a :class:`RagError` with a code."""

    def __init__(
        self,
        *,
        extractor: Extractor,
        chunker: Chunker,
        dense: DenseEmbedder,
        sparse: SparseEmbedder | None,
        store: VectorStore,
        write_batch: int = 256,
        extract_concurrency: int = 2,
        max_chunks: int = 20_000,
        spaces: DenseSpaces | None = None,
        chunkers: Mapping[str, Chunker] | None = None,
    ) -> None:
        """``spaces``: the named dense models datasets may choose (a file of a collection that chose
        one is embedded with it, and chunked by its entry in ``chunkers`` unless the call brings a
        chunker of its own)."""
        self._extractor = extractor
        self._chunker = chunker
        self._spaces = spaces or DenseSpaces(dense)
        self._chunkers = dict(chunkers or {})
        self._sparse = sparse
        self._store = store
        self._write_batch = write_batch
        self._max_chunks = max_chunks
        self._locks = KeyedLocks()
        # many files may be in flight (their chunks share embedding batches), few are extracted at once
        self._extracting = asyncio.Semaphore(extract_concurrency)
        self.version = self.version_for(chunker)

    def version_for(self, chunker: Chunker, space: str | None = None) -> str:
        """What a file's points record as the pipeline that made them (chunker + sparse model, and
        the dense model when it is a named one)."""
        version = f"{chunker.version}|{self._sparse.name if self._sparse else 'dense-only'}"
        return version if space is None else f"{version}|dense={space}"

    async def ingest(
        self, blob: Blob, ref: FileRef, *, force: bool = False, options: IngestOptions | None = None
    ) -> Outcome:
        """Index one file (skipped when its bytes and pipeline are unchanged, unless ``force``)."""
        async with self._locks.hold(ref.file_id):
            file_hash = await asyncio.to_thread(blob_hash, blob)
            load = functools.partial(asyncio.to_thread, self._extractor.extract, blob)
            return await self._index(ref, file_hash, load, force=force, options=options or IngestOptions())

    async def ingest_document(
        self, document: Document, ref: FileRef, *, force: bool = False, options: IngestOptions | None = None
    ) -> Outcome:
        """Index text that is already extracted (evaluation corpora, API text, crawled pages)."""
        async with self._locks.hold(ref.file_id):
            load = functools.partial(_ready, document)
            opts = options or IngestOptions()
            return await self._index(ref, sha256_hex(document.text), load, force=force, options=opts)

    async def _index(
        self,
        ref: FileRef,
        file_hash: str,
        load: Callable[[], Awaitable[Document]],
        *,
        force: bool,
        options: IngestOptions,
    ) -> Outcome:
        """Skip an unchanged file, else load its document and replace its points (lock held)."""
        generation = None if options.version is None else options.version.tag
        if options.version is None:
            space = await self._spaces.space_of(ref.collection_name)
        else:
            space = options.version.space
            if generation:
                ref = replace(ref, extra={**ref.extra, GENERATION_FIELD: generation})
        model = self._spaces.embedder(space)
        chunker = options.chunker or self._chunkers.get(space or "", self._chunker)
        version = self.version_for(chunker, space)
        existing = await self._existing(ref, generation)
        if not force and is_current(existing, file_hash=file_hash, version=version):
            return Outcome(IngestStatus.UNCHANGED, len(existing), route=stored_route(existing))
        async with self._extracting:
            document = await load()
        # a disabled file stays disabled: its new version is written already flagged
        disabled = is_disabled(existing) if options.disabled is None else options.disabled
        points = await self._points(
            ref,
            document,
            file_hash,
            chunker,
            version,
            disabled=disabled,
            model=model,
            space=space,
            admit=options.admit,
        )
        await self._replace(existing, points)
        return Outcome(IngestStatus.INDEXED, len(points), document.extractor, document.meta.get(ROUTE_META))

    async def delete(self, file_id: str, collection_name: str | None = None) -> int:
        """Remove a file's points (in one collection, or in all); returns how many."""
        names = (collection_name,) if collection_name else None
        async with self._locks.hold(file_id):
            return await self._store.delete(PointFilter(collection_names=names, file_id=file_id))

    async def set_disabled(self, file_id: str, disabled: bool, collection_name: str | None = None) -> int:
        """Switch a file's points out of (or back into) search, without re-embedding; returns how many.

        Holds the file's ingest lock, so a concurrent re-ingest cannot drop the change."""
        names = (collection_name,) if collection_name else None
        async with self._locks.hold(file_id):
            return await self._store.set_disabled(
                PointFilter(collection_names=names, file_id=file_id), disabled
            )

    async def count(self, file_id: str, collection_name: str | None = None) -> int:
        """How many points a file has (in one collection, or in all)."""
        names = (collection_name,) if collection_name else None
        return await self._store.count(PointFilter(collection_names=names, file_id=file_id))

    async def chunks(
        self, file_id: str, *, limit: int, offset: str | None = None
    ) -> tuple[list[StoredChunk], str | None]:
        """One page of a file's points in every collection, for inspection."""
        return await self._store.scroll(PointFilter(file_id=file_id), limit=limit, offset=offset)

    async def _existing(self, ref: FileRef, generation: str | None = None) -> list[StoredChunk]:
        """The file's points in its collection (of one version when ``generation`` is given)."""
        flt = PointFilter(collection_names=(ref.collection_name,), file_id=ref.file_id, generation=generation)
        out: list[StoredChunk] = []
        offset: str | None = None
        while True:
            page, offset = await self._store.scroll(flt, limit=SCROLL_PAGE, offset=offset)
            out.extend(page)
            if offset is None:
                return out

    async def _points(
        self,
        ref: FileRef,
        document: Document,
        file_hash: str,
        chunker: Chunker,
        version: str,
        *,
        disabled: bool,
        model: DenseEmbedder,
        space: str | None,
        admit: Callable[[int], Awaitable[None]] | None = None,
    ) -> list[StoredChunk]:
        chunks = await asyncio.to_thread(chunker.chunk, document)
        if not chunks:
            raise EmptyDocument(f"{ref.name}: no text to index after chunking")
        if len(chunks) > self._max_chunks:
            raise PayloadTooLarge(
                f"{ref.name!r} makes {len(chunks):,} chunks, over the {self._max_chunks:,}-chunk limit",
                hint="raise RAGD_CHUNKING__MAX_CHUNKS, use larger chunks, or split the file",
            )
        if admit is not None:
            await admit(len(chunks))
        texts = [c.embedding_text() for c in chunks]
        dense = await model.embed_documents(texts)
        if len(dense) != len(texts):
            raise EmbeddingFailed(f"embedder returned {len(dense)} vectors for {len(texts)} chunks")
        sparse = await asyncio.to_thread(self._sparse.embed_documents, texts) if self._sparse else None
        points = build_points(
            ref, document, chunks, dense, sparse, file_hash=file_hash, version=version, disabled=disabled
        )
        return points if space is None else [replace(p, space=space) for p in points]

    async def _replace(self, existing: Sequence[StoredChunk], points: Sequence[StoredChunk]) -> None:
        old_ids = {p.id for p in existing}
        new_ids = {p.id for p in points}
        try:
            for start in range(0, len(points), self._write_batch):
                await self._store.upsert(points[start : start + self._write_batch])
        except BaseException:
            own = tuple(sorted(new_ids - old_ids))
            if own:
                # shielded: a cancelled ingest must still remove what it wrote
                with suppress(Exception):
                    await asyncio.shield(self._store.delete(PointFilter(ids=own)))
            raise
        stale = tuple(sorted(old_ids - new_ids))
        if stale:
            await self._store.delete(PointFilter(ids=stale))


async def _ready(document: Document) -> Document:
    return document


def failure_report(source: str, ref: FileRef | None, exc: BaseException, seconds: float) -> IngestReport:
    """An :class:`IngestReport` for a failed file, with the error's stable code."""
    if isinstance(exc, RagError):
        code, message = exc.code, str(exc)
    else:
        log.error("unexpected failure ingesting %r", source, exc_info=exc)
        code, message = "PIPELINE_FAILED", f"{type(exc).__name__}: {exc}"
    return IngestReport(
        source=source,
        status=IngestStatus.FAILED,
        file_id=ref.file_id if ref else "",
        collection_name=ref.collection_name if ref else "",
        code=code,
        message=message,
        seconds=seconds,
    )


def success_report(source: str, ref: FileRef, outcome: Outcome, started: float) -> IngestReport:
    return IngestReport(
        source=source,
        status=outcome.status,
        file_id=ref.file_id,
        collection_name=ref.collection_name,
        chunks=outcome.chunks,
        extractor=outcome.extractor,
        seconds=time.perf_counter() - started,
    )
