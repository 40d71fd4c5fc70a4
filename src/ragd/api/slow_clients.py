"""Bounds on clients that send slowly (slow-loris): headers, bodies, and how many wait at once.

uvicorn times out only idle keep-alive connections, and it cancels that timer on the first byte a
client sends; a connection that sends half a header line, or one byte a minute, stays open for ever,
and fifty of them cost a thread-free server nothing but exhaust what it may hold open.  Here:

* **headers** — :class:`HeaderDeadline` (a subclass of uvicorn's own HTTP protocol) arms a timer
  when a connection opens, and again when a response ends and the connection waits for the next
  request; the request's headers must be complete within ``server.header_timeout_s`` or the
  connection is closed (without an answer: a client that sent nothing yet must not read a stray
  408 as the answer to its next request).
* **waiting connections** — at most ``server.max_incomplete_requests`` connections may be waiting
  for their headers; one more closes the *oldest* of them, so a flood of half-open connections
  cannot keep a real client (whose headers arrive at once) out.
* **bodies** — :class:`BodyDeadline` (ASGI, inside the app, so every server runs it) times each
  wait for a piece of a request's body: none for ``server.body_timeout_s`` answers
  ``408 REQUEST_TIMEOUT`` and closes the connection.  It is a bound on a stall, not on a whole
  upload: a slow link that keeps sending is never cut; the number of such connections is bounded
  by ``server.max_connections`` (uvicorn's ``limit_concurrency``: 503 beyond it).

:func:`server_config` is the uvicorn configuration ``ragd serve`` and ``ragd proxy`` run with.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

import uvicorn
from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragd.api.errors import COMPAT_PREFIX
from ragd.errors import InvalidRequest, RequestTimeout
from ragd.settings import ServerSettings

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Http
except ImportError:  # pragma: no cover - uvicorn without httptools speaks h11
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Http  # type: ignore[assignment]

log = logging.getLogger(__name__)


class WaitingConnections:
    """The connections of one server still waiting for a request's headers, oldest first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._waiting: OrderedDict[HeaderDeadline, None] = OrderedDict()

    def add(self, connection: HeaderDeadline) -> None:
        self._waiting[connection] = None
        while len(self._waiting) > self.limit:
            oldest, _ = self._waiting.popitem(last=False)
            log.debug("too many connections waiting for their headers: closing the oldest")
            oldest.close_waiting()

    def discard(self, connection: HeaderDeadline) -> None:
        self._waiting.pop(connection, None)

    def __len__(self) -> int:
        return len(self._waiting)


class RagdServerConfig(uvicorn.Config):
    """uvicorn's configuration with the header deadline's settings and its shared bookkeeping."""

    def __init__(self, app: Any, *, server: ServerSettings, **kwargs: Any) -> None:
        super().__init__(app, http=HeaderDeadline, limit_concurrency=server.max_connections, **kwargs)
        self.header_timeout_s = server.header_timeout_s
        self.waiting = WaitingConnections(server.max_incomplete_requests)


class HeaderDeadline(_Http):
    """uvicorn's HTTP protocol, with a deadline on each request's headers (module docstring)."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._timeout_s: float | None = getattr(config, "header_timeout_s", None)
        self._waiting: WaitingConnections | None = getattr(config, "waiting", None)
        self._deadline: asyncio.TimerHandle | None = None
        self._awaited: object = None  # the request cycle current when the deadline was armed

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._deadline is None:
            return
        if self.transport.get_protocol() is not self or (
            self.cycle is not None and self.cycle is not self._awaited
        ):  # upgraded to a WebSocket: not ours any more
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:  # nothing pipelined: wait for headers
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def close_waiting(self) -> None:
        """Close this connection, which is still waiting for a request's headers."""
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()

    def _arm(self) -> None:
        if self._timeout_s is None:
            return
        self._disarm()
        self._awaited = self.cycle
        self._deadline = self.loop.call_later(self._timeout_s, self._expired)
        if self._waiting is not None:
            self._waiting.add(self)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._waiting is not None:
            self._waiting.discard(self)

    def _expired(self) -> None:
        self._deadline = None
        log.debug("a request's headers did not arrive within %.1f s: connection closed", self._timeout_s)
        self.close_waiting()


def server_config(app: Any, server: ServerSettings, **kwargs: Any) -> RagdServerConfig:
    """How ``ragd serve`` and ``ragd proxy`` run ``app`` under uvicorn: ``server``'s address, its
    header deadline and connection bounds; ``kwargs`` go to :class:`uvicorn.Config` unchanged."""
    kwargs.setdefault("host", server.host)
    kwargs.setdefault("port", server.port)
    return RagdServerConfig(app, server=server, **kwargs)


class BodyDeadline:
    """A request body that stalls for ``timeout_s`` is a 408 ``REQUEST_TIMEOUT``, and the connection
    is closed.  Only waits for the request's body are timed: once it has all arrived, a
    ``receive()`` that waits for the client to go away (a streamed answer) is not.

    The 408 is raised as an ``HTTPException`` out of ``receive()`` (FastAPI turns any other error in
    a body read into a 400), so the app's one error renderer gives it the surface's shape."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        complete = False

        async def timed() -> Message:
            nonlocal complete
            if complete:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                raise self._timed_out(scope["path"]) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        await self.app(scope, timed, send)

    def _timed_out(self, path: str) -> HTTPException:
        exc = RequestTimeout(
            f"no part of the request body arrived for {self.timeout_s:g} s",
            hint="send the body without pauses, or raise RAGD_SERVER__BODY_TIMEOUT_S",
        )
        detail: dict[str, object] = {"status": False, "error": exc.message, "code": exc.code}
        if path.startswith(COMPAT_PREFIX):  # the ingestion service's code; ragd's in ``reason``
            detail |= {"code": InvalidRequest.code, "reason": exc.code}
        detail["hint"] = exc.hint
        return HTTPException(status_code=exc.http_status, detail=detail, headers={"Connection": "close"})
