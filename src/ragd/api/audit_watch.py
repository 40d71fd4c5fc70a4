"""Per request: the client address for the audit trail, and 401s counted into bursts.

:class:`AuditWatch` sets :data:`ragd.kb.audit.CLIENT` to the connection's address (the peer; behind
a reverse proxy that is the proxy unless uvicorn is told to trust ``X-Forwarded-For``) for the
use-cases the request runs, and counts every 401 the request is answered with — from the body gate,
the auth dependency or the UI's sign-in alike — in :class:`ragd.kb.auth_bursts.FailedAuthBursts`.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd.api.state import AppState
from ragd.errors import ConfigurationError, NotReady
from ragd.kb import audit
from ragd.kb.auth_bursts import FailedAuthBursts

logger = logging.getLogger(__name__)


class AuditWatch:
    def __init__(self, app: ASGIApp, state: AppState, bursts: FailedAuthBursts) -> None:
        self.app = app
        self._state = state
        self._bursts = bursts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        peer = scope.get("client")
        client = str(peer[0]) if peer else None

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401 and client is not None:
                failures = self._bursts.failed(client)
                if failures is not None:  # recorded before the 401 that makes the burst is sent
                    await self._record(client, failures)
            await send(message)

        token = audit.CLIENT.set(client)
        try:
            await self.app(scope, receive, watched)
        finally:
            audit.CLIENT.reset(token)

    async def _record(self, client: str, failures: int) -> None:
        try:
            catalog = self._state.ready_services().knowledge().catalog
        except (NotReady, ConfigurationError):  # starting, or no catalog here (ragd proxy)
            logger.warning(
                "%d failed authentications from %s (no catalog to record them in)", failures, client
            )
            return
        await self._bursts.record(catalog, client, failures)
