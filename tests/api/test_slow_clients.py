"""Slow-loris bounds (issue 30 §1.9): raw sockets against a live server run as ``ragd serve`` runs it.

Headers that do not arrive within ``server.header_timeout_s`` close the connection (trickling bytes
does not extend it, nor does a kept-alive connection start over); a body that stalls for
``server.body_timeout_s`` is a 408; more half-open connections than
``server.max_incomplete_requests`` close the oldest, and a real request still gets through.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from ragd.api.proxy_app import create_proxy_app, proxy_settings
from ragd.bootstrap.proxy import FolderProxy
from ragd.settings import EmbeddingSettings, ServerSettings, Settings
from tests.support.live_server import LiveServer
from tests.support.scripted_http import Reply, ScriptedServer

#: how long a test waits for the server to act on a 1 s bound before it calls the bound ignored
PATIENCE_S = 15.0


def _settings(data_dir: Path, model_cache: Path, **server: object) -> Settings:
    return Settings(
        data_dir=data_dir,
        embedding=EmbeddingSettings(cache_dir=model_cache),
        server=ServerSettings(**server),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings = _settings(tmp_path_factory.mktemp("slow"), model_cache, header_timeout_s=1, body_timeout_s=1)
    with LiveServer(create_app(settings)) as server:
        yield server


def _connect(server: LiveServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)


def _closed(sock: socket.socket) -> bool:
    """Whether the server closes ``sock`` (reading what it sends until then) within the patience."""
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def _head(server: LiveServer, method: str = "GET", path: str = "/health", **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _response(sock: socket.socket) -> tuple[int, dict[str, object], bytes]:
    """Read one HTTP/1.1 response with a Content-Length: (status, JSON body or {}, what follows)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"closed before a response: {data!r}"
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(rest) < length:
        piece = sock.recv(65536)
        assert piece, "closed in the middle of a response"
        rest += piece
    body = json.loads(rest[:length]) if length else {}
    return status, body, rest[length:]


def test_half_a_header_line_is_cut_off(live: LiveServer) -> None:
    with _connect(live) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaa")
        assert _closed(sock), "a connection with half a header stayed open"


def test_trickling_bytes_does_not_extend_the_header_deadline(live: LiveServer) -> None:
    """One byte every 0.2 s (each one used to cancel uvicorn's only timer, the keep-alive one)."""
    with _connect(live) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sock.settimeout(0.2)
        deadline = time.monotonic() + PATIENCE_S
        cut = False
        while time.monotonic() < deadline and not cut:
            try:
                sock.sendall(b"X")
                cut = sock.recv(1) == b""
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                cut = True
        assert cut, "a trickle of header bytes kept the connection open"


def test_a_kept_alive_connection_gets_the_same_deadline(live: LiveServer) -> None:
    with _connect(live) as sock:
        sock.sendall(_head(live))
        status, _, _ = _response(sock)
        assert status == 200
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 1")  # the next request, half sent
        assert _closed(sock)


def test_a_stalled_body_is_a_408(live: LiveServer) -> None:
    with _connect(live) as sock:
        head = _head(live, "POST", "/api/v1/datasets", Content_Type="application/json", Content_Length="1000")
        sock.sendall(head + b'{"name": "slo')
        status, body, _ = _response(sock)
        assert status == 408
        assert body["detail"]["code"] == "REQUEST_TIMEOUT"  # type: ignore[index]
        assert _closed(sock), "the connection stayed open after the 408"


def test_a_stalled_body_on_v1_is_a_408_in_openai_shape(live: LiveServer) -> None:
    with _connect(live) as sock:
        head = _head(live, "POST", "/v1/embeddings", Content_Type="application/json", Content_Length="500")
        sock.sendall(head + b'{"input": ["a')
        status, body, _ = _response(sock)
        assert status == 408
        assert body["error"]["code"] == "REQUEST_TIMEOUT"  # type: ignore[index]


def test_a_slow_body_that_keeps_coming_is_read_whole(live: LiveServer) -> None:
    """The body bound is on a stall, not on the whole upload: pieces 0.3 s apart for 3 s are fine."""
    payload = json.dumps({"queries": ["alpha"], "collection_names": ["kb"]}).encode()
    payload += b" " * (10 - len(payload) % 10)
    with _connect(live) as sock:
        head = _head(
            live, "POST", "/search", Content_Type="application/json", Content_Length=str(len(payload))
        )
        sock.sendall(head)
        step = len(payload) // 10
        for start in range(0, len(payload), step):
            time.sleep(0.3)
            sock.sendall(payload[start : start + step])
        status, body, _ = _response(sock)
        assert status != 408, body
        assert body.get("detail", {}).get("code") != "REQUEST_TIMEOUT"  # type: ignore[union-attr]


@pytest.mark.slow  # a proxy started for this test alone: ~16 s on 2 cores
def test_a_long_streamed_answer_is_not_cut_by_the_body_bound(
    tmp_path: Path, model_cache: Path, folder: Path
) -> None:
    """Once the body is in, the answer may take longer than the bound: ``ragd proxy`` relays an
    upstream that waits 1.5 s, then streams for 2.5 s (Starlette's streamed answer keeps a
    ``receive()`` open all along, for the client's going away)."""
    chunks = [f"part {i}\n" for i in range(5)]
    with ScriptedServer() as upstream:
        reply = Reply.stream(chunks, chunk_delay_s=0.5)
        upstream.expect("POST", "/v1/slow", replace(reply, delay_s=1.5))
        base = _settings(tmp_path / "data", model_cache, body_timeout_s=1)
        settings = proxy_settings(base, upstream=f"{upstream.url}/v1", collection="docs")
        app = create_proxy_app(settings, FolderProxy(folder=folder, collection="docs"))
        with LiveServer(app) as server:
            server.wait_ready()
            r = httpx.post(f"{server.url}/v1/slow", content=b"{}", timeout=PATIENCE_S)
    assert r.status_code == 200, r.text
    assert r.text == "".join(chunks)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("proxy") / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text("# Alpha\nThe alpha protocol needs three approvals.\n")
    return docs


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    """Five half-open connections at most; a header deadline far longer than the test."""
    settings = _settings(
        tmp_path_factory.mktemp("bounded"), model_cache, header_timeout_s=600, max_incomplete_requests=5
    )
    with LiveServer(create_app(settings)) as server:
        yield server


def test_more_half_open_connections_than_the_bound_close_the_oldest(bounded: LiveServer) -> None:
    socks = [_connect(bounded) for _ in range(20)]
    try:
        for sock in socks:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        # a real client still gets through, on a connection of its own
        assert httpx.get(f"{bounded.url}/health", timeout=PATIENCE_S).status_code == 200
        closed = [_closed(sock) for sock in socks[:15]]
        assert all(closed), f"{closed.count(False)} of the 15 oldest half-open connections stayed open"
        for sock in socks[-4:]:  # the newest are still waiting (the real client took the 5th place)
            sock.settimeout(0.5)
            assert not _closed(sock)
    finally:
        for sock in socks:
            sock.close()


def test_ragd_serve_runs_uvicorn_with_these_bounds(
    tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ragd serve`` and ``ragd proxy`` (``_serve_app``) hand uvicorn this configuration."""
    import uvicorn

    from ragd.api.slow_clients import HeaderDeadline
    from ragd.cli import app as cli

    configs: list[uvicorn.Config] = []

    class Captured:
        def __init__(self, config: uvicorn.Config) -> None:
            configs.append(config)
            self.should_exit = False

        def run(self) -> None:
            pass

    monkeypatch.setattr(uvicorn, "Server", Captured)
    settings = _settings(tmp_path, model_cache, port=0, max_connections=7, header_timeout_s=3)
    cli._serve_app(create_app(settings), settings)
    (config,) = configs
    assert (config.limit_concurrency, config.http) == (7, HeaderDeadline)
    assert getattr(config, "header_timeout_s", None) == 3
