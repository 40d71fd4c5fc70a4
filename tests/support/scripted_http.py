"""A scripted HTTP/1.1 server on loopback that plays an upstream service in tests.

Tests talk to it over real sockets with their real client (httpx, the OpenAI
wire format, SSE), so what is tested is the bytes on the wire, not a mock.

    with ScriptedServer() as server:                      # or the ``scripted_server`` fixture
        server.expect("POST", "/v1/embeddings", Reply.error(503), Reply.json({"data": []}))
        server.on("POST", "/embed", lambda req: Reply.json(fake(req.json["inputs"])))
        ... point the client at server.url ...
        assert server.requests[0].json == {"model": "m", "input": ["a"]}
        server.verify()                                   # every scripted reply used, nothing unexpected

Routing is by exact method and path (query string ignored, but recorded).
Each route has a FIFO queue of scripted :class:`Reply` objects (``expect``);
when the queue is empty the route's handler (``on``) answers, if any.  A
request nothing answers gets a 404 whose body says so, and is listed by
:meth:`ScriptedServer.verify`.  Handlers run in the server's threads and
receive a :class:`RecordedRequest`.

A :class:`Reply` can be delayed, streamed in chunks (``Transfer-Encoding:
chunked``, e.g. ``text/event-stream``) with a pause before every chunk,
aborted mid-stream, or ``dropped`` (the connection closes without an answer).
Delays are cut short when the server closes, so a test never waits on them.
Every accepted socket has TCP_NODELAY set (a small reply otherwise waits on
the client's delayed ACK).  Closing the server closes idle keep-alive
connections and joins every thread: nothing leaks a ResourceWarning.
"""

from __future__ import annotations

import asyncio
import contextlib
import json as jsonlib
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import pytest

__all__ = ["RecordedRequest", "Reply", "ScriptedServer", "scripted_server"]

Handler = Callable[["RecordedRequest"], "Reply"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it (header names lower-cased)."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes
    received_at: float  # time.monotonic() when the body had been read

    @property
    def json(self) -> Any:
        """The body parsed as JSON (None for an empty body)."""
        return jsonlib.loads(self.body) if self.body else None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True, slots=True)
class Reply:
    """What the server does with one request.  Build with the class methods."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # pause before the status line (or before dropping)
    chunks: tuple[bytes, ...] | None = None  # stream these with Transfer-Encoding: chunked
    chunk_delay_s: float = 0.0  # pause before each chunk
    abort_stream: bool = False  # close after the chunks without the terminating chunk
    drop: bool = False  # close the connection without answering

    @classmethod
    def json(
        cls, payload: Any, status: int = 200, headers: Mapping[str, str] | None = None, delay_s: float = 0.0
    ) -> Reply:
        body = jsonlib.dumps(payload).encode()
        return cls(status, body, {"Content-Type": "application/json", **(headers or {})}, delay_s)

    @classmethod
    def text(
        cls, text: str, status: int = 200, headers: Mapping[str, str] | None = None, delay_s: float = 0.0
    ) -> Reply:
        return cls(
            status, text.encode(), {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}, delay_s
        )

    @classmethod
    def error(
        cls, status: int, message: str = "scripted error", headers: Mapping[str, str] | None = None
    ) -> Reply:
        """An OpenAI-style error body: ``{"error": {"message": ..., "code": status}}``."""
        return cls.json({"error": {"message": message, "code": status}}, status, headers)

    @classmethod
    def stream(
        cls,
        chunks: Iterable[bytes | str],
        *,
        content_type: str = "application/octet-stream",
        chunk_delay_s: float = 0.0,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        abort: bool = False,
    ) -> Reply:
        """A chunked response; each item is written (and flushed) as one HTTP chunk."""
        raw = tuple(c.encode() if isinstance(c, str) else c for c in chunks)
        all_headers = {"Content-Type": content_type, **(headers or {})}
        return cls(status, b"", all_headers, chunks=raw, chunk_delay_s=chunk_delay_s, abort_stream=abort)

    @classmethod
    def sse(
        cls, events: Iterable[Mapping[str, Any] | str], *, chunk_delay_s: float = 0.0, abort: bool = False
    ) -> Reply:
        """Server-sent events, one chunk each: a mapping becomes ``data: <json>``, a str ``data: <str>``.

        Add the terminator yourself when the protocol has one: ``Reply.sse([*deltas, "[DONE]"])``.
        """
        frames = [f"data: {e if isinstance(e, str) else jsonlib.dumps(e)}\n\n" for e in events]
        headers = {"Cache-Control": "no-cache"}
        return cls.stream(
            frames,
            content_type="text/event-stream",
            chunk_delay_s=chunk_delay_s,
            headers=headers,
            abort=abort,
        )

    @classmethod
    def dropped(cls, delay_s: float = 0.0) -> Reply:
        """Read the request, then close the connection without a response."""
        return cls(delay_s=delay_s, drop=True)


class ScriptedServer:
    """The server.  Start with ``with ScriptedServer() as server`` (or ``start()``/``close()``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[tuple[str, str], deque[Reply]] = {}
        self._handlers: dict[tuple[str, str], Handler] = {}
        self._requests: list[RecordedRequest] = []
        self._unexpected: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------

    def expect(self, method: str, path: str, *replies: Reply) -> ScriptedServer:
        """Queue ``replies`` for ``method path``; each request consumes the next one."""
        with self._lock:
            self._queues.setdefault((method.upper(), path), deque()).extend(replies)
        return self

    def on(self, method: str, path: str, handler: Handler) -> ScriptedServer:
        """Answer ``method path`` with ``handler(request)`` whenever its queue is empty."""
        with self._lock:
            self._handlers[(method.upper(), path)] = handler
        return self

    # -- inspection --------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        host, port = self._running().server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def port(self) -> int:
        return int(self._running().server_address[1])

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method.upper() and r.path == path]

    async def received(self, method: str, path: str, *, timeout_s: float = 5.0) -> list[RecordedRequest]:
        """``requests_to`` once at least one has arrived (or ``timeout_s`` passed).  A client that
        gave up (its timeout) may return before this server's thread read the request it sent."""
        deadline = time.monotonic() + timeout_s
        while not (found := self.requests_to(method, path)) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return found

    def pending(self) -> dict[tuple[str, str], int]:
        """Scripted replies not yet used, by route."""
        with self._lock:
            return {route: len(q) for route, q in self._queues.items() if q}

    def verify(self) -> None:
        """Fail unless every scripted reply was used, no request went unanswered and no handler raised."""
        with self._lock:
            problems = [
                f"unused scripted replies: {route[0]} {route[1]} x{len(q)}"
                for route, q in self._queues.items()
                if q
            ]
            problems += [f"unexpected request: {r.method} {r.path}" for r in self._unexpected]
            problems += [f"handler raised:\n{e}" for e in self._errors]
        if problems:
            raise AssertionError("scripted server: " + "\n".join(problems))

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> ScriptedServer:
        if self._httpd is not None:
            raise RuntimeError("scripted server already started")
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="scripted-http",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, cut delays short, close open connections and join every thread."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        thread.join()
        httpd.close_connections()
        httpd.server_close()  # joins the handler threads
        self._httpd = self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- used by the request handler ---------------------------------------------

    def _running(self) -> _HTTPServer:
        if self._httpd is None:
            raise RuntimeError("scripted server is not running; use it as a context manager")
        return self._httpd

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server is closing; True when the sleep ran its course."""
        return seconds <= 0 or not self._stopping.wait(seconds)

    def _answer(self, request: RecordedRequest) -> Reply:
        route = (request.method, request.path)
        with self._lock:
            self._requests.append(request)
            queue = self._queues.get(route)
            if queue:
                return queue.popleft()
            handler = self._handlers.get(route)
            if handler is None:
                self._unexpected.append(request)
        if handler is None:
            return Reply.json(
                {"error": f"scripted server: no reply for {request.method} {request.path}"}, 404
            )
        try:
            return handler(request)
        except Exception:
            with self._lock:
                self._errors.append(traceback.format_exc())
            return Reply.json({"error": "scripted server: handler raised"}, 500)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = True

    def __init__(self, owner: ScriptedServer) -> None:
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _RequestHandler)

    def opened(self, sock: socket.socket) -> None:
        with self._open_lock:
            self._open.add(sock)

    def closed(self, sock: socket.socket) -> None:
        with self._open_lock:
            self._open.discard(sock)

    def close_connections(self) -> None:
        """Wake handler threads blocked reading an idle keep-alive connection."""
        with self._open_lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (timeout tests, dropped replies) is not an error worth a traceback.
        pass


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY on every accepted socket
    timeout = 60  # an idle keep-alive connection is closed after this
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.opened(self.connection)

    def finish(self) -> None:
        self.server.closed(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        request = self._record()
        owner = self.server.owner
        reply = owner._answer(request)
        if not owner._sleep(reply.delay_s) or reply.drop:
            self._hang_up()
            return
        if reply.chunks is None:
            self._send_head(reply, {"Content-Length": str(len(reply.body))})
            self.wfile.write(reply.body)
        else:
            self._send_head(reply, {"Transfer-Encoding": "chunked"})
            self._send_chunks(reply)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _record(self) -> RecordedRequest:
        path, _, query = self.path.partition("?")
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        return RecordedRequest(self.command, path, query, headers, self._read_body(), time.monotonic())

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return b"".join(self._read_request_chunks())
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _read_request_chunks(self) -> Iterator[bytes]:
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            yield self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
            pass

    def _send_head(self, reply: Reply, framing: Mapping[str, str]) -> None:
        self.send_response(reply.status)
        for name, value in {**reply.headers, **framing}.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_chunks(self, reply: Reply) -> None:
        assert reply.chunks is not None
        owner = self.server.owner
        for chunk in reply.chunks:
            if not owner._sleep(reply.chunk_delay_s):
                break
            if chunk:  # an empty chunk would end the stream
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        if reply.abort_stream or owner._stopping.is_set():
            self._hang_up()
            return
        self.wfile.write(b"0\r\n\r\n")

    def _hang_up(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def chunk_event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One OpenAI ``chat.completion.chunk`` of a scripted upstream's stream (model ``up-model``)."""
    return {
        "id": "chatcmpl-up",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "up-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A started :class:`ScriptedServer`, closed after the test."""
    with ScriptedServer() as server:
        yield server
