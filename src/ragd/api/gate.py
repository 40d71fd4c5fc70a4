"""Check the key and the size of a request *before* its body is read.

FastAPI reads and parses a route's body before it runs the route's dependencies, the
auth check among them: without this gate, 200 MiB of JSON sent with no key is read
and parsed first (+580 MB of RSS), then refused.  :class:`BodyGate` wraps the ASGI
``receive`` channel; the first time anything asks for the body it

* answers 401 unless the request carries ``Authorization: Bearer`` with the service
  key or a tenant key's shape (``rgd_…``; the tenant key itself is checked by the
  route's dependency, as before) — when a service key is configured;
* answers 413 ``REQUEST_TOO_LARGE`` when a JSON body declares, or turns out to have,
  more than ``server.max_json_bytes`` (counted as it streams in; never buffered whole);
* on the routes whose body is a file (``file_routes``: ``PUT /process``), whatever its
  Content-Type, answers 413 ``FILE_TOO_LARGE`` over that route's limit
  (``extract.max_file_bytes``) instead — a ``.json`` upload is a file, not a JSON request.

Paths under a ``keyless`` prefix (the web UI's ``/ui``: its pages and its sign-in, which carries
the key in its body) get the size limit but no key check.

Both are raised as ``HTTPException`` inside the route (FastAPI turns any other error
in a body read into a 400), so the app's one error renderer gives them the shape of
the surface they arrived on (OpenAI's on ``/v1``).  Routes that never read a body
keep their usual auth dependency.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd.api.auth import TENANT_KEY_PREFIX
from ragd.settings import ServerSettings


class BodyGate:
    def __init__(
        self,
        app: ASGIApp,
        settings: ServerSettings,
        file_routes: Mapping[str, int] | None = None,
        keyless: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self._keyless = keyless
        self._key = settings.api_key.get_secret_value().encode() if settings.api_key else None
        self._limit = settings.max_json_bytes
        self._file_limits = dict(file_routes or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.lower(): value for name, value in scope["headers"]}
        file_limit = self._file_limits.get(scope["path"])
        json_body = b"json" in headers.get(b"content-type", b"").lower()
        limit = file_limit if file_limit is not None else self._limit if json_body else None
        path = scope["path"]
        keyless = any(path == p or path.startswith(p + "/") for p in self._keyless)
        state = {"checked": False, "seen": 0}

        async def gated() -> Message:
            if not state["checked"]:
                state["checked"] = True
                if not keyless:
                    self._check_key(headers.get(b"authorization", b""))
                if limit is not None and _declared(headers) > limit:
                    raise self._too_large(file_limit)
            message = await receive()
            if limit is not None and message["type"] == "http.request":
                state["seen"] += len(message.get("body", b""))
                if state["seen"] > limit:
                    raise self._too_large(file_limit)
            return message

        await self.app(scope, gated, send)

    def _check_key(self, header: bytes) -> None:
        if self._key is None:
            return
        scheme, _, token = header.partition(b" ")
        token = token.strip()
        if scheme.lower() == b"bearer" and (
            hmac.compare_digest(token, self._key) or token.startswith(TENANT_KEY_PREFIX.encode())
        ):
            return
        raise HTTPException(status_code=401, detail="Invalid API key", headers={"WWW-Authenticate": "Bearer"})

    def _too_large(self, file_limit: int | None = None) -> HTTPException:
        if file_limit is not None:
            return HTTPException(status_code=413, detail=_file_too_large(file_limit))
        detail = {
            "status": False,
            "error": f"the JSON body is over the {self._limit:,}-byte limit",
            "code": "REQUEST_TOO_LARGE",
            "hint": "send less, or raise RAGD_SERVER__MAX_JSON_BYTES",
        }
        return HTTPException(status_code=413, detail=detail)


def _file_too_large(limit: int) -> dict[str, object]:
    return {
        "status": False,
        "error": f"upload exceeds max_upload_bytes={limit}",
        "code": "FILE_TOO_LARGE",
        "hint": "raise RAGD_EXTRACT__MAX_FILE_BYTES",
    }


def _declared(headers: dict[bytes, bytes]) -> int:
    try:
        return int(headers.get(b"content-length", b"0"))
    except ValueError:
        return 0
