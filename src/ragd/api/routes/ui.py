"""The web UI at ``/ui`` (docs/ui.md): static files from the package, and the sign-in session.

The UI is a client of the public API and nothing else: its pages call ``/api/v1/…`` (and the
chat proxy) like any client, so there is no second permission model.  Only how the browser
proves who it is differs: the key never leaves the sign-in request; a server-side session
(:mod:`ragd.kb.ui_sessions`) stands for it:

    POST   /ui/session  {"key": …}  -> the key is checked exactly as the API checks it; a session of
                                       that key is made (``server.ui_session_ttl_s``) and its random
                                       secret set as an HttpOnly, SameSite=Strict cookie
                                       (``__Host-ragd_session`` on https); the key is in no cookie,
                                       no response, no storage
    GET    /ui/session              -> who the session is (401 once it is revoked, expired, or its
                                       key revoked)
    DELETE /ui/session              -> sign out: the session is revoked and the cookie cleared

:class:`SessionKey` hands the cookie of requests that also carry ``X-Ragd-UI: 1`` (a header no
other site can make a browser send without CORS consent) and no ``Authorization`` to
:mod:`ragd.api.session_cookie` (the cookie is the session's secret, sealed with a MAC under the
service key, so rotating that key signs every browser out): the body gate and the routes' key
and role checks (:func:`ragd.api.auth.principal`) take the request for the live session's key,
exactly as if that key had been sent.

:class:`UiHeaders` sets the security headers of the UI's responses: a CSP with no inline script
and Trusted Types, no framing, no sniffing.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, ConfigDict, Field
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd import __version__
from ragd.api.auth import Caller, principal
from ragd.api.deps import services
from ragd.api.session_cookie import SESSION_SCOPE, SessionLookup, UiSessionSlot, seal, session_of
from ragd.bootstrap import Services
from ragd.kb import ui_sessions as kb_sessions
from ragd.kb.tenants import list_tenants
from ragd.kb_types import Principal, UiSession

PREFIX = "/ui"
COOKIE = "ragd_session"
#: the cookie's name on https: the ``__Host-`` prefix makes the browser refuse it unless it is
#: Secure, for ``Path=/`` and without ``Domain`` (no sibling host can set or widen it)
SECURE_COOKIE = "__Host-" + COOKIE
UI_HEADER = b"x-ragd-ui"
STATIC = Path(str(resources.files("ragd.ui") / "static"))

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",  # blob: the page view's images, fetched with the UI header
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)

router = APIRouter(include_in_schema=False)
Svc = Annotated[Services, Depends(services)]


class SignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=512)


# HEAD is answered wherever GET is (a link checker, `curl -I`, an uptime probe)
@router.api_route("/", methods=["GET", "HEAD"])
async def root() -> RedirectResponse:
    return RedirectResponse(f"{PREFIX}/", status_code=307)


@router.api_route(PREFIX, methods=["GET", "HEAD"])
async def ui_bare() -> RedirectResponse:
    return RedirectResponse(f"{PREFIX}/", status_code=307)


@router.api_route(f"{PREFIX}/", methods=["GET", "HEAD"])
async def ui_index() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


@router.post(f"{PREFIX}/session")
async def sign_in(body: SignIn, request: Request, response: Response, svc: Svc) -> dict[str, Any]:
    """Check ``key`` as the API would; on success start a session and set its cookie."""
    server = request.app.state.ragd.settings.server
    credentials = HTTPAuthorizationCredentials(scheme="Bearer", credentials=body.key)
    caller = await principal(request, credentials)
    made, secret = await kb_sessions.sign_in(
        svc.knowledge(), caller, ttl_s=server.ui_session_ttl_s, user_agent=request.headers.get("user-agent")
    )
    https = request.url.scheme == "https"
    response.set_cookie(
        SECURE_COOKIE if https else COOKIE,
        seal(secret, server.api_key),
        max_age=int(server.ui_session_ttl_s),
        httponly=True,
        samesite="strict",
        secure=https,
        path="/",
    )
    return await _whoami(caller, svc, open_service=server.api_key is None, session=made)


@router.get(f"{PREFIX}/session")
async def session(request: Request, caller: Caller, svc: Svc) -> dict[str, Any]:
    open_service = request.app.state.ragd.settings.server.api_key is None
    return await _whoami(caller, svc, open_service=open_service, session=await session_of(request.scope))


@router.delete(f"{PREFIX}/session", status_code=204)
async def sign_out(request: Request, svc: Svc) -> Response:
    """Revoke the request's session (when it is live) and clear its cookie."""
    found = await session_of(request.scope)
    if found is not None:
        await kb_sessions.sign_out(svc.knowledge(), found)
    response = Response(status_code=204)
    https = request.url.scheme == "https"
    response.delete_cookie(
        SECURE_COOKIE if https else COOKIE, path="/", httponly=True, samesite="strict", secure=https
    )
    return response


async def _whoami(
    caller: Principal, svc: Services, *, open_service: bool, session: UiSession | None
) -> dict[str, Any]:
    tenant_name = None
    if caller.tenant_id is not None:
        tenants = await list_tenants(svc.knowledge(), caller)
        tenant_name = next((t.name for t in tenants if t.id == caller.tenant_id), None)
    return {
        "service": caller.tenant_id is None,
        "open": open_service,
        "tenant_id": caller.tenant_id,
        "tenant_name": tenant_name,
        "role": caller.role,
        "key_id": caller.key_id,
        "can_write": caller.can_write,
        "can_admin": caller.can_admin,
        "session": None if session is None else {"id": session.id, "expires_at": session.expires_at},
        "version": __version__,
    }


def static_app() -> StaticFiles:
    return StaticFiles(directory=STATIC, follow_symlink=False)


class SessionKey:
    """Outermost: a UI request (``X-Ragd-UI: 1``) with a session cookie and no Authorization header
    gets a :class:`UiSessionSlot` in its scope (looked up when the gate or a route first asks);
    nothing else is touched, and no key is ever put back into the request."""

    def __init__(self, app: ASGIApp, lookup: SessionLookup) -> None:
        self.app = app
        self.lookup = lookup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.pop(SESSION_SCOPE, None)  # only this middleware says what the session is
            headers = scope["headers"]
            names = {name.lower() for name, _ in headers}
            if UI_HEADER in names and b"authorization" not in names:
                secret = _cookie(headers, SECURE_COOKIE) or _cookie(headers, COOKIE)
                if secret:
                    slot = UiSessionSlot(secret.decode("latin-1"), self.lookup)
                    scope = {**scope, SESSION_SCOPE: slot}
        await self.app(scope, receive, send)


class UiHeaders:
    """The security headers on every response under ``/ui`` and on the ``/`` redirect."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path in ("/", PREFIX) or path.startswith(PREFIX + "/")):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _cookie(headers: list[tuple[bytes, bytes]], name: str) -> bytes | None:
    wanted = name.encode()
    for header, value in headers:
        if header.lower() != b"cookie":
            continue
        for part in value.split(b";"):
            key, sep, val = part.strip().partition(b"=")
            if sep and key == wanted and val:
                return val.strip(b'"')
    return None
