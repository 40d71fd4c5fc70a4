"""Sources that keep a dataset in sync: a watched folder, a crawled site, an S3 prefix.

POST/GET   /api/v1/datasets/{id}/sources               add (syncs at once) / list
POST       /api/v1/datasets/{id}/sources/{source}/sync  sync now (409 SOURCE_DISABLED when disabled)
POST       /api/v1/datasets/{id}/sources/{source}/enable  check a disabled source against its
                                                          tenant's grants again (admin)
DELETE     /api/v1/datasets/{id}/sources/{source}       remove, with the files it brought in
PUT/DELETE /api/v1/datasets/{id}/sources/{source}/schedule  set / clear its schedule (admin)
POST       /api/v1/datasets/{id}/sources/{source}/pause   keep the schedule, fire nothing (admin)
POST       /api/v1/datasets/{id}/sources/{source}/resume  fire again from the next slot (admin)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.api.kb_schemas import ScheduleBody, SourceCreate, job_out, source_out
from ragd.bootstrap import Services
from ragd.bootstrap.knowledge import schedule_rules
from ragd.kb import schedules
from ragd.kb import sources as src

router = APIRouter(prefix="/api/v1/datasets/{dataset_id}/sources", tags=["knowledge bases"])
Svc = Annotated[Services, Depends(services)]


@router.post("", status_code=202)
async def add_source(dataset_id: str, body: SourceCreate, caller: Caller, svc: Svc) -> dict[str, Any]:
    spec, job = await src.add_source(
        svc.knowledge(),
        caller,
        dataset_id,
        body.kind,
        body.config,
        folder_roots=list(svc.settings.catalog.folder_roots),
        allow_private=svc.settings.crawl.allow_private,
        allowed_buckets=svc.settings.s3.allowed_buckets,
    )
    svc.wake_worker()
    return {"source": source_out(spec), "job": job_out(job)}


@router.get("")
async def list_sources(dataset_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return {"sources": [source_out(s) for s in await src.list_sources(svc.knowledge(), caller, dataset_id)]}


@router.post("/{source_id}/sync", status_code=202)
async def sync_source(dataset_id: str, source_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    job = await src.sync_source(svc.knowledge(), caller, dataset_id, source_id)
    svc.wake_worker()
    return {"job": job_out(job)}


@router.post("/{source_id}/enable")
async def enable_source(dataset_id: str, source_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    spec = await src.enable_source(svc.knowledge(), caller, dataset_id, source_id)
    svc.wake_worker()
    return {"source": source_out(spec)}


@router.delete("/{source_id}")
async def remove_source(dataset_id: str, source_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    files = await src.remove_source(svc.knowledge(), caller, dataset_id, source_id)
    return {"deleted": True, "id": source_id, "files_deleted": files}


@router.put("/{source_id}/schedule")
async def set_schedule(
    dataset_id: str, source_id: str, body: ScheduleBody, caller: Caller, svc: Svc
) -> dict[str, Any]:
    rules = schedule_rules(svc.settings)
    wanted = body.model_dump(exclude_none=True)
    spec = await schedules.set_schedule(svc.knowledge(), caller, dataset_id, source_id, wanted, rules)
    return {"source": source_out(spec)}


@router.delete("/{source_id}/schedule")
async def clear_schedule(dataset_id: str, source_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    rules = schedule_rules(svc.settings)
    spec = await schedules.set_schedule(svc.knowledge(), caller, dataset_id, source_id, None, rules)
    return {"source": source_out(spec)}


@router.post("/{source_id}/pause")
async def pause_source(dataset_id: str, source_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return {"source": source_out(await schedules.pause(svc.knowledge(), caller, dataset_id, source_id))}


@router.post("/{source_id}/resume")
async def resume_source(dataset_id: str, source_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    rules = schedule_rules(svc.settings)
    return {
        "source": source_out(await schedules.resume(svc.knowledge(), caller, dataset_id, source_id, rules))
    }
