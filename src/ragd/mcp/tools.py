"""The tools an agent gets: each parses its arguments, calls one use-case, and shapes the result.

    search           -> kb.scoped_search.search_scoped_counted  (the one search pipeline)
    list_collections -> kb.reach.list_reach
    read_document    -> kb.reach.check_collection, then answer.documents.read_document
    add_text         -> kb.quick_add.add_text           (writers only)
    add_url          -> kb.quick_add.add_url            (writers only)

Who acts (a :class:`~ragd.kb_types.Principal`) comes from the transport, never from arguments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ragd.answer.documents import read_document
from ragd.bootstrap import Services
from ragd.errors import NotFound
from ragd.kb.access import dataset_refs
from ragd.kb.datasets import list_datasets
from ragd.kb.quick_add import Target, add_text, add_url
from ragd.kb.reach import check_collection, list_reach
from ragd.kb.scoped_search import search_scoped_counted
from ragd.kb_types import Principal, RateSurface
from ragd.mcp.schemas import (
    AddResult,
    AddTextArgs,
    AddUrlArgs,
    CollectionsResult,
    DocumentPage,
    HitView,
    ListCollectionsArgs,
    ReadDocumentArgs,
    SearchArgs,
    SearchResult,
)
from ragd.retrieve.filters import parse_filter
from ragd.types import SearchKnobs, SearchMode


async def search(svc: Services, caller: Principal, args: SearchArgs) -> SearchResult:
    await svc.check_rate(caller, RateSurface.SEARCH)  # the key's searches per minute, as on /search
    kb = svc.knowledge()
    found = await search_scoped_counted(
        kb,
        svc.pipeline,
        caller,
        args.query,
        collections=args.collections or (),
        dataset_ids=await dataset_refs(caller, kb.catalog, args.datasets or ()),  # ids or names
        k=args.k,
        mode=SearchMode.parse(args.mode),
        knobs=SearchKnobs(min_score=args.min_score, where=parse_filter(args.filter)),
        deadline_s=svc.settings.server.search_timeout_s,
    )
    names = {d.collection_name: d.name for d in await list_datasets(kb, caller)} if found.hits else {}
    hits = [HitView.of(n, hit, names) for n, hit in enumerate(found.hits, 1)]
    return SearchResult(query=args.query, hits=hits, filter_matched=found.filter_matched)


async def list_collections(svc: Services, caller: Principal, _args: ListCollectionsArgs) -> CollectionsResult:
    return CollectionsResult.of(await list_reach(svc.knowledge(), caller))


async def read(svc: Services, caller: Principal, args: ReadDocumentArgs) -> DocumentPage:
    await check_collection(svc.knowledge(), caller, args.collection)
    versions = await svc.spaces.versions() if svc.spaces is not None else {}
    version = versions.get(args.collection)  # a migrating dataset: the version searches read
    generation = None if version is None else version.generation
    document = await read_document(svc.store, args.collection, args.file_id, generation=generation)
    if document is None:
        raise NotFound(f"no document {args.file_id!r} in collection {args.collection!r}")
    start = min(args.offset, len(document.text))
    end = min(len(document.text), start + args.limit)
    return DocumentPage(
        collection=args.collection,
        file_id=document.file_id,
        name=document.name,
        source=document.source,
        total_chars=len(document.text),
        offset=start,
        text=document.text[start:end],
        next_offset=end if end < len(document.text) else None,
    )


async def text(svc: Services, caller: Principal, args: AddTextArgs) -> AddResult:
    target = Target(dataset_id=args.dataset_id, collection=args.collection)
    return AddResult.of(await add_text(svc.knowledge(), caller, target, args.name, args.text))


async def url(svc: Services, caller: Principal, args: AddUrlArgs) -> AddResult:
    target = Target(dataset_id=args.dataset_id, collection=args.collection)
    allow_private = svc.settings.crawl.allow_private
    added = await add_url(
        svc.knowledge(), caller, target, args.url, allow_private=allow_private, render=args.render
    )
    return AddResult.of(added)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    args: type[BaseModel]
    result: type[BaseModel]
    run: Callable[[Services, Principal, Any], Awaitable[BaseModel]]
    #: only keys that may change datasets see and run it
    writes: bool = False


TOOLS = (
    ToolSpec(
        "search",
        "Search the knowledge base: hybrid (dense + keyword) retrieval, reranked. Returns the best "
        "passages with their source, page, relevance in [0, 1] and a citation label ([1], [2]…) to "
        "cite them by. Without collections or datasets it searches everything you may read.",
        SearchArgs,
        SearchResult,
        search,
    ),
    ToolSpec(
        "list_collections",
        "List what you can search: your datasets (id, name, collection_name, chunk count) and, "
        "with the service key, every collection of the index.",
        ListCollectionsArgs,
        CollectionsResult,
        list_collections,
    ),
    ToolSpec(
        "read_document",
        "Read a whole indexed document (a search hit's collection and file_id), a page of "
        "characters at a time: pass next_offset as offset to read on.",
        ReadDocumentArgs,
        DocumentPage,
        read,
    ),
    ToolSpec(
        "add_text",
        "Add a text (Markdown or plain) as a file to a dataset or collection and index it now; "
        "adding the same name again replaces it.",
        AddTextArgs,
        AddResult,
        text,
        writes=True,
    ),
    ToolSpec(
        "add_url",
        "Fetch one web page (robots.txt honoured) and index its text into a dataset or "
        "collection; adding the same URL again replaces it.",
        AddUrlArgs,
        AddResult,
        url,
        writes=True,
    ),
)
BY_NAME = {spec.name: spec for spec in TOOLS}
