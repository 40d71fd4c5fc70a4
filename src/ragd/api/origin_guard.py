"""Refuse requests a browser was tricked into sending: foreign ``Host`` names and cross-site writes.

A service without a key trusts whoever can reach it, which a browser makes *any web page*: a page
on ``attacker.example`` whose name is re-pointed at 127.0.0.1 (DNS rebinding) reads and changes
everything, and a plain HTML form posts an upload, a ``text/plain`` chat or ``/reindex`` to
``http://127.0.0.1:8000`` without a CORS preflight.  :class:`OriginGuard`, outermost in both
``ragd serve`` and ``ragd proxy``, answers before any route runs:

* **Host** — on a service *without a key*, a request whose ``Host`` is not loopback (``localhost``,
  ``127.0.0.0/8``, ``[::1]``, any port), not the address ragd binds (when that is a real address,
  not ``0.0.0.0``/``::``) and not in ``server.allowed_hosts`` is ``403 HOST_NOT_ALLOWED``
  (``*`` there allows any name: for operators behind a proxy that checks it).  A service with a
  key answers any name: a page cannot send the key.
* **Origin** — a state-changing request (any method but GET, HEAD, OPTIONS) whose ``Origin`` is
  neither the request's own (its scheme's default port dropped; the scheme itself is not compared,
  since a TLS-terminating proxy hides it) nor in ``server.cors_origins`` is
  ``403 ORIGIN_NOT_ALLOWED`` when the service has no key, when it carries the UI's session cookie
  and no ``Authorization`` (the cookie is what a browser adds on its own), and on the UI's own
  paths (its sign-in).  Without ``Origin``, ``Sec-Fetch-Site: cross-site`` counts as foreign.
  Server-to-server clients with a Bearer key send no ``Origin`` and are never affected.

The refusal has the shape of the surface it arrived on (OpenAI's on ``/v1``), like every error.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd.api.errors import early_response
from ragd.errors import HostNotAllowed, OriginNotAllowed, RagError
from ragd.settings import ServerSettings

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class OriginGuard:
    def __init__(
        self,
        app: ASGIApp,
        settings: ServerSettings,
        session_cookie: str | None = None,
        browser_paths: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self._keyless = settings.api_key is None
        hosts = {_hostname(h) for h in settings.allowed_hosts}
        if settings.host not in _WILDCARD_BINDS:
            hosts.add(_hostname(settings.host))
        self._any_host = "*" in settings.allowed_hosts
        self._hosts = frozenset(hosts)
        self._any_origin = "*" in settings.cors_origins
        self._origins = frozenset(_origin_key(o) for o in settings.cors_origins if o != "*")
        self._cookies = _cookie_names(session_cookie)
        self._browser_paths = browser_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope["headers"])
        host = headers.get("host")
        refusal: RagError | None = None
        if self._keyless and not self._host_allowed(host):
            refusal = HostNotAllowed(
                f"this ragd has no API key and answers only to loopback names, not {_shown(host)}",
                hint="use http://127.0.0.1:<port>, or list the name in RAGD_SERVER__ALLOWED_HOSTS",
            )
        elif self._origin_checked(scope, headers) and self._foreign(headers, host):
            refusal = OriginNotAllowed(
                f"a state-changing request from another site ({_shown(headers.get('origin'))}) is refused",
                hint="send it from ragd's own pages, with a Bearer key, or list the origin in"
                " RAGD_SERVER__CORS_ORIGINS",
            )
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _refuse(scope, send, refusal)

    def _host_allowed(self, host: str | None) -> bool:
        if host is None:
            return False
        if self._any_host:
            return True
        name = _hostname(host)
        return _is_loopback(name) or name in self._hosts

    def _origin_checked(self, scope: Scope, headers: dict[str, str]) -> bool:
        """Whether this request's ``Origin`` must be this service's own."""
        if scope.get("method", "GET") in SAFE_METHODS and scope["type"] == "http":
            return False
        if self._keyless:
            return True
        path: str = scope["path"]
        if any(path == p or path.startswith(p + "/") for p in self._browser_paths):
            return True
        return "authorization" not in headers and self._has_session_cookie(headers.get("cookie", ""))

    def _has_session_cookie(self, cookie: str) -> bool:
        names = {part.split("=", 1)[0].strip() for part in cookie.split(";") if "=" in part}
        return not names.isdisjoint(self._cookies)

    def _foreign(self, headers: dict[str, str], host: str | None) -> bool:
        origin = headers.get("origin")
        if origin is None:
            return headers.get("sec-fetch-site", "").lower() == "cross-site"
        if self._any_origin:
            return False
        key = _origin_key(origin)
        if key in self._origins:
            return False
        return host is None or key[1:] != _authority(host)


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """The first value of each header (every ``Cookie`` header's, joined), decoded as latin-1."""
    found: dict[str, str] = {}
    for name, value in raw:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1").strip()
        if key == "cookie" and key in found:
            found[key] += "; " + text
        else:
            found.setdefault(key, text)
    return found


def _split(authority: str) -> tuple[str, int | None]:
    """``host[:port]`` (``[v6]:port`` too) as (lower-case host without brackets or final dot, port)."""
    text = authority.strip().lower()
    port: int | None = None
    if text.startswith("["):
        name, _, rest = text[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdigit():
            port = int(rest[1:])
    elif text.count(":") == 1:
        name, _, digits = text.partition(":")
        port = int(digits) if digits.isdigit() else -1
    else:
        name = text
    return name.rstrip("."), port


def _hostname(authority: str) -> str:
    return _split(authority)[0]


def _authority(host: str) -> tuple[str, int | None]:
    """The ``Host`` header as (name, port), a default port (80, 443) dropped: which one is the
    default depends on a scheme a TLS-terminating proxy may hide."""
    name, port = _split(host)
    return name, None if port in (80, 443) else port


def _origin_key(origin: str) -> tuple[str, str, int | None]:
    """``scheme://host[:port]`` as (scheme, host, port), the scheme's default port dropped;
    ``null`` and anything unparsable match no request."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or not rest or "/" in rest:
        return ("", "\x00", None)
    name, port = _split(rest)
    return scheme, name, None if port == _DEFAULT_PORTS.get(scheme) else port


def _is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _cookie_names(cookie: str | None) -> frozenset[str]:
    if not cookie:
        return frozenset()
    return frozenset({cookie, f"__Host-{cookie}", f"__Secure-{cookie}"})


def _shown(value: str | None) -> str:
    if value is None:
        return "no Host header"
    return repr(value[:100])


async def _refuse(scope: Scope, send: Send, exc: RagError) -> None:
    """Answer before any route runs, in the shape of the surface the request came to."""
    await early_response(scope["path"], exc)(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}
