"""What a key can see, counted: datasets, files, chunks and jobs (``GET /api/v1/system``).

    tenant key   -> the datasets its role may read, their files and chunks (catalog counts), and
                    its tenant's jobs (a reader's: those of datasets it may read, or of none)
    service key  -> every dataset, file and job, and the store's collections and points

One aggregate query per kind (datasets' files, jobs); the store's numbers come from one facet
and one exact count, never from listing points.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ragd.kb.context import KbContext
from ragd.kb.datasets import list_datasets
from ragd.kb.scoped_search import COLLECTION_KEY, MAX_COLLECTIONS
from ragd.kb_types import JobStatus, Principal
from ragd.types import PointFilter


@dataclass(frozen=True, slots=True)
class Overview:
    datasets: int
    files: int
    chunks: int
    jobs_by_status: dict[JobStatus, int]
    #: the service key only: logical collections and points in the store
    collections: int | None = None
    points: int | None = None


async def overview(ctx: KbContext, principal: Principal) -> Overview:
    datasets = await list_datasets(ctx, principal)
    ids = [d.id for d in datasets]
    if principal.is_service:
        stats = await ctx.catalog.dataset_stats(None)
        jobs = await ctx.catalog.count_jobs()
    else:
        stats = await ctx.catalog.dataset_stats(ids) if ids else {}
        jobs = await ctx.catalog.count_jobs(
            principal.tenant_id, dataset_ids=None if principal.can_write else ids
        )
    counted = Overview(
        datasets=len(datasets),
        files=sum(s.files for s in stats.values()),
        chunks=sum(s.chunks for s in stats.values()),
        jobs_by_status=jobs,
    )
    if not principal.is_service:
        return counted
    collections = await ctx.store.facet(COLLECTION_KEY, PointFilter(), limit=MAX_COLLECTIONS)
    points = await ctx.store.count(PointFilter())
    return replace(counted, collections=len(collections), points=points)
