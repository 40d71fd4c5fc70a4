"""The web UI at ``/ui`` (docs/ui.md): static files from the package, and the sign-in session.

The UI is a client of the public API and nothing else: its pages call ``/api/v1/…`` (and the
chat proxy) like any client, so there is no second permission model.  Only how the browser holds
the key differs:

    POST   /ui/session  {"key": …}  -> the key is checked exactly as the API checks it, then kept in
                                       an HttpOnly, SameSite=Strict cookie (no script reads it,
                                       no other site sends it); never in a URL or in storage
    GET    /ui/session              -> who the cookie's key is (401 once the key is revoked)
    DELETE /ui/session              -> sign out: the cookie is cleared

:class:`SessionKey` turns the cookie back into ``Authorization: Bearer`` for requests that also
carry ``X-Ragd-UI: 1`` (a header no other site can make a browser send without CORS consent), so
every check downstream (the body gate, the routes' key and role checks) is the API's own.
:class:`UiHeaders` sets the security headers of the UI's responses: a CSP with no inline script
and Trusted Types, no framing, no sniffing.
"""

from __future__ import annotations

import base64
import binascii
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
from ragd.bootstrap import Services
from ragd.kb.tenants import list_tenants
from ragd.kb_types import Principal

PREFIX = "/ui"
COOKIE = "ragd_session"
UI_HEADER = b"x-ragd-ui"
STATIC = Path(str(resources.files("ragd.ui") / "static"))

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
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
    """Check ``key`` as the API would; on success keep it in the session cookie."""
    open_service = request.app.state.ragd.settings.server.api_key is None
    credentials = HTTPAuthorizationCredentials(scheme="Bearer", credentials=body.key)
    caller = await principal(request, credentials)
    response.set_cookie(
        COOKIE,
        _encode(body.key),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return await _whoami(caller, svc, open_service=open_service)


@router.get(f"{PREFIX}/session")
async def session(request: Request, caller: Caller, svc: Svc) -> dict[str, Any]:
    open_service = request.app.state.ragd.settings.server.api_key is None
    return await _whoami(caller, svc, open_service=open_service)


@router.delete(f"{PREFIX}/session", status_code=204)
async def sign_out(request: Request) -> Response:
    response = Response(status_code=204)
    response.delete_cookie(
        COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return response


async def _whoami(caller: Principal, svc: Services, *, open_service: bool) -> dict[str, Any]:
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
        "can_write": caller.can_write,
        "can_admin": caller.can_admin,
        "version": __version__,
    }


def static_app() -> StaticFiles:
    return StaticFiles(directory=STATIC, follow_symlink=False)


class SessionKey:
    """Outermost: a UI request (``X-Ragd-UI: 1``) with the session cookie and no Authorization
    header gets ``Authorization: Bearer <the cookie's key>``; nothing else is touched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope["headers"]
            names = {name.lower() for name, _ in headers}
            if UI_HEADER in names and b"authorization" not in names:
                key = _decode(_cookie(headers, COOKIE))
                if key:
                    scope = {**scope, "headers": [*headers, (b"authorization", b"Bearer " + key)]}
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


def _encode(key: str) -> str:
    """The cookie holds the key base64url-encoded: any key survives cookie syntax unchanged."""
    return base64.urlsafe_b64encode(key.encode("utf-8", "surrogateescape")).decode().rstrip("=")


def _decode(value: bytes | None) -> bytes | None:
    if not value:
        return None
    try:
        return base64.urlsafe_b64decode(value + b"=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return None
