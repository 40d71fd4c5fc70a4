"""The FastAPI application: ``create_app(settings)`` and nothing global.

Routes get the services through dependencies (``app.state.ragd``); tests pass
their own services factory instead of patching.  Small ASGI middlewares: one
collapses duplicate slashes (Open WebUI's deployed URL ends in ``/`` and it
appends ``/search``, so ``//search`` arrives), one checks the key and the JSON
size before a body is read (:mod:`ragd.api.gate`), one counts and times requests
per route template — never per raw path, which would carry ids; outermost, one refuses
foreign ``Host`` names and cross-site writes (:mod:`ragd.api.origin_guard`) and one times out
stalled bodies (:mod:`ragd.api.slow_clients`).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd import __version__
from ragd.api import errors
from ragd.api.audit_watch import AuditWatch
from ragd.api.auth import tenant_key_check
from ragd.api.gate import BodyGate
from ragd.api.halves import serve_only
from ragd.api.origin_guard import OriginGuard
from ragd.api.rates import RateGate
from ragd.api.routes import (
    audit,
    backup,
    chat,
    datasets,
    documents,
    evalsets,
    grants,
    health,
    ingest,
    jobs,
    limits,
    loader,
    migrations,
    models,
    pages,
    search,
    sessions,
    sources,
    stats,
    system,
    tenants,
    ui,
)
from ragd.api.routes.mcp_http import mcp_endpoint, mcp_route
from ragd.api.session_cookie import session_lookup
from ragd.api.slow_clients import BodyDeadline
from ragd.api.state import AppState, ServicesFactory
from ragd.bootstrap import chat_enabled, serve_services
from ragd.kb.auth_bursts import FailedAuthBursts
from ragd.observe.metrics import Metrics
from ragd.settings import Settings

_SLASHES = re.compile(r"/{2,}")


class CollapseSlashes:
    """Route ``//search`` (and any ``a//b``) as if it had single slashes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "//" in scope["path"]:
            path = _SLASHES.sub("/", scope["path"])
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)


class RequestMetrics:
    """``http_requests_total`` and ``http_request_duration_seconds`` by method and route template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.http_requests.labels(scope["method"], template, str(status)).inc()
            self.metrics.http_duration.labels(scope["method"], template).observe(
                time.perf_counter() - started
            )


def create_app(
    settings: Settings, factory: ServicesFactory | None = None, *, model_endpoints: bool = True
) -> FastAPI:
    """The ragd HTTP service; services are built in the background by ``factory``.

    ``model_endpoints``: serve ragd's models (``/v1/embeddings``, ``/embed``, ``/v1/rerank``,
    ``/v1/models/{id}``); ``ragd proxy`` leaves them to its upstream (``/v1/models/{id}`` still
    answers the models ``/v1/models`` lists)."""
    metrics = Metrics()
    state = AppState(settings=settings, metrics=metrics)
    mcp = mcp_endpoint(state)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state.start(factory or serve_services)
        try:
            async with mcp.run():
                yield
        finally:
            await state.stop()

    # FastAPI's /docs and /redoc pull script from a CDN: only when asked for (docs/security.md)
    docs = settings.server.api_docs_enabled
    app = FastAPI(
        title="ragd",
        version=__version__,
        lifespan=lifespan,
        docs_url="/docs" if docs else None,
        redoc_url="/redoc" if docs else None,
    )
    app.state.ragd = state
    errors.install(app)
    for router in (
        health.router,
        search.router,
        ingest.router,
        documents.router,
        datasets.router,
        pages.router,
        evalsets.router,
        migrations.router,
        sources.router,
        jobs.router,
        tenants.router,
        limits.router,
        sessions.router,
        audit.router,
        grants.router,
        loader.router,
        system.router,
        stats.router,
        backup.router,
    ):
        app.include_router(router)
    if model_endpoints:
        app.include_router(models.router)
    elif chat_enabled(settings):  # the listed models only: the upstream serves the embeddings
        app.include_router(models.listed_router)
    if chat_enabled(settings):
        app.include_router(chat.router)
    app.router.routes.append(mcp_route(mcp))  # the MCP server for agents (docs/mcp.md)
    if settings.server.ui_enabled:  # the web UI (docs/ui.md)
        app.include_router(ui.router)
        app.mount(f"{ui.PREFIX}/static", ui.static_app(), name="ui-static")
    if not settings.server.metrics_enabled:
        app.router.routes = [r for r in app.router.routes if getattr(r, "path", "") != "/metrics"]
    app.router.routes = serve_only(app.router.routes, settings.server.apis)  # RAGD_SERVER__APIS
    app.add_middleware(RateGate)  # a key over its rate: 429 before its body is read (ragd.api.rates)
    app.add_middleware(RequestMetrics, metrics=metrics)
    bursts = FailedAuthBursts(settings.audit.failed_auth_burst, settings.audit.failed_auth_window_s)
    app.add_middleware(AuditWatch, state=state, bursts=bursts)  # 401 bursts, the client address
    if settings.server.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.server.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
        )
    model_body_bytes = models.input_limits(settings.server).body_bytes
    app.add_middleware(
        BodyGate,
        settings=settings.server,
        file_routes={loader.PATH: settings.extract.max_file_bytes},
        keyless=(ui.PREFIX,),
        tenant_key=tenant_key_check(state),
        # ragd's own models' bodies: bounded by what their limits need (relayed upstream: not ours to bound)
        json_routes=dict.fromkeys(models.MODEL_ROUTES if model_endpoints else (), model_body_bytes),
    )
    app.add_middleware(CollapseSlashes)
    app.add_middleware(ui.UiHeaders)
    app.add_middleware(ui.SessionKey, lookup=session_lookup(state))  # the UI's session, before the gate
    app.add_middleware(BodyDeadline, timeout_s=settings.server.body_timeout_s)
    # outermost: a foreign Host or a cross-site write never reaches anything else
    app.add_middleware(
        OriginGuard, settings=settings.server, session_cookie=ui.COOKIE, browser_paths=(ui.PREFIX,)
    )
    return app
