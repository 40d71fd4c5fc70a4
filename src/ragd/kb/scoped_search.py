"""One search over what a key may read: the collections or datasets it names, or all of them.

    tenant key   -> :func:`ragd.kb.search.search_datasets` over its readable datasets: the
                    ``dataset_ids`` named (one it may not read is NOT_FOUND, as on the dataset
                    API) plus those whose ``collection_name`` is among ``collections`` (any other
                    name drops out, exactly as an unknown one); nothing named: every dataset it
                    may read
    service key  -> the pipeline over the named collections (and the named datasets'), like
                    ``POST /search``; only datasets named: ``search_datasets`` (their reranker);
                    nothing named: every collection in the index

Collection names are only ever compared with the catalog's and the store's, never trusted.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragd.errors import InvalidRequest
from ragd.kb.access import readable_datasets, require_chunk_reader
from ragd.kb.context import KbContext
from ragd.kb.search import MAX_QUERY_CHARS, ScopedHits, filter_matched, search_datasets
from ragd.kb_types import Principal
from ragd.retrieve.pipeline import PipelineRequest, Searcher
from ragd.types import Hit, PointFilter, SearchKnobs, SearchMode

#: the payload key every chunk records its logical collection under
COLLECTION_KEY = "meta.collection_name"
#: at most this many collections in a search over "everything"
MAX_COLLECTIONS = 10_000


async def search_scoped(
    ctx: KbContext,
    searcher: Searcher,
    principal: Principal,
    query: str,
    *,
    collections: Sequence[str] = (),
    dataset_ids: Sequence[str] = (),
    k: int = 5,
    mode: SearchMode = SearchMode.HYBRID,
    knobs: SearchKnobs | None = None,
    deadline_s: float | None = None,
) -> tuple[Hit, ...]:
    found = await search_scoped_counted(
        ctx,
        searcher,
        principal,
        query,
        collections=collections,
        dataset_ids=dataset_ids,
        k=k,
        mode=mode,
        knobs=knobs,
        deadline_s=deadline_s,
    )
    return found.hits


async def search_scoped_counted(
    ctx: KbContext,
    searcher: Searcher,
    principal: Principal,
    query: str,
    *,
    collections: Sequence[str] = (),
    dataset_ids: Sequence[str] = (),
    k: int = 5,
    mode: SearchMode = SearchMode.HYBRID,
    knobs: SearchKnobs | None = None,
    deadline_s: float | None = None,
) -> ScopedHits:
    """:func:`search_scoped`, with ``filter_matched`` (a filter's count over what was searched)."""
    require_chunk_reader(principal)
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidRequest(f"a query is at most {MAX_QUERY_CHARS} characters")
    named = bool(collections or dataset_ids)
    where = knobs.where if knobs is not None else None
    if not principal.is_service or (dataset_ids and not collections):
        ids = await _dataset_ids(ctx, principal, collections, dataset_ids)
        if named and not ids:  # nothing named is readable: never widen to "everything"
            return ScopedHits((), (), await filter_matched(ctx, (), where))
        return await search_datasets(
            ctx,
            searcher,
            principal,
            query,
            dataset_ids=ids or None,
            k=k,
            mode=mode,
            deadline_s=deadline_s,
            knobs=knobs,
        )
    names = list(collections)
    if dataset_ids:
        names += [
            d.collection_name for d in await readable_datasets(principal, ctx.catalog, tuple(dataset_ids))
        ]
    if not names:
        names = list(await ctx.store.facet(COLLECTION_KEY, PointFilter(), limit=MAX_COLLECTIONS))
    matched = await filter_matched(ctx, names, where)
    if not names or not query.strip() or matched == 0:
        return ScopedHits((), (), matched)
    request = PipelineRequest(
        collections=tuple(dict.fromkeys(names)),
        queries=(query,),
        k=k,
        mode=mode,
        deadline_s=deadline_s,
        knobs=knobs or SearchKnobs(),
    )
    return ScopedHits((), (await searcher.run(request)).hits, matched)


async def _dataset_ids(
    ctx: KbContext, principal: Principal, collections: Sequence[str], dataset_ids: Sequence[str]
) -> tuple[str, ...]:
    ids = list(dataset_ids)
    if collections:
        wanted = set(collections)
        ids += [d.id for d in await readable_datasets(principal, ctx.catalog) if d.collection_name in wanted]
    return tuple(dict.fromkeys(ids))
