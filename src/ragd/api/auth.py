"""Bearer API-key auth, as the reference services do it (``contracts.md`` §1.1), and tenant keys.

The service-wide key (``server.api_key``) may do everything and is the only key of the
ingestion-service surface (``/api/v1/ingest``, ``/api/v1/extract``, ``/api/v1/documents/…``:
:func:`require_key`).  Tenant keys (made with ``ragd keys create`` or
``POST /api/v1/tenants/{id}/keys``) are resolved by :func:`principal` to their tenant and role on
every other route: the knowledge-base API (``/api/v1/datasets``, ``/api/v1/search``, ``/api/v1/jobs``…),
Open WebUI's ``POST /search`` and the chat proxy (``rag/<collection>`` models only), where they reach
only the collections of datasets their role may read (another name drops out like an unknown one),
MCP, the document loader and the model endpoints.  A key of the ``ingest`` role never reads chunks
(403 ``INGEST_ONLY``: :func:`ragd.kb.access.require_chunk_reader`).

Missing header, another scheme or a wrong key -> ``401 {"detail": "Invalid API key"}``
with ``WWW-Authenticate: Bearer``; keys are compared in constant time as bytes,
so a non-ASCII token is a 401, not a 500.  With no key configured the service
is open (``ragd serve`` refuses that on a non-loopback address).

A web UI request carries no key at all: :class:`ragd.api.routes.ui.SessionKey` puts a slot for
its session cookie in the ASGI scope (:mod:`ragd.api.session_cookie`), and :func:`principal`,
:func:`require_key` and the body gate (:mod:`ragd.api.gate`) take the request for the session's
key when there is no ``Authorization`` header and the session is live.  The session is looked up
once per request, by its hash, before any body is read.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ragd.api.session_cookie import session_of
from ragd.errors import ConfigurationError, NotReady
from ragd.kb_types import ADMIN_ROLE, Principal

if TYPE_CHECKING:
    from starlette.types import Scope

    from ragd.api.state import AppState
    from ragd.catalog.base import TenantDirectory

_bearer = HTTPBearer(auto_error=False)


def _unauthorized() -> HTTPException:
    return HTTPException(status_code=401, detail="Invalid API key", headers={"WWW-Authenticate": "Bearer"})


async def require_key(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    expected = request.app.state.ragd.settings.server.api_key
    if expected is None:
        return
    if credentials is None and (found := await session_of(request.scope)) is not None:
        if found.principal.is_service:
            return
        raise _unauthorized()
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized()
    given = credentials.credentials.encode("utf-8", "surrogateescape")
    if not hmac.compare_digest(given, expected.get_secret_value().encode()):
        raise _unauthorized()


Authorized = Depends(require_key)


async def principal(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Principal:
    """Who the request acts for: the service key, a live tenant key, or 401."""
    state = request.app.state.ragd
    expected = state.settings.server.api_key
    if credentials is None and (found := await session_of(request.scope)) is not None:
        return found.principal
    if credentials is None or credentials.scheme.lower() != "bearer":
        if expected is None:
            return SERVICE  # an open loopback service (``ragd serve`` refuses it elsewhere)
        raise _unauthorized()
    given = credentials.credentials.encode("utf-8", "surrogateescape")
    if expected is not None and hmac.compare_digest(given, expected.get_secret_value().encode()):
        return SERVICE
    if credentials.credentials.startswith(TENANT_KEY_PREFIX):
        catalog = state.ready_services().knowledge().catalog
        tenant = await resolve_tenant_key(request.scope, catalog, credentials.credentials)
        if tenant is not None:
            return tenant
    if expected is None:
        return SERVICE
    raise _unauthorized()


async def resolve_tenant_key(scope: Scope, catalog: TenantDirectory, secret: str) -> Principal | None:
    """The principal of a live tenant key, looked up once per request: the body gate, the rate gate
    and the route's :func:`principal` all ask, and the answer is kept in the request's scope."""
    known: dict[str, Principal | None] = scope.setdefault(_RESOLVED, {})
    if secret not in known:
        known[secret] = await catalog.resolve_key(secret)
    return known[secret]


def tenant_key_check(state: AppState) -> Callable[[str, Scope], Awaitable[bool]]:
    """For the body gate (:mod:`ragd.api.gate`): whether a ``rgd_…`` token is a live tenant key, by its
    hash in the catalog.  503 ``NOT_READY`` while ragd starts (no body is read before that is known);
    False in a process with no catalog."""

    async def live(secret: str, scope: Scope) -> bool:
        try:
            catalog = state.ready_services().knowledge().catalog
        except NotReady as exc:
            detail = {"status": False, "error": exc.message, "code": exc.code}
            raise HTTPException(status_code=503, detail=detail, headers={"Retry-After": "5"}) from exc
        except ConfigurationError:  # no knowledge-base catalog here: no tenant keys either
            return False
        return await resolve_tenant_key(scope, catalog, secret) is not None

    return live


SERVICE = Principal(tenant_id=None, role=ADMIN_ROLE)
#: the scope key of a request's resolved tenant keys (secret -> principal or None)
_RESOLVED = "ragd.tenant_keys"
#: tenant keys look like ``rgd_…``; anything else is never looked up in the catalog
TENANT_KEY_PREFIX = "rgd_"
Caller = Annotated[Principal, Depends(principal)]
