"""``/mcp``: the MCP server (:mod:`ragd.mcp`, docs/mcp.md) on streamable HTTP, behind the API's keys.

The caller is resolved before the MCP transport sees the request, exactly as on the
knowledge-base API (:func:`ragd.api.auth.principal`): the service key, a live tenant key
(its tenant and role), or 401 ``Invalid API key`` with ``WWW-Authenticate: Bearer``.
A plain ASGI route, not in the OpenAPI schema: MCP has its own description (tools/list).
"""

from __future__ import annotations

from fastapi import Request
from fastapi.security import HTTPBearer
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ragd.api.auth import principal
from ragd.api.state import AppState
from ragd.mcp.server import PRINCIPAL_KEY, HttpMcp

PATH = "/mcp"
_bearer = HTTPBearer(auto_error=False)


def mcp_endpoint(state: AppState) -> HttpMcp:
    """The app's MCP server (run it in the app's lifespan: ``async with endpoint.run()``)."""
    server = state.settings.server
    return HttpMcp(
        state.ready_services,
        loopback_only=server.api_key is None and "*" not in server.allowed_hosts,
        origins=server.cors_origins,
        hosts=server.allowed_hosts,  # what ragd.api.origin_guard lets through too
        max_body_bytes=server.max_json_bytes,
    )


class _Authorized:
    def __init__(self, endpoint: HttpMcp) -> None:
        self._endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        scope[PRINCIPAL_KEY] = await principal(request, await _bearer(request))
        await self._endpoint.handle(scope, receive, send)


def mcp_route(endpoint: HttpMcp) -> Route:
    return Route(PATH, endpoint=_Authorized(endpoint))
