"""``GET /api/v1/stats``: what ``ragd stats`` shows, for the service key: the index manifest and, per
collection, its files and chunks (:func:`ragd.ingest.inventory.inventory`, the same function)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from ragd.api.auth import Caller
from ragd.api.deps import services
from ragd.bootstrap import Services
from ragd.errors import Forbidden
from ragd.ingest.inventory import inventory
from ragd.store.manifest_io import manifest_to_dict

router = APIRouter(prefix="/api/v1", tags=["system"])


@router.get("/stats")
async def stats(caller: Caller, svc: Annotated[Services, Depends(services)]) -> dict[str, Any]:
    if not caller.is_service:
        raise Forbidden("the index's statistics are for the service key (RAGD_SERVER__API_KEY)")
    held = await inventory(svc.store)
    return {
        "manifest": manifest_to_dict(svc.manifest),
        "collections": [
            {"name": name, "files": held.files.get(name, 0), "chunks": chunks}
            for name, chunks in sorted(held.chunks.items())
        ],
        "chunks": held.total,
    }
