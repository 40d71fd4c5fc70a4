"""Bearer API-key auth, as the reference services do it (``contracts.md`` §1.1).

Missing header, another scheme or a wrong key -> ``401 {"detail": "Invalid API key"}``
with ``WWW-Authenticate: Bearer``; keys are compared in constant time as bytes,
so a non-ASCII token is a 401, not a 500.  With no key configured the service
is open (``ragd serve`` refuses that on a non-loopback address).
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(auto_error=False)


def _unauthorized() -> HTTPException:
    return HTTPException(status_code=401, detail="Invalid API key", headers={"WWW-Authenticate": "Bearer"})


async def require_key(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    expected = request.app.state.ragd.settings.server.api_key
    if expected is None:
        return
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized()
    given = credentials.credentials.encode("utf-8", "surrogateescape")
    if not hmac.compare_digest(given, expected.get_secret_value().encode()):
        raise _unauthorized()


Authorized = Depends(require_key)
