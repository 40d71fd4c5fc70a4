"""What a key can reach, listed for an agent: its datasets and collections, with chunk counts.

    tenant key   -> the datasets its role may read (no raw collections)
    service key  -> every dataset, and every collection in the index (a dataset's too, marked)

Counts come from one store facet on ``meta.collection_name`` (chunks, disabled ones included),
never from listing files.  :func:`check_collection` is the read check of one collection: a
collection a tenant key may not read is NOT_FOUND, exactly like one that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragd.errors import NotFound
from ragd.kb.access import require_chunk_reader, searchable_collections
from ragd.kb.context import KbContext
from ragd.kb.datasets import list_datasets
from ragd.kb.scoped_search import COLLECTION_KEY, MAX_COLLECTIONS
from ragd.kb_types import Dataset, Principal
from ragd.types import PointFilter


@dataclass(frozen=True, slots=True)
class CollectionCount:
    name: str
    chunks: int
    #: the dataset the collection belongs to, None for a raw collection
    dataset_id: str | None = None


@dataclass(frozen=True, slots=True)
class Reach:
    datasets: tuple[tuple[Dataset, int], ...]
    #: the service key only: every collection of the index
    collections: tuple[CollectionCount, ...] = ()


async def list_reach(ctx: KbContext, principal: Principal) -> Reach:
    datasets = await list_datasets(ctx, principal)
    if principal.is_service:
        counts = await ctx.store.facet(COLLECTION_KEY, PointFilter(), limit=MAX_COLLECTIONS)
    elif datasets:
        names = tuple(d.collection_name for d in datasets)
        counts = await ctx.store.facet(COLLECTION_KEY, PointFilter(collection_names=names), limit=len(names))
    else:
        counts = {}
    owner = {d.collection_name: d.id for d in datasets}
    collections = (
        tuple(CollectionCount(name, n, owner.get(name)) for name, n in sorted(counts.items()))
        if principal.is_service
        else ()
    )
    return Reach(tuple((d, counts.get(d.collection_name, 0)) for d in datasets), collections)


async def check_collection(ctx: KbContext, principal: Principal, collection: str) -> None:
    """NOT_FOUND unless ``principal`` may read ``collection`` (the service key reads every one);
    INGEST_ONLY for an ingestion-scoped key."""
    require_chunk_reader(principal)
    if not await searchable_collections(principal, ctx.catalog, [collection]):
        raise NotFound(f"collection {collection!r} not found")
