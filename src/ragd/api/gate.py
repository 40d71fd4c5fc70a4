"""Check the key and the size of a request *before* its body is read.

FastAPI reads and parses a route's body before it runs the route's dependencies, the
auth check among them: without this gate, 200 MiB of JSON sent with no key is read
and parsed first (+580 MB of RSS), then refused.  :class:`BodyGate` wraps the ASGI
``receive`` channel; the first time anything asks for the body, before one byte of it is read, it

* answers 401 unless the request carries ``Authorization: Bearer`` with the service key or a
  *live* tenant key — when a service key is configured.  A tenant key is verified here, by its
  hash in the catalog (``tenant_key``, one indexed lookup), not by its ``rgd_`` shape: a made-up
  ``rgd_…`` token with 16 MiB of JSON cost +418 MB before it was refused.  A web UI request
  carries no key but a session cookie: it passes when its session is live, looked up by the
  secret's hash (:mod:`ragd.api.session_cookie`, put in the scope by ``SessionKey``);
* answers 413 ``REQUEST_TOO_LARGE`` when a JSON body declares, or turns out to have,
  more than ``server.max_json_bytes`` (counted as it streams in; never buffered whole), or more
  than its route's own limit (``json_routes``: the model endpoints', from
  ``server.max_total_chars``);
* on the routes whose body is a file (``file_routes``: ``PUT /process``), whatever its
  Content-Type, answers 413 ``FILE_TOO_LARGE`` over that route's limit
  (``extract.max_file_bytes``) instead — a ``.json`` upload is a file, not a JSON request;
* answers 422 ``INVALID_TEXT`` when a JSON body (a JSON Content-Type, or none: FastAPI parses
  those as JSON too) is not UTF-8 or spells a lone surrogate or a NUL
  (:mod:`ragd.api.text_check`), as the piece that holds it arrives.

A URL whose path or query holds a NUL (``%00``) is a 422 ``INVALID_TEXT`` before any route runs.

Paths under a ``keyless`` prefix (the web UI's ``/ui``: its pages and its sign-in, which carries
the key in its body) get no key check, and any body over :data:`KEYLESS_BODY_BYTES` (whatever its
type) is a 413 there: a sign-in is ``{"key": "…"}``, not 16 MiB.

Both are raised as ``HTTPException`` inside the route (FastAPI turns any other error
in a body read into a 400), so the app's one error renderer gives them the shape of
the surface they arrived on (OpenAI's on ``/v1``).  Routes that never read a body
keep their usual auth dependency.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping

from fastapi import HTTPException
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd.api.auth import TENANT_KEY_PREFIX
from ragd.api.errors import COMPAT_PREFIX, OPENAI_PREFIX
from ragd.api.openai_wire import error_body as openai_error_body
from ragd.api.session_cookie import session_of
from ragd.api.text_check import JsonTextCheck, nul_in_url
from ragd.errors import InvalidRequest, InvalidText
from ragd.settings import ServerSettings

#: the most a request may send where no key is asked for (the UI's sign-in body is ``{"key": "…"}``)
KEYLESS_BODY_BYTES = 4096
#: whether a ``rgd_…`` token is a live tenant key (raises HTTPException 503 while ragd is starting)
TenantKeyCheck = Callable[[str, Scope], Awaitable[bool]]


class BodyGate:
    def __init__(
        self,
        app: ASGIApp,
        settings: ServerSettings,
        file_routes: Mapping[str, int] | None = None,
        keyless: tuple[str, ...] = (),
        json_routes: Mapping[str, int] | None = None,
        tenant_key: TenantKeyCheck | None = None,
    ) -> None:
        self.app = app
        self._keyless = keyless
        self._tenant_key = tenant_key
        self._key = settings.api_key.get_secret_value().encode() if settings.api_key else None
        self._limit = settings.max_json_bytes
        self._file_limits = dict(file_routes or {})
        self._json_limits = dict(json_routes or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if nul_in_url(path, scope.get("query_string", b"")):
            await _refuse(scope, send, InvalidText("the URL holds a NUL character (%00)"))
            return
        headers = {name.lower(): value for name, value in scope["headers"]}
        file_limit = self._file_limits.get(path)
        content_type = headers.get(b"content-type", b"").lower()
        json_body = file_limit is None and (b"json" in content_type or not content_type)  # FastAPI's rule
        json_limit = min(self._limit, self._json_limits.get(path, self._limit))
        limit = file_limit if file_limit is not None else json_limit if json_body else None
        keyless = any(path == p or path.startswith(p + "/") for p in self._keyless)
        if keyless:
            limit, file_limit = KEYLESS_BODY_BYTES, None
        text = JsonTextCheck() if json_body else None
        state = {"checked": False, "seen": 0}

        async def gated() -> Message:
            if not state["checked"]:
                state["checked"] = True
                if not keyless:
                    await self._check_key(headers.get(b"authorization", b""), scope)
                if limit is not None and _declared(headers) > limit:
                    raise self._too_large(limit, file_limit, keyless=keyless)
            message = await receive()
            if message["type"] == "http.request":
                body = message.get("body", b"")
                state["seen"] += len(body)
                if limit is not None and state["seen"] > limit:
                    raise self._too_large(limit, file_limit, keyless=keyless)
                if text is not None:
                    _check_text(text, body, path, final=not message.get("more_body", False))
            return message

        await self.app(scope, gated, send)

    async def _check_key(self, header: bytes, scope: Scope) -> None:
        if self._key is None:
            return
        if await session_of(scope) is not None:  # a live UI session (only without Authorization)
            return
        scheme, _, token = header.partition(b" ")
        token = token.strip()
        if scheme.lower() == b"bearer":
            if hmac.compare_digest(token, self._key):
                return
            check = self._tenant_key
            tenant_shaped = token.startswith(TENANT_KEY_PREFIX.encode())
            secret = token.decode("utf-8", "surrogateescape")
            if check is not None and tenant_shaped and await check(secret, scope):
                return
        raise HTTPException(status_code=401, detail="Invalid API key", headers={"WWW-Authenticate": "Bearer"})

    def _too_large(self, limit: int, file_limit: int | None, *, keyless: bool) -> HTTPException:
        if file_limit is not None:
            return HTTPException(status_code=413, detail=_file_too_large(file_limit))
        if keyless:  # the UI's sign-in
            error, hint = f"the body is over the {limit:,}-byte limit of a request without a key", None
        elif limit < self._limit:  # a model endpoint's
            error = f"the JSON body is over this route's {limit:,}-byte limit"
            hint = "send fewer characters (the limit follows RAGD_SERVER__MAX_TOTAL_CHARS)"
        else:
            error = f"the JSON body is over the {limit:,}-byte limit"
            hint = "send less, or raise RAGD_SERVER__MAX_JSON_BYTES"
        detail: dict[str, object] = {"status": False, "error": error, "code": "REQUEST_TOO_LARGE"}
        if hint:
            detail["hint"] = hint
        return HTTPException(status_code=413, detail=detail)


def _file_too_large(limit: int) -> dict[str, object]:
    return {
        "status": False,
        "error": f"upload exceeds max_upload_bytes={limit}",
        "code": "FILE_TOO_LARGE",
        "hint": "raise RAGD_EXTRACT__MAX_FILE_BYTES",
    }


def _check_text(check: JsonTextCheck, body: bytes, path: str, *, final: bool) -> None:
    try:
        check.feed(body, final=final)
    except InvalidText as exc:
        raise HTTPException(status_code=exc.http_status, detail=_envelope(exc, path)) from exc


def _envelope(exc: InvalidText, path: str) -> dict[str, object]:
    """ragd's error envelope; the ingestion-service surface keeps its own code, ragd's in ``reason``."""
    detail: dict[str, object] = {"status": False, "error": exc.message, "code": exc.code}
    if path.startswith(COMPAT_PREFIX):
        detail |= {"code": InvalidRequest.code, "reason": exc.code}
    if exc.hint:
        detail["hint"] = exc.hint
    return detail


async def _refuse(scope: Scope, send: Send, exc: InvalidText) -> None:
    """Answer before any route runs, in the shape of the surface the request came to."""
    if scope["path"].startswith(OPENAI_PREFIX):
        body = openai_error_body(exc.http_status, exc.message, exc.code)
    else:
        body = {"detail": _envelope(exc, scope["path"])}
    await JSONResponse(body, status_code=exc.http_status)(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def _declared(headers: dict[bytes, bytes]) -> int:
    try:
        return int(headers.get(b"content-length", b"0"))
    except ValueError:
        return 0
