"""A dataset's migrations to another model or chunking (docs/knowledge-bases.md, "Migrations").

    POST /api/v1/datasets/{id}/migrations                   start one (admins; the service key): 202
    GET  /api/v1/datasets/{id}/migrations                   its migrations, newest first
    GET  /api/v1/datasets/{id}/migrations/{mid}             one, with its job's progress
    POST /api/v1/datasets/{id}/migrations/{mid}/switch      serve the new version ({"override": true}
                                                            for one held by its evaluation or failures)
    POST /api/v1/datasets/{id}/migrations/{mid}/rollback    serve the old version again, at once
    POST /api/v1/datasets/{id}/migrations/{mid}/cancel      stop one that has not switched

The migration's job (kind ``migrate``) is a job like any other: progress, rate and ETA, its events
on ``/api/v1/jobs/events``, cancel and retry on ``/api/v1/jobs/{id}``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.api.kb_schemas import ChunkingBody, job_out
from ragd.bootstrap import Services
from ragd.kb import migrations
from ragd.kb_types import Migration, MigrationState, VersionSpec

router = APIRouter(prefix="/api/v1", tags=["migrations"])
Svc = Annotated[Services, Depends(services)]


class MigrationBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    embedding: str | None = Field(
        None,
        max_length=200,
        description="the dense model to move to: a configured name, or 'default' (omit: keep)",
    )
    chunking: ChunkingBody | None = Field(None, description="the chunking to move to (omit: keep)")
    auto_switch: bool = Field(True, description="switch as soon as the new version is complete and passes")
    max_regression: float | None = Field(
        None,
        ge=0,
        le=1,
        description="the nDCG@10 drop a switch accepts (omit: RAGD_MIGRATIONS__MAX_REGRESSION)",
    )


class SwitchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    override: bool = Field(False, description="serve it although its evaluation or failed files held it")


def version_out(v: VersionSpec) -> dict[str, Any]:
    c = v.chunking
    return {
        "generation": v.generation,
        "embedding": v.embedding or "default",
        "chunking": {
            "strategy": c.strategy.value if c.strategy else None,
            "size": c.size,
            "overlap": c.overlap,
        },
    }


def migration_out(m: Migration, job: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": m.id,
        "dataset_id": m.dataset_id,
        "state": m.state.value,
        "source": version_out(m.source),
        "target": version_out(m.target),
        "serving": "target" if m.state is MigrationState.SWITCHED else "source",
        "job_id": m.job_id,
        "auto_switch": m.auto_switch,
        "max_regression": m.max_regression,
        "held": m.held,
        "failed_files": m.failed_files,
        "reports": dict(m.reports),
        "error": {"code": m.error_code, "message": m.error_message} if m.error_code else None,
        "message": m.error_message,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "switched_at": m.switched_at,
        "rolled_back_at": m.rolled_back_at,
        "retain_until": m.retain_until,
        "removed_at": m.removed_at,
    }
    if job is not None:
        out["job"] = job
    return out


async def _with_job(svc: Services, m: Migration) -> dict[str, Any]:
    job = await svc.knowledge().catalog.get_job(m.job_id) if m.job_id else None
    return migration_out(m, job_out(job) if job is not None else None)


@router.post("/datasets/{dataset_id}/migrations", status_code=202)
async def start(dataset_id: str, body: MigrationBody, caller: Caller, svc: Svc) -> dict[str, Any]:
    started = await migrations.start_migration(
        svc.knowledge(),
        caller,
        dataset_id,
        embedding=body.embedding,
        chunking=body.chunking.spec() if body.chunking is not None else None,
        auto_switch=body.auto_switch,
        max_regression=body.max_regression,
    )
    return await _with_job(svc, started)


@router.get("/datasets/{dataset_id}/migrations")
async def list_all(dataset_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    found = await migrations.list_migrations(svc.knowledge(), caller, dataset_id)
    return {"migrations": [migration_out(m) for m in found]}


@router.get("/datasets/{dataset_id}/migrations/{migration_id}")
async def get_one(dataset_id: str, migration_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    found = await migrations.get_migration(svc.knowledge(), caller, dataset_id, migration_id)
    return await _with_job(svc, found)


@router.post("/datasets/{dataset_id}/migrations/{migration_id}/switch")
async def switch(
    dataset_id: str, migration_id: str, caller: Caller, svc: Svc, body: SwitchBody | None = None
) -> dict[str, Any]:
    override = body.override if body is not None else False
    done = await migrations.switch_migration(
        svc.knowledge(), caller, dataset_id, migration_id, override=override
    )
    return migration_out(done)


@router.post("/datasets/{dataset_id}/migrations/{migration_id}/rollback")
async def rollback(dataset_id: str, migration_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return migration_out(
        await migrations.rollback_migration(svc.knowledge(), caller, dataset_id, migration_id)
    )


@router.post("/datasets/{dataset_id}/migrations/{migration_id}/cancel")
async def cancel(dataset_id: str, migration_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return migration_out(await migrations.cancel_migration(svc.knowledge(), caller, dataset_id, migration_id))
