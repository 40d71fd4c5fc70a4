"""The web UI's session cookie, from the browser to a verified session (docs/ui.md, "Sessions").

The cookie's value is the session's random secret (the catalog keeps only its SHA-256) and, when
a service key is configured, a MAC of that secret under the service key::

    <secret>.<base64url HMAC-SHA256(service key, secret)>

The MAC is checked first, in memory: a made-up or altered cookie never reaches the catalog, and
rotating the service key signs every browser out (their cookies no longer verify).  The key itself
is never in the cookie.

:class:`ragd.api.routes.ui.SessionKey` (outermost) puts a :class:`UiSessionSlot` in the ASGI
scope of a UI request; the body gate and :func:`ragd.api.auth.principal` call :func:`session_of`,
which looks the session up once per request (live: not revoked, not expired, its key not revoked).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException
from pydantic import SecretStr

from ragd.errors import CatalogUnavailable, ConfigurationError, NotReady
from ragd.kb_types import UiSession

if TYPE_CHECKING:
    from ragd.api.state import AppState

#: the scope key of a UI request's :class:`UiSessionSlot` (set only by ``SessionKey``)
SESSION_SCOPE = "ragd.ui_session"
#: a session's secret as the catalog makes them (``secrets.token_urlsafe(32)``)
_SECRET = re.compile(r"[A-Za-z0-9_-]{32,128}")
_MAC_CONTEXT = b"ragd ui session\x00"
SessionLookup = Callable[[str], Awaitable[UiSession | None]]


def seal(secret: str, service_key: SecretStr | None) -> str:
    """The cookie's value for a session's ``secret``."""
    return secret if service_key is None else f"{secret}.{_mac(secret, service_key)}"


def unseal(value: str, service_key: SecretStr | None) -> str | None:
    """The session secret a cookie's value carries, or None when it is malformed or its MAC is not
    the current service key's (an open service, with no key, takes the secret as it is)."""
    secret, _, mac = value.partition(".")
    if not _SECRET.fullmatch(secret):
        return None
    if service_key is None:
        return secret
    return secret if hmac.compare_digest(mac.encode(), _mac(secret, service_key).encode()) else None


def _mac(secret: str, service_key: SecretStr) -> str:
    digest = hmac.new(service_key.get_secret_value().encode(), _MAC_CONTEXT + secret.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


class UiSessionSlot:
    """The session a UI request's cookie names, looked up the first time anyone asks."""

    __slots__ = ("_found", "_looked", "_lookup", "_value")

    def __init__(self, value: str, lookup: SessionLookup) -> None:
        self._value = value
        self._lookup = lookup
        self._looked = False
        self._found: UiSession | None = None

    async def session(self) -> UiSession | None:
        if not self._looked:
            self._found = await self._lookup(self._value)
            self._looked = True
        return self._found


async def session_of(scope: Mapping[str, Any]) -> UiSession | None:
    """The live UI session a request came with (None: none, or not live)."""
    slot = scope.get(SESSION_SCOPE)
    return await slot.session() if isinstance(slot, UiSessionSlot) else None


def session_lookup(state: AppState) -> SessionLookup:
    """For :class:`ragd.api.routes.ui.SessionKey`: the live session of a cookie's value.  503
    ``NOT_READY`` while ragd starts, or when the catalog cannot be reached (raised inside the
    route or the body gate, so the app renders it); None in a process with no catalog."""
    service_key = state.settings.server.api_key

    async def live(value: str) -> UiSession | None:
        secret = unseal(value, service_key)
        if secret is None:
            return None
        try:
            catalog = state.ready_services().knowledge().catalog
            found: UiSession | None = await catalog.resolve_ui_session(secret)
        except (NotReady, CatalogUnavailable) as exc:
            detail = {"status": False, "error": exc.message, "code": exc.code}
            raise HTTPException(status_code=503, detail=detail, headers={"Retry-After": "5"}) from exc
        except ConfigurationError:  # no knowledge-base catalog here: no sessions either
            return None
        return found

    return live
