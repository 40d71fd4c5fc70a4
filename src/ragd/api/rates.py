"""Requests per minute and key (``RAGD_LIMITS__*_PER_MINUTE``, per-tenant overrides), counted
before the request's body is read.

:class:`RateGate` (ASGI middleware) counts every POST to a path of :data:`COUNTED`: it resolves
the key as the route would (:func:`ragd.api.auth.principal`: a bearer key or the UI's session)
and counts it on the path's surface; over the rate it answers 429 ``RATE_LIMITED`` with
``Retry-After`` in the surface's error shape (OpenAI's on ``/v1``), and the body is never read —
FastAPI reads and parses a route's body before the route's dependencies run, so a dependency would
come too late.  A request whose key does not resolve passes on untouched: the route answers its
401 as usual.  MCP's ``search`` tool counts in the tool (``ragd.mcp.tools``).
"""

from __future__ import annotations

import re

from fastapi import HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from ragd.api import errors
from ragd.api.auth import principal
from ragd.errors import RagError, RateLimited
from ragd.kb_types import RateSurface

#: the counted routes (all POST), by path: ``tests/api/test_rate_gate.py`` checks each is served
COUNTED: tuple[tuple[re.Pattern[str], RateSurface], ...] = (
    (re.compile(r"/search|/api/v1/search|/api/v1/datasets/[^/]+/search"), RateSurface.SEARCH),
    (re.compile(r"/v1/chat/completions"), RateSurface.CHAT),
    (re.compile(r"/v1/embeddings|/embed|/v1/rerank"), RateSurface.MODELS),
)


def surface_of(method: str, path: str) -> RateSurface | None:
    """The surface a request counts on, or None (not a counted route)."""
    if method != "POST":
        return None
    for pattern, surface in COUNTED:
        if pattern.fullmatch(path):
            return surface
    return None


def _credentials(request: Request) -> HTTPAuthorizationCredentials | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return HTTPAuthorizationCredentials(scheme=scheme, credentials=token.strip())


class RateGate:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        surface = (
            surface_of(scope.get("method", ""), scope.get("path", "")) if scope["type"] == "http" else None
        )
        if surface is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            caller = await principal(request, _credentials(request))
            await request.app.state.ragd.ready_services().check_rate(caller, surface)
        except RateLimited as exc:
            response = await errors.render(request, exc)
            await response(scope, receive, send)
            return
        except (HTTPException, RagError):  # no key, a wrong one, not started: the route says so
            pass
        await self.app(scope, receive, send)
