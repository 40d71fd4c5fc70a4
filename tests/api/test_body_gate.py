"""The key and the JSON size are checked before a body is read: raw HTTP on a live server.

A client sends the headers of a 200 MiB request and its first 64 KiB, then waits: the answer
(401 without a key, 413 over the JSON limit) must arrive while the rest is still unsent.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from ragd.settings import LlmSettings
from tests.api.conftest import AUTH, KEY, service_settings
from tests.kb.conftest import Api, new_tenant
from tests.support.live_server import LiveServer

HUGE = 200 * 1024 * 1024


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("gate"), model_cache, max_json_bytes=1_000_000)
    # the chat proxy's routes exist once an upstream is named (never called here: every request is refused)
    settings = settings.model_copy(update={"llm": LlmSettings(base_url="http://127.0.0.1:9/v1")})  # type: ignore[call-arg]
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        yield server


@pytest.fixture(scope="module")
def tenant_key(live: LiveServer) -> str:
    service = Api(live.url, KEY)
    _, keys = new_tenant(service, "acme", "editor")
    service.close()
    return keys["editor"].key


#: every route class that reads a body: the plain search, the ingestion service, the dataset API,
#: the model endpoints, the chat proxy, MCP
BODY_ROUTES = [
    ("POST", "/search"),
    ("PUT", "/api/v1/ingest"),
    ("POST", "/api/v1/search"),
    ("POST", "/api/v1/datasets"),
    ("POST", "/v1/embeddings"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/mcp"),
]
WRONG_KEYS = {
    "no key": {},
    "wrong key": {"Authorization": "Bearer wrong-key-0123456789abcdef0123"},
    # a tenant key's shape with no such key: was let through to the route, which read the body first
    "made-up tenant key": {"Authorization": "Bearer rgd_" + "x" * 43},
}


def _first_answer(
    server: LiveServer, path: str, headers: dict[str, str], *, chunked: bool = False, method: str = "POST"
) -> str:
    """Send the head of a huge request and 64 KiB of it; return the status line that comes back."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {HUGE}")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        piece = b'{"queries": ["' + b"a" * 65_536
        for _ in range(24 if chunked else 1):  # chunked: 1.5 MiB in 64 KiB chunks, over the 1 MB limit
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
        return sock.recv(4096).decode("latin-1").split("\r\n", 1)[0]


@pytest.mark.parametrize("who", list(WRONG_KEYS))
@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
def test_no_valid_key_is_a_401_before_the_body(live: LiveServer, method: str, path: str, who: str) -> None:
    assert _first_answer(live, path, WRONG_KEYS[who], method=method).startswith("HTTP/1.1 401")


def test_a_revoked_tenant_key_is_a_401_before_the_body(live: LiveServer) -> None:
    service = Api(live.url, KEY)
    tenant, keys = new_tenant(service, "revoked", "reader")
    key_id = service.ok("GET", f"/api/v1/tenants/{tenant}/keys", 200)["keys"][0]["id"]
    service.ok("DELETE", f"/api/v1/tenants/{tenant}/keys/{key_id}", 200)
    service.close()
    revoked = {"Authorization": f"Bearer {keys['reader'].key}"}
    assert _first_answer(live, "/api/v1/search", revoked).startswith("HTTP/1.1 401")


def test_a_live_tenant_key_passes_the_gate(live: LiveServer, tenant_key: str) -> None:
    headers = {"Authorization": f"Bearer {tenant_key}"}
    assert _first_answer(live, "/api/v1/search", headers).startswith("HTTP/1.1 413")  # read, then too big
    made = httpx.post(f"{live.url}/api/v1/datasets", json={"name": "gate"}, headers=headers, timeout=30)
    assert made.status_code == 201, made.text


def test_a_tenant_key_is_looked_up_once_per_request(
    live: LiveServer, tenant_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The body gate, the rate gate and the route's principal share one catalog lookup."""
    catalog = live.app.state.ragd.ready_services().knowledge().catalog
    lookups: list[str] = []
    resolve = catalog.resolve_key

    async def counted(secret: str) -> object:
        lookups.append(secret)
        return await resolve(secret)

    monkeypatch.setattr(catalog, "resolve_key", counted)
    headers = {"Authorization": f"Bearer {tenant_key}"}
    found = httpx.post(f"{live.url}/api/v1/search", json={"query": "gate"}, headers=headers, timeout=60)
    assert found.status_code == 200, found.text
    assert lookups == [tenant_key]


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_the_ui_sign_in_takes_only_a_small_body(live: LiveServer, chunked: bool) -> None:
    # no key is asked for there (the key is in the body): 16 MiB of JSON cost +815 MB and 18.6 s
    assert _first_answer(live, "/ui/session", {}, chunked=chunked).startswith("HTTP/1.1 413")
    big = httpx.post(f"{live.url}/ui/session", content=b"{" + b" " * 5000 + b"}", timeout=30)
    assert big.status_code == 413
    assert big.json()["detail"]["code"] == "REQUEST_TOO_LARGE"
    signed_in = httpx.post(f"{live.url}/ui/session", json={"key": KEY}, timeout=30)
    assert signed_in.status_code == 200, signed_in.text


def test_a_json_body_over_the_limit_is_a_413_before_it_is_read(live: LiveServer) -> None:
    assert _first_answer(live, "/search", AUTH).startswith("HTTP/1.1 413")


def test_a_chunked_json_body_is_counted_as_it_arrives(live: LiveServer) -> None:
    assert _first_answer(live, "/search", AUTH, chunked=True).startswith("HTTP/1.1 413")


def test_refusals_keep_each_surfaces_shape(live: LiveServer) -> None:
    big = {"queries": ["x" * 1_100_000], "collection_names": ["kb"]}
    plain = httpx.post(f"{live.url}/search", json=big, headers=AUTH, timeout=30)
    assert plain.status_code == 413
    assert plain.json()["detail"]["code"] == "REQUEST_TOO_LARGE"
    assert "RAGD_SERVER__MAX_JSON_BYTES" in plain.json()["detail"]["hint"]
    openai = httpx.post(f"{live.url}/v1/chat/completions", json={"model": "m", "messages": []}, timeout=30)
    assert openai.status_code in (401, 404)  # 404 when no chat upstream is configured: no such route
    unauthorized = httpx.post(f"{live.url}/search", json={"queries": ["x"]}, timeout=30)
    assert unauthorized.status_code == 401
    assert unauthorized.json() == {"detail": "Invalid API key"}
    assert unauthorized.headers["www-authenticate"] == "Bearer"


def test_a_normal_request_with_the_key_still_works(live: LiveServer) -> None:
    response = httpx.post(
        f"{live.url}/search", json={"queries": ["x"], "collection_names": ["kb"]}, headers=AUTH, timeout=30
    )
    assert response.status_code == 200, response.text
    assert KEY not in response.text


def _ui_cookie(live: LiveServer, key: str) -> str:
    signed_in = httpx.post(
        f"{live.url}/ui/session", json={"key": key}, headers={"X-Ragd-UI": "1"}, timeout=30
    )
    assert signed_in.status_code == 200, signed_in.text
    return signed_in.cookies["ragd_session"]


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
def test_a_dead_or_unknown_ui_session_is_a_401_before_the_body(
    live: LiveServer, method: str, path: str
) -> None:
    cookie = _ui_cookie(live, KEY)
    ended = httpx.delete(
        f"{live.url}/ui/session", headers={"X-Ragd-UI": "1"}, cookies={"ragd_session": cookie}
    )
    assert ended.status_code == 204
    # signed out: the old cookie was the key until issue 30, so it still passed the gate
    for value in (cookie, "x" * 43, "not a session"):
        headers = {"X-Ragd-UI": "1", "Cookie": f"ragd_session={value}"}
        assert _first_answer(live, path, headers, method=method).startswith("HTTP/1.1 401"), value


def test_a_live_ui_session_passes_the_gate(live: LiveServer, tenant_key: str) -> None:
    cookie = _ui_cookie(live, tenant_key)
    headers = {"X-Ragd-UI": "1", "Cookie": f"ragd_session={cookie}"}
    assert _first_answer(live, "/api/v1/search", headers).startswith("HTTP/1.1 413")  # read, then too big
    without_ui_header = {"Cookie": f"ragd_session={cookie}"}  # what another site's form would send
    assert _first_answer(live, "/api/v1/search", without_ui_header).startswith("HTTP/1.1 401")
