"""``/health`` (liveness), ``/health/ready`` (model loaded and store answering), ``/metrics``."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse

from ragd.api.auth import Authorized

log = logging.getLogger(__name__)
router = APIRouter()

READY_PROBE_TIMEOUT_S = 5.0


@router.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


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
    return JSONResponse({"status": "ok"})


@router.get("/metrics", dependencies=[Authorized], include_in_schema=False)
async def metrics(request: Request) -> Response:
    state = request.app.state.ragd
    if not state.settings.server.metrics_enabled:
        raise HTTPException(status_code=404, detail="Not Found")
    return Response(state.metrics.render(), media_type=state.metrics.content_type)
