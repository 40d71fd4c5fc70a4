"""``/health`` (liveness; ``/ragproxy/health`` too), ``/health/ready`` (model loaded, store and
catalog answering), ``/metrics``.

``/health`` answers 503 once start-up has failed for good (the store is locked, a setting is
wrong, the model is missing): a process that cannot serve must not look alive.  ``ragd serve``
exits non-zero in that case anyway.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse

from ragd.api.auth import Authorized
from ragd.api.deps import readiness

router = APIRouter()


@router.get("/health")
@router.head("/health", include_in_schema=False)
@router.get("/ragproxy/health", include_in_schema=False)
@router.head("/ragproxy/health", include_in_schema=False)
async def health(request: Request) -> JSONResponse:
    """``status`` (the reference services' field), and ragproxy's ``ok`` and ``model`` (the dense
    model ``/embed`` and ``/ragproxy/embed`` serve), for ragproxy's clients on either path."""
    state = request.app.state.ragd
    model = state.settings.embedding.model
    if state.startup_error is not None:
        body = {"status": "error", "detail": "ragd failed to start", "ok": False, "model": model}
        return JSONResponse(body, status_code=503)
    return JSONResponse({"status": "ok", "ok": True, "model": model})


@router.get("/health/ready")
async def ready(request: Request) -> JSONResponse:
    detail = await readiness(request.app.state.ragd)
    if detail is not None:
        return JSONResponse({"status": "error", "detail": detail}, status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/metrics", dependencies=[Authorized], include_in_schema=False)
async def metrics(request: Request) -> Response:
    state = request.app.state.ragd
    if not state.settings.server.metrics_enabled:
        raise HTTPException(status_code=404, detail="Not Found")
    if state.services is not None:  # each tenant's use against its limits, read now
        await state.services.refresh_tenant_metrics()
    return Response(state.metrics.render(), media_type=state.metrics.content_type)
