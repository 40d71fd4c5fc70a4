"""``/health`` (liveness), ``/health/ready`` (model loaded, store and catalog answering), ``/metrics``.

``/health`` answers 503 once start-up has failed for good (the store is locked, a setting is
wrong, the model is missing): a process that cannot serve must not look alive.  ``ragd serve``
exits non-zero in that case anyway.
"""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse

from ragd.api.auth import Authorized
from ragd.catalog.base import Catalog

log = logging.getLogger(__name__)
router = APIRouter()

READY_PROBE_TIMEOUT_S = 5.0


@router.get("/health")
@router.head("/health", include_in_schema=False)
async def health(request: Request) -> JSONResponse:
    if request.app.state.ragd.startup_error is not None:
        return JSONResponse({"status": "error", "detail": "ragd failed to start"}, status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/health/ready")
async def ready(request: Request) -> JSONResponse:
    state = request.app.state.ragd
    services = state.services
    if services is None:
        detail = "pipeline failed to start" if state.startup_error else "pipeline not warmed up yet"
        return JSONResponse({"status": "error", "detail": detail}, status_code=503)
    try:
        async with asyncio.timeout(READY_PROBE_TIMEOUT_S):
            answering = await services.store.ready()
    except Exception as exc:  # a probe must answer, whatever the store raised
        log.warning("readiness probe: store check failed: %s", type(exc).__name__)
        answering = False
    if not answering:
        return JSONResponse({"status": "error", "detail": "qdrant unreachable"}, status_code=503)
    if services.kb is not None and not await _catalog_answers(services.kb.catalog):
        return JSONResponse({"status": "error", "detail": "catalog unreachable"}, status_code=503)
    return JSONResponse({"status": "ok"})


async def _catalog_answers(catalog: Catalog) -> bool:
    """One cheap read (a dataset that cannot exist) against the catalog's database."""
    try:
        async with asyncio.timeout(READY_PROBE_TIMEOUT_S):
            await catalog.get_dataset("ragd-readiness-probe")
    except Exception as exc:  # a probe must answer, whatever the database raised
        log.warning("readiness probe: catalog check failed: %s", type(exc).__name__)
        return False
    return True


@router.get("/metrics", dependencies=[Authorized], include_in_schema=False)
async def metrics(request: Request) -> Response:
    state = request.app.state.ragd
    if not state.settings.server.metrics_enabled:
        raise HTTPException(status_code=404, detail="Not Found")
    return Response(state.metrics.render(), media_type=state.metrics.content_type)
