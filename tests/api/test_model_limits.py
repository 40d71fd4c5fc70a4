"""The model endpoints' documented limits, set low, over a live server: inputs per request,
characters per input, characters in all (413 ``INPUT_TOO_LARGE`` in each surface's error shape),
and a body bigger than such a request can need is refused before it is read."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragd.api.app import create_app
from ragd.model_inputs import InputLimits
from tests.api.conftest import AUTH, KEY, service_settings
from tests.support.live_server import LiveServer

LIMITS = {"max_embed_inputs": 3, "max_input_chars": 50, "max_total_chars": 100}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("limits"), model_cache, **LIMITS)
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        yield server


def post(live: LiveServer, path: str, body: Any) -> httpx.Response:
    return httpx.post(f"{live.url}{path}", json=body, headers=AUTH, timeout=60)


@pytest.mark.parametrize(
    ("texts", "words"),
    [
        (["a"] * 4, "4 inputs in one request; at most 3"),
        (["a" * 51], "input 0 has 51 characters; at most 50"),
        (["a" * 40] * 3, "120 characters in all; at most 100"),
    ],
)
def test_past_a_limit_is_a_413_naming_it(live: LiveServer, texts: list[str], words: str) -> None:
    response = post(live, "/v1/embeddings", {"input": texts})
    assert response.status_code == 413, response.text
    error = response.json()["error"]  # OpenAI's shape on /v1
    assert error["code"] == "INPUT_TOO_LARGE"
    assert error["type"] == "invalid_request_error"
    assert words in error["message"]
    assert "RAGD_SERVER__MAX_" in error["message"]
    tei = post(live, "/embed", {"inputs": texts})
    assert tei.status_code == 413, tei.text
    assert tei.json()["detail"]["code"] == "INPUT_TOO_LARGE"  # ragd's shape elsewhere
    assert words in tei.json()["detail"]["error"]
    ragproxy = post(live, "/ragproxy/embed", {"texts": texts})
    assert ragproxy.status_code == 413, ragproxy.text
    assert ragproxy.json()["detail"]["code"] == "INPUT_TOO_LARGE"


def test_within_the_limits_is_embedded(live: LiveServer) -> None:
    response = post(live, "/v1/embeddings", {"input": ["a" * 50, "b" * 50]})
    assert response.status_code == 200, response.text
    assert len(response.json()["data"]) == 2


@pytest.mark.parametrize("path", ["/v1/embeddings", "/ragproxy/embed"])
def test_a_body_bigger_than_the_limits_need_is_refused_unread(live: LiveServer, path: str) -> None:
    """Only the head is sent: the 413 comes before a byte of the declared body."""
    limit = InputLimits(3, 50, 100).body_bytes
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {live.url.removeprefix('http://')}\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {limit + 1}\r\n\r\n"
    )
    host, port = live.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head.encode())
        answer = sock.recv(65536).decode("latin-1")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert '"REQUEST_TOO_LARGE"' in answer
    assert f"this route's {limit:,}-byte limit" in answer
    fits = post(live, "/v1/embeddings", {"input": ["a" * 50], "extra": "x" * (limit - 200)})  # ignored
    assert fits.status_code == 200, fits.text[:300]
