"""Search scoped by the key: one dataset, some, or every dataset the key may read.

The collection names searched come from the catalog (the datasets this
principal may read, ``allowed_roles`` applied), never from the request;
disabled files are excluded by the store.  A request that does not choose a
reranker gets the datasets' own (:func:`datasets_reranker`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ragd.errors import InvalidRequest
from ragd.kb.access import readable_datasets, require_chunk_reader
from ragd.kb.context import KbContext
from ragd.kb_types import Dataset, Principal
from ragd.retrieve.pipeline import PipelineRequest, Searcher
from ragd.types import CollectionVersion, Hit, MetaFilter, PointFilter, SearchKnobs, SearchMode

MAX_QUERY_CHARS = 2000


@dataclass(frozen=True, slots=True)
class ScopedHits:
    datasets: tuple[Dataset, ...]
    hits: tuple[Hit, ...]
    #: with a filter: how many chunks of the searched datasets it admits (0: "matched nothing")
    filter_matched: int | None = None


async def filter_matched(ctx: KbContext, collections: Sequence[str], where: MetaFilter | None) -> int | None:
    """How many chunks of ``collections`` the user's filter admits (an exact count, the same filter
    the search ran with, scope ANDed); None without a filter.  Disabled files' chunks count too."""
    if where is None:
        return None
    if not collections:
        return 0
    return await ctx.store.count(PointFilter(collection_names=tuple(dict.fromkeys(collections)), where=where))


async def search_datasets(
    ctx: KbContext,
    searcher: Searcher,
    principal: Principal,
    query: str,
    *,
    dataset_ids: tuple[str, ...] | None = None,
    k: int = 5,
    mode: SearchMode = SearchMode.HYBRID,
    deadline_s: float | None = None,
    knobs: SearchKnobs | None = None,
    versions: Mapping[str, CollectionVersion] | None = None,
) -> ScopedHits:
    """``versions``: read these versions of the datasets' collections (a migration's evaluation)."""
    require_chunk_reader(principal)
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidRequest(f"a query is at most {MAX_QUERY_CHARS} characters")
    datasets = await readable_datasets(principal, ctx.catalog, dataset_ids)
    knobs = knobs or SearchKnobs()
    matched = await filter_matched(ctx, [d.collection_name for d in datasets], knobs.where)
    if not datasets or not query.strip() or matched == 0:
        return ScopedHits(tuple(datasets), (), matched)
    if knobs.rerank is None:
        knobs = replace(knobs, rerank=datasets_reranker(datasets))
    request = PipelineRequest(
        collections=tuple(d.collection_name for d in datasets),
        queries=(query,),
        k=k,
        mode=mode,
        deadline_s=deadline_s,
        knobs=knobs,
        versions=versions,
    )
    result = await searcher.run(request)
    return ScopedHits(tuple(datasets), result.hits, matched)


def datasets_reranker(datasets: Sequence[Dataset]) -> str | None:
    """The reranker a search over ``datasets`` runs when the request does not choose: theirs when
    they all name the same one, else the service's default (None)."""
    chosen = {d.reranker for d in datasets}
    return chosen.pop() if len(chosen) == 1 else None
