"""``ragd proxy``: the usual service (:func:`ragd.api.app.create_app`) over one watched folder, plus

    GET  /files      the folder's files: path, file id, status, chunks; and the state of the sync
    POST /reindex    sync the folder now (``?force=true``: re-index unchanged files too); the counts
    GET  /health     status; with the key (or on an open loopback proxy) the folder and the
                     configuration in effect, every secret shown as ``"***"``
    any other path   relayed to the upstream byte for byte (``/v1/…`` under its base URL)

Chat requests for any model retrieve from the folder's collection (``RAGD_CHAT__DEFAULT_COLLECTION``,
set by :func:`proxy_settings`); ``rag/<collection>`` models and the rest of ragd's API work as usual.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask

from ragd.api.app import create_app
from ragd.api.auth import Authorized
from ragd.api.deps import services
from ragd.api.proxy_views import file_view, outcome_view, public_settings, sync_view
from ragd.bootstrap import Services
from ragd.bootstrap.proxy import FolderProxy, proxy_services
from ragd.errors import NotFound, NotReady, PayloadTooLarge, UpstreamFailed
from ragd.ingest.mirror import FolderMirror
from ragd.llm.base import Forwarded
from ragd.settings import ChatSettings, LlmSettings, Settings
from ragd.types import PointFilter

log = logging.getLogger(__name__)
router = APIRouter()
relay_router = APIRouter()

MAX_RELAY_BYTES = 64 * 1024 * 1024
MAX_FILES = 1_000_000
RELAYED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def proxy_settings(
    settings: Settings, *, upstream: str, collection: str, model: str | None = None
) -> Settings:
    """``settings`` for a proxy: the chat proxy on, over ``upstream`` (``model``: the default model,
    else RAGD_LLM__MODEL's), retrieving from ``collection`` for every model; no web UI (``/`` and
    every path no proxy route answers go to the upstream)."""
    llm = {**settings.llm.model_dump(), "base_url": upstream} | ({"model": model} if model else {})
    chat = {**settings.chat.model_dump(), "enabled": True, "default_collection": collection}
    return settings.model_copy(
        update={
            "llm": LlmSettings.model_validate(llm),
            "chat": ChatSettings.model_validate(chat),
            "server": settings.server.model_copy(update={"ui_enabled": False}),
        }
    )


def create_proxy_app(settings: Settings, proxy: FolderProxy) -> FastAPI:
    """``create_app`` with the folder mirrored; this module's routes first (its ``/health`` wins),
    the relay last (it answers only what no other route does)."""
    app = create_app(settings, proxy_services(proxy), model_endpoints=False)  # relayed upstream
    app.state.proxy = proxy
    app.state.ragd.pending = proxy.pending  # /health/ready: 503 "syncing" until the first sync ends
    before = len(app.router.routes)
    app.include_router(router)
    added = app.router.routes[before:]
    del app.router.routes[before:]
    app.router.routes[0:0] = added
    app.include_router(relay_router)
    return app


def _mirror(request: Request) -> FolderMirror:
    mirror: FolderMirror | None = request.app.state.proxy.mirror
    if mirror is None:
        raise NotReady("ragd is still starting (loading the model, opening the index)")
    return mirror


@router.get("/files", dependencies=[Authorized])
async def files(request: Request, svc: Annotated[Services, Depends(services)]) -> dict[str, Any]:
    mirror = _mirror(request)
    scope = PointFilter(collection_names=(mirror.collection,))
    counts = await svc.store.facet("meta.file_id", scope, limit=MAX_FILES)
    listed = [file_view(report, counts) for report in mirror.files()]
    return {
        "folder": str(mirror.folder.resolve()),
        "collection": mirror.collection,
        "sync": sync_view(mirror),
        "files": listed,
        "total": len(listed),
    }


@router.post("/reindex", dependencies=[Authorized, Depends(services)])
async def reindex(request: Request, force: bool = False) -> dict[str, Any]:
    """Sync the folder now (after the sync under way, if any) and answer what it did."""
    outcome = await _mirror(request).sync(force=force)
    return {"status": "ok", **outcome_view(outcome)}


@router.get("/health")
@router.head("/health", include_in_schema=False)
async def proxy_health(request: Request) -> JSONResponse:
    state = request.app.state.ragd
    if state.startup_error is not None:
        return JSONResponse({"status": "error", "detail": "ragd failed to start"}, status_code=503)
    body: dict[str, Any] = {"status": "ok" if state.services is not None else "starting"}
    if _shows_config(request, state.settings):
        proxy: FolderProxy = request.app.state.proxy
        body |= {
            "folder": str(proxy.folder.resolve()),
            "collection": proxy.collection,
            "sync": sync_view(proxy.mirror),
            "config": public_settings(state.settings),
        }
    return JSONResponse(body)


@relay_router.api_route(
    "/{path:path}", methods=RELAYED_METHODS, include_in_schema=False, dependencies=[Authorized]
)
async def relay(request: Request, svc: Annotated[Services, Depends(services)]) -> Response:
    """Every path no route of ragd's answers goes to the upstream as it came."""
    if svc.upstream is None:
        raise NotFound("no upstream to relay to", hint="ragd proxy --upstream URL")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_RELAY_BYTES:
        raise PayloadTooLarge(f"request body exceeds {MAX_RELAY_BYTES} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_RELAY_BYTES:
            raise PayloadTooLarge(f"request body exceeds {MAX_RELAY_BYTES} bytes")
    raw_path: bytes = request.scope.get("raw_path") or request.scope["path"].encode()
    query: bytes = request.scope.get("query_string", b"")
    target = (raw_path + (b"?" + query if query else b"")).decode("latin-1")
    forwarded = await svc.upstream.relay(request.method, target, bytes(body), request.headers)
    return StreamingResponse(
        _relayed(forwarded),
        status_code=forwarded.status,
        headers=dict(forwarded.headers),
        background=BackgroundTask(forwarded.aclose),
    )


async def _relayed(forwarded: Forwarded) -> AsyncIterator[bytes]:
    try:
        async for chunk in forwarded.body:
            yield chunk
    except UpstreamFailed as exc:  # the status line is out: all that is left is to stop
        log.warning("relayed response broke off: %s", exc.code)
    finally:
        await forwarded.aclose()


def _shows_config(request: Request, settings: Settings) -> bool:
    """The configuration is for the key holder (anyone, on an open loopback proxy)."""
    expected = settings.server.api_key
    if expected is None:
        return True
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    given = token.strip().encode("utf-8", "surrogateescape")
    return scheme.lower() == "bearer" and hmac.compare_digest(given, expected.get_secret_value().encode())
