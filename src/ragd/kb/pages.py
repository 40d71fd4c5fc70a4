"""A dataset file's page as an image, a chunk's passage marked on it (what a citation opens).

    GET /api/v1/datasets/{id}/files/{file}/pages/{n}?chunk=&dpi=

``n`` is 1-based (as people count pages; a chunk's ``meta.page`` is 0-based).  Readable by every
key that may read the dataset's chunks: another tenant's dataset or file is the same NOT_FOUND as a
missing one.  The page is drawn from the file's own bytes: its stored upload, else its item fetched
again from its source; a PDF as it is, an Office file through its PDF
(:func:`ragd.extract.office_pdf.to_pdf`, CONVERTER_UNAVAILABLE without a converter); any other
file is NOT_PAGED.  ``chunk`` must be one of the file's chunks (NOT_FOUND otherwise); its boxes on
this page are highlighted (none there: the page is drawn unmarked).

Drawn pages, page counts and converted PDFs are kept in a :class:`ragd.kb.page_cache.PageCache`
keyed by the file's SHA-256 (its chunks' ``meta.file_hash``), page, DPI and marks, so a page is
drawn once however often it is opened; the key is the response's ETag too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from ragd.errors import ExtractionError, InvalidRequest, NotFound, NotPaged
from ragd.extract.mime import FileKind, detect
from ragd.extract.office_pdf import OFFICE_KINDS, to_pdf
from ragd.extract.page_marks import DrawnPage, Mark, PageMissing, draw_page
from ragd.extract.pdf_pages import PdfUnreadable
from ragd.kb.access import readable, readable_datasets, require_chunk_reader
from ragd.kb.context import KbContext
from ragd.kb.files import file_of
from ragd.kb.indexing import entry_content, served_generation
from ragd.kb.page_cache import PageCache
from ragd.kb_types import Dataset, FileEntry, Principal
from ragd.settings import ExtractSettings
from ragd.types import ChunkMeta, Document, PointFilter

#: the drawing's version: a change to how pages are drawn changes every key (and ETag)
RENDER_VERSION = "1"


@dataclass(frozen=True, slots=True)
class PageSetup:
    """How pages are drawn and kept (``RAGD_PAGES__*``), and how Office files become PDF."""

    dpi: int
    max_dpi: int
    max_pixels: int
    cache: PageCache
    extract: ExtractSettings


@dataclass(frozen=True, slots=True)
class PageImage:
    png: bytes
    #: a strong validator of exactly these bytes
    etag: str
    page_count: int
    #: served from the cache (not drawn by this request)
    cached: bool


async def page_image(
    ctx: KbContext,
    principal: Principal,
    dataset_id: str,
    file_id: str,
    number: int,
    setup: PageSetup,
    *,
    chunk_id: str | None = None,
    dpi: int | None = None,
) -> PageImage:
    """Page ``number`` (1-based) of the file, with chunk ``chunk_id``'s passage marked."""
    require_chunk_reader(principal)
    if dpi is not None and not 36 <= dpi <= setup.max_dpi:
        raise InvalidRequest(f"dpi is 36-{setup.max_dpi}", hint="raise RAGD_PAGES__MAX_DPI for sharper pages")
    dataset = await readable(principal, ctx.catalog, dataset_id)
    entry = await file_of(ctx, dataset, file_id)
    if number < 1:
        raise NotFound(f"pages are numbered from 1: there is no page {number}")
    file_hash, marks = await _file_hash_and_marks(ctx, dataset, entry, chunk_id, number - 1)
    chosen = dpi or setup.dpi
    base = f"{file_hash or 'file:' + entry.id + ':' + str(entry.updated_at)}"
    key = f"page|{RENDER_VERSION}|{base}|{number}|{chosen}|{setup.max_pixels}|{json.dumps(marks)}"
    etag = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    png, count = await asyncio.to_thread(_cached, setup.cache, key, f"count|{base}")
    if count is not None and number > count:
        raise _no_page(entry, number, count)
    if png is not None and count is not None:
        return PageImage(png, etag, count, cached=True)
    pdf = await _pdf_of(ctx, entry, base, setup)
    try:
        drawn = await asyncio.to_thread(
            draw_page, pdf, number - 1, dpi=chosen, max_pixels=setup.max_pixels, marks=marks
        )
    except PageMissing as exc:
        await asyncio.to_thread(setup.cache.put, f"count|{base}", str(exc.page_count).encode())
        raise _no_page(entry, number, exc.page_count) from None
    except PdfUnreadable as exc:
        raise ExtractionError(
            f"the pages of {entry.name!r} cannot be drawn: {str(exc)[:200]}",
            hint="the file may be corrupt: open it in its application and save it again",
        ) from exc
    await asyncio.to_thread(_keep, setup.cache, key, f"count|{base}", drawn)
    return PageImage(drawn.png, etag, drawn.page_count, cached=False)


async def _file_hash_and_marks(
    ctx: KbContext, dataset: Dataset, entry: FileEntry, chunk_id: str | None, page: int
) -> tuple[str | None, list[Mark]]:
    """The file's hash as its chunks record it, and the chunk's boxes on ``page`` (0-based)."""
    scope = PointFilter(
        collection_names=(dataset.collection_name,),
        file_id=entry.id,
        generation=served_generation(dataset),
        ids=(_chunk_uuid(chunk_id),) if chunk_id is not None else None,
    )
    found, _ = await ctx.store.scroll(scope, limit=1)
    if chunk_id is not None and not found:
        raise NotFound(f"chunk {chunk_id!r} is not a chunk of file {entry.id!r}")
    if not found:
        return None, []
    meta = ChunkMeta.parse(found[0].meta)
    marks = [(x0, y0, x1, y1) for p, x0, y0, x1, y1 in meta.boxes if p == page] if chunk_id else []
    return meta.file_hash or None, marks


def _chunk_uuid(chunk_id: str) -> str:
    try:
        return str(uuid.UUID(chunk_id))
    except ValueError:
        raise InvalidRequest(f"chunk must be a chunk id (a UUID), not {chunk_id[:80]!r}") from None


async def _pdf_of(ctx: KbContext, entry: FileEntry, base: str, setup: PageSetup) -> bytes:
    """The file as PDF: its bytes, or its Office document converted (kept in the cache)."""
    converted = await asyncio.to_thread(setup.cache.get, f"pdf|{base}")
    if converted is not None:
        return converted
    async with entry_content(ctx, entry) as content:
        if isinstance(content, Document):  # a source that hands over text (a web page): no pages
            raise _not_paged(entry.name, "its source gives text, not a file")
        data = await asyncio.to_thread(content.read)
    kind = detect(entry.name, None, data).kind
    if kind is FileKind.PDF:
        return data
    if kind not in OFFICE_KINDS:
        raise _not_paged(entry.name, f"it is {kind.value}")
    pdf = await asyncio.to_thread(to_pdf, data, entry.name, setup.extract)
    await asyncio.to_thread(setup.cache.put, f"pdf|{base}", pdf)
    return pdf


def _not_paged(name: str, why: str) -> NotPaged:
    return NotPaged(
        f"{name!r} has no pages to show: {why}",
        hint="page images are drawn of PDF and Office files; read this file's chunks instead",
    )


def _no_page(entry: FileEntry, number: int, count: int) -> NotFound:
    return NotFound(f"{entry.name!r} has {count} pages: there is no page {number}")


def _cached(cache: PageCache, key: str, count_key: str) -> tuple[bytes | None, int | None]:
    """The drawn page and the file's page count, each if the cache holds it."""
    count = cache.get(count_key)
    pages = int(count) if count is not None and count.isdigit() else None
    return cache.get(key) if pages is not None else None, pages


def _keep(cache: PageCache, key: str, count_key: str, drawn: DrawnPage) -> None:
    cache.put(count_key, str(drawn.page_count).encode())
    cache.put(key, drawn.png)


async def dataset_of_collection(ctx: KbContext, principal: Principal, collection: str) -> Dataset | None:
    """The dataset the key may read whose collection is ``collection`` (None: a raw collection)."""
    found = await readable_datasets(principal, ctx.catalog)
    return next((d for d in found if d.collection_name == collection), None)


def page_setup(
    *, dpi: int, max_dpi: int, max_pixels: int, cache_dir: Path, cache_mb: int, extract: ExtractSettings
) -> PageSetup:
    return PageSetup(
        dpi, max(max_dpi, dpi), max_pixels, PageCache(cache_dir, cache_mb * 1024 * 1024), extract
    )
