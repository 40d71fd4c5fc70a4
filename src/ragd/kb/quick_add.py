"""Add one text or one web page to a dataset — or, with the service key, to a raw collection —
indexed before the call returns (an agent's way in: no job to wait for, no worker needed).

A dataset's new file is kept like an upload (``<files_dir>/<dataset>/<file>``), so a re-index
works, and indexed by :func:`ragd.kb.indexing.index_content` as a job would.  Its id derives
from where it goes and what it is called (a page: its URL), so adding the same name again
replaces the file instead of duplicating it.  A raw collection's file goes through the same
:class:`~ragd.ingest.pipeline.Ingestor` as ``ragd ingest``.

A URL is read as a one-page crawl by the web source reader (robots.txt, redirects only within
the page's site section, the page size limit), with the web sources' address check when it is
added and at every connection: a tenant key reaches only public addresses unless
``crawl.allow_private`` (403 PRIVATE_ADDRESS).  With ``render`` the page is loaded in headless
Chromium as a web source with ``render: true`` is (:mod:`ragd.sources.render`; 503
RENDER_UNAVAILABLE without ragd[render] or Chromium, RENDER_TIMEOUT when it does not settle).

    writer role / service key  -> dataset (by id, or by its collection name)
    service key                -> raw collection
    reader role                -> FORBIDDEN; another tenant's dataset -> NOT_FOUND
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from ragd.errors import (
    EmptyDocument,
    Forbidden,
    InvalidRequest,
    NotFound,
    PageFetchFailed,
    PayloadTooLarge,
    PrivateAddress,
    RagError,
    UnsupportedType,
)
from ragd.kb import audit
from ragd.kb.access import writable
from ragd.kb.context import KbContext
from ragd.kb.files import MAX_FILE_NAME, clean_file_name
from ragd.kb.indexing import index_content
from ragd.kb.sources import check_url
from ragd.kb_types import Dataset, FileEntry, Principal, SourceKind, SourceSpec
from ragd.sources.base import ItemFailure, SourceItem
from ragd.types import Blob, Document, FileRef, IngestStatus

#: ids of added files derive from (where, what): adding the same name or URL again replaces it
ADDED_FILES = uuid.UUID("0b6f7d3e-2c61-4f0a-8f53-64c1d7a9e2b4")
_DATASET_COLLECTION = re.compile(r"kb-([0-9a-f]{32})")
#: what a page the crawl could not read (an ItemFailure's code) is raised as; else FETCH_FAILED
_PAGE_FAILURES: dict[str, type[RagError]] = {
    e.code: e for e in (EmptyDocument, PayloadTooLarge, UnsupportedType, NotFound, Forbidden, PrivateAddress)
}


@dataclass(frozen=True, slots=True)
class Target:
    """Where an added file goes: exactly one of a dataset id and a collection name."""

    dataset_id: str | None = None
    collection: str | None = None


@dataclass(frozen=True, slots=True)
class Added:
    file_id: str
    name: str
    source: str
    collection: str
    dataset_id: str | None
    status: IngestStatus
    chunks: int


def added_file_id(where: str, key: str) -> str:
    return str(uuid.uuid5(ADDED_FILES, f"{where}\n{key}"))


@audit.audited("file.add", "file", result_target=lambda added: added.file_id)
async def add_text(ctx: KbContext, principal: Principal, target: Target, name: str, text: str) -> Added:
    """Index ``text`` as a file called ``name`` (no suffix: ``.md``), read as an upload of it is."""
    data = text.encode("utf-8")
    if len(data) > ctx.max_upload_bytes:
        raise PayloadTooLarge(f"the text is {len(data)} bytes, over the {ctx.max_upload_bytes}-byte limit")
    name = clean_file_name(name)
    if not Path(name).suffix:
        name += ".md"
    where = await _resolve(ctx, principal, target)
    if isinstance(where, str):
        ref = FileRef(
            file_id=added_file_id(where, f"text:{name}"), collection_name=where, name=name, source=name
        )
        outcome = await ctx.ingestor.ingest(Blob(name=name, data=data), ref)
        return Added(ref.file_id, name, name, where, None, outcome.status, outcome.chunks)
    entry = await _entry(ctx, where, added_file_id(where.id, f"text:{name}"), name, len(data))
    path = ctx.upload_path(where.id, entry.id)
    await asyncio.to_thread(_write, path, data)
    outcome = await index_content(ctx, where, entry, Blob(name=name, path=path))
    return Added(entry.id, name, name, where.collection_name, where.id, outcome.status, outcome.chunks)


@audit.audited("file.add", "file", result_target=lambda added: added.file_id)
async def add_url(
    ctx: KbContext,
    principal: Principal,
    target: Target,
    url: str,
    *,
    allow_private: bool,
    render: bool = False,
) -> Added:
    """Fetch the page at ``url`` (rendered in Chromium with ``render``) and index its text (the
    file's source is the page's URL)."""
    private_ok = await check_url(principal, url, allow_private=allow_private)
    where = await _resolve(ctx, principal, target)
    if render:
        audit.note(render=True)
    item, document = await fetch_page(ctx, url, allow_private=private_ok, render=render)
    name = _page_name(item.name)
    if isinstance(where, str):
        ref = FileRef(
            file_id=added_file_id(where, f"url:{item.key}"), collection_name=where, name=name, source=item.key
        )
        outcome = await ctx.ingestor.ingest_document(document, ref)
        return Added(ref.file_id, name, item.key, where, None, outcome.status, outcome.chunks)
    data = document.text.encode("utf-8")
    entry = await _entry(ctx, where, added_file_id(where.id, f"url:{item.key}"), name, len(data), item.key)
    # the page's text is kept as the file's bytes: a re-index reads them, as an upload's
    await asyncio.to_thread(_write, ctx.upload_path(where.id, entry.id), data)
    outcome = await index_content(ctx, where, entry, document)
    return Added(entry.id, name, item.key, where.collection_name, where.id, outcome.status, outcome.chunks)


async def fetch_page(
    ctx: KbContext, url: str, *, allow_private: bool = False, render: bool = False
) -> tuple[SourceItem, Document]:
    """The one page at ``url`` as the web source reads it (a one-page crawl; its connections
    checked as a web source's are, unless ``allow_private`` or the ``crawl.allow_private`` setting;
    loaded in headless Chromium with ``render``)."""
    config: dict[str, object] = {"url": url, "max_depth": 0, "max_pages": 1}
    if allow_private:
        config["allow_private"] = True
    if render:
        config["render"] = True
    spec = SourceSpec(id="add-url", dataset_id="", kind=SourceKind.WEB, config=config)
    async with ctx.reader_for(spec) as reader:
        async for item in reader.scan():
            if isinstance(item, ItemFailure):
                raise _PAGE_FAILURES.get(item.code, PageFetchFailed)(f"{item.key}: {item.message}")
            content = await reader.load(item)
            if isinstance(content, Blob):  # the web reader hands out Documents; be safe anyway
                await reader.release(content)
                raise UnsupportedType(f"{item.key} is not an HTML or text page")
            return item, content
    raise UnsupportedType(f"{url[:200]} is not an HTML or text page (or it redirects elsewhere)")


async def _resolve(ctx: KbContext, principal: Principal, target: Target) -> Dataset | str:
    """The dataset ``target`` names (the key must be able to change it), or a raw collection."""
    if (target.dataset_id is None) == (target.collection is None):
        raise InvalidRequest("give either dataset_id or collection")
    if target.dataset_id is not None:
        chosen = await writable(principal, ctx.catalog, target.dataset_id)
        audit.note(tenant_id=chosen.tenant_id, dataset_id=chosen.id)
        return chosen
    collection = str(target.collection)
    found = _DATASET_COLLECTION.fullmatch(collection)
    if found is not None:
        dataset = await ctx.catalog.get_dataset(str(uuid.UUID(found.group(1))))
        if dataset is not None and dataset.collection_name == collection:
            named = await writable(principal, ctx.catalog, dataset.id)
            audit.note(tenant_id=named.tenant_id, dataset_id=named.id)
            return named
    if not principal.is_service:
        if not principal.can_write:
            raise Forbidden(f"role {principal.role!r} may read but not change datasets")
        raise NotFound(f"collection {collection!r} not found", hint="name one of your datasets")
    audit.note(collection=collection)
    return collection


async def _entry(
    ctx: KbContext, dataset: Dataset, file_id: str, name: str, size: int, item_key: str | None = None
) -> FileEntry:
    """The file's catalog record: the one added before under this id, else a new one."""
    now = time.time()
    entry = await ctx.catalog.get_file(file_id)
    if entry is None or entry.dataset_id != dataset.id:
        entry = FileEntry(id=file_id, dataset_id=dataset.id, name=name, created_at=now)
    return replace(entry, name=name, size=size, item_key=item_key, updated_at=now)


def _page_name(title: str) -> str:
    """A page's title as a file name: one line, no path separators, not too long."""
    flat = " ".join(title.replace("/", "-").replace("\\", "-").split())
    return clean_file_name(flat[:MAX_FILE_NAME] or "page")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
