"""``GET /api/v1/system``: what a client (the web UI) needs to know of this ragd, for any valid key.

    version, ready, ready_detail   the build, and what /health/ready says (null when ready)
    principal                      who the key is: tenant, role, service key or not, and
                                   ``open`` when the service has no key at all (any caller is it)
    manifest                       what the index was built with (the models, dimensions, chunker:
                                   the record a start-up checks, INDEX_MISMATCH when it differs)
    counts                         datasets, files, chunks, jobs by status the key can see
                                   (ragd.kb.overview); the service key also collections and points
    capabilities                   dense models a dataset may choose, rerankers, chat, modes, fusion,
                                   the longest query a search takes (max_query_chars)
    settings                       the service key only: every setting in effect, secrets "***"
    backups                        the service key only: backup dir, schedule, and the newest backup's
                                   outcome (docs/operations.md, "Backup and restore")

Before the services are up only the service key gets an answer (a tenant key is resolved in
the catalog): ``ready`` false, and null manifest, counts and capabilities.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from ragd import __version__
from ragd.api.auth import Caller
from ragd.api.deps import readiness
from ragd.api.settings_view import masked
from ragd.bootstrap import Services, chat_enabled
from ragd.bootstrap.backups import backup_status
from ragd.kb.overview import Overview, overview
from ragd.kb.search import MAX_QUERY_CHARS
from ragd.kb_types import Principal
from ragd.retrieve.agent import AgenticSearch
from ragd.settings import Settings
from ragd.store.manifest_io import manifest_to_dict
from ragd.types import SearchMode

router = APIRouter(prefix="/api/v1", tags=["system"])


@router.get("/system")
async def system(request: Request, caller: Caller) -> dict[str, Any]:
    state = request.app.state.ragd
    detail = await readiness(state)
    svc: Services | None = state.services
    out: dict[str, Any] = {
        "version": __version__,
        "ready": detail is None,
        "ready_detail": detail,
        "principal": await _principal(svc, caller, open_service=state.settings.server.api_key is None),
        "manifest": manifest_to_dict(svc.manifest) if svc is not None else None,
        "counts": _counts(await overview(svc.knowledge(), caller)) if svc and svc.kb else None,
        "capabilities": _capabilities(svc) if svc is not None else None,
    }
    if caller.is_service:
        out["settings"] = masked(state.settings)
        out["backups"] = await backup_status(svc) if svc is not None else None
    return out


async def _principal(svc: Services | None, caller: Principal, *, open_service: bool) -> dict[str, Any]:
    name = None
    if caller.tenant_id is not None and svc is not None and svc.kb is not None:
        tenants = await svc.kb.catalog.list_tenants()
        name = next((t.name for t in tenants if t.id == caller.tenant_id), None)
    return {
        "tenant_id": caller.tenant_id,
        "tenant_name": name,
        "role": caller.role,
        "service": caller.is_service,
        "open": open_service,
    }


def _counts(o: Overview) -> dict[str, Any]:
    out: dict[str, Any] = {
        "datasets": o.datasets,
        "files": o.files,
        "chunks": o.chunks,
        "jobs_by_status": {status.value: n for status, n in o.jobs_by_status.items()},
    }
    if o.collections is not None:
        out |= {"collections": o.collections, "points": o.points}
    return out


def _capabilities(svc: Services) -> dict[str, Any]:
    settings: Settings = svc.settings
    retrieval = settings.retrieval
    modes = [SearchMode.HYBRID, SearchMode.DENSE] + ([SearchMode.SPARSE] if svc.sparse else [])
    return {
        "embedders": list(svc.kb.embedding_names if svc.kb else ("default",)),
        "rerankers": list(svc.rerankers),
        "chat": chat_enabled(settings),
        "chat_model": settings.llm.model or None,
        "modes": [m.value for m in modes],
        "default_mode": retrieval.mode.value,
        "fusion": retrieval.fusion.value,
        "vector_weight": retrieval.vector_weight,
        "agentic": isinstance(svc.pipeline, AgenticSearch),
        "max_query_chars": MAX_QUERY_CHARS,
    }
