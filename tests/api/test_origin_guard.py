"""Host and Origin checks (issue 30 §1.3): live ``ragd serve`` and ``ragd proxy`` apps on loopback.

A service without a key answers only loopback names (DNS rebinding sends the attacker's name in
``Host``) and refuses cross-site writes (a form's upload, a ``text/plain`` chat, ``/reindex``);
the UI's session cookie gets the Origin check on a keyed service too; a Bearer client from another
server (no cookie, any Origin) is never affected.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from ragd.api.app import create_app
from ragd.api.proxy_app import create_proxy_app, proxy_settings
from ragd.bootstrap.proxy import FolderProxy
from ragd.settings import EmbeddingSettings, LlmSettings, ServerSettings, Settings
from tests.api.conftest import AUTH, KEY, service_settings
from tests.support.live_server import LiveServer

DEAD_UPSTREAM = "http://127.0.0.1:9/v1"  # the chat routes exist; never reached: refused before
ATTACKER = "http://attacker.example"
SEARCH = {"queries": ["alpha"], "collection_names": ["kb"]}


def _keyless(data_dir: Path, model_cache: Path, **server: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        embedding=EmbeddingSettings(cache_dir=model_cache),
        llm=LlmSettings(base_url=DEAD_UPSTREAM),  # type: ignore[call-arg]
        server=ServerSettings(**server),
    )


@pytest.fixture(scope="module")
def open_live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    """``ragd serve`` without a key (loopback only)."""
    with LiveServer(create_app(_keyless(tmp_path_factory.mktemp("open"), model_cache))) as server:
        server.wait_ready()
        yield server


@pytest.fixture(scope="module")
def keyed_live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    with LiveServer(create_app(service_settings(tmp_path_factory.mktemp("keyed"), model_cache))) as server:
        server.wait_ready()
        yield server


@pytest.fixture(scope="module")
def proxy_live(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    """``ragd proxy`` without a key over a one-file folder."""
    folder = tmp_path_factory.mktemp("proxy") / "docs"
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\nThe alpha protocol needs three approvals.\n")
    base = _keyless(tmp_path_factory.mktemp("proxy-data"), model_cache)
    settings = proxy_settings(base, upstream=DEAD_UPSTREAM, collection="docs")
    with LiveServer(create_proxy_app(settings, FolderProxy(folder=folder, collection="docs"))) as server:
        server.wait_ready()
        yield server


def _own(server: LiveServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def _detail(response: httpx.Response) -> dict[str, Any]:
    detail: dict[str, Any] = response.json()["detail"]
    return detail


# -- Host, on a service without a key ------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/health"), ("GET", "/api/v1/datasets"), ("POST", "/search")]
)
def test_a_keyless_service_refuses_a_foreign_host(open_live: LiveServer, method: str, path: str) -> None:
    r = httpx.request(method, f"{open_live.url}{path}", headers={"Host": "attacker.example"}, json=SEARCH)
    assert r.status_code == 403, r.text
    assert _detail(r)["code"] == "HOST_NOT_ALLOWED"
    assert "RAGD_SERVER__ALLOWED_HOSTS" in _detail(r)["hint"]


def test_the_refusal_has_the_openai_shape_on_v1(open_live: LiveServer) -> None:
    r = httpx.get(f"{open_live.url}/v1/models", headers={"Host": "attacker.example:8000"})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "HOST_NOT_ALLOWED"


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "127.0.0.2", "[::1]:{port}"]
)
def test_a_keyless_service_answers_loopback_names(open_live: LiveServer, host: str) -> None:
    r = httpx.get(f"{open_live.url}/health", headers={"Host": host.format(port=open_live.port)})
    assert r.status_code == 200, r.text


def test_a_listed_host_is_answered_and_others_are_not(tmp_path: Path, model_cache: Path) -> None:
    """``RAGD_SERVER__ALLOWED_HOSTS`` (the app is not started: the guard answers before any route)."""
    settings = _keyless(tmp_path, model_cache, allowed_hosts="rag.internal,Docs.Example.")
    app = create_app(settings)
    for host in ("rag.internal", "rag.internal:8000", "docs.example"):
        assert TestClient(app, base_url=f"http://{host}").get("/health").status_code == 200, host
    refused = TestClient(app, base_url="http://rag.internal.attacker.example").get("/health")
    assert refused.status_code == 403
    anyone = create_app(_keyless(tmp_path, model_cache, allowed_hosts="*"))
    assert TestClient(anyone, base_url="http://anything.example").get("/health").status_code == 200


def test_a_keyed_service_answers_any_host(keyed_live: LiveServer) -> None:
    r = httpx.post(f"{keyed_live.url}/search", headers={**AUTH, "Host": "rag.example.com"}, json=SEARCH)
    assert r.status_code == 200, r.text


# -- Origin, on a service without a key ----------------------------------------------------------


def test_a_cross_site_text_plain_chat_is_refused(open_live: LiveServer) -> None:
    body = '{"model": "rag/kb", "messages": [{"role": "user", "content": "hi"}]}'
    r = httpx.post(
        f"{open_live.url}/v1/chat/completions",
        content=body,
        headers={"Content-Type": "text/plain", "Origin": ATTACKER},
    )
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"


def test_a_cross_site_multipart_upload_is_refused(open_live: LiveServer) -> None:
    form = {"file_id": "x", "filename": "x.md", "collection_name": "kb", "user_id": "u"}
    r = httpx.put(
        f"{open_live.url}/api/v1/ingest",
        files={"file": ("x.md", b"# X\nplanted\n")},
        data=form,
        headers={"Origin": ATTACKER},
    )
    assert r.status_code == 403, r.text
    # the ingestion-service surface keeps its own code; ragd's is the reason
    assert _detail(r)["code"] == "INVALID_REQUEST"
    assert _detail(r)["reason"] == "ORIGIN_NOT_ALLOWED"


@pytest.mark.parametrize(
    "origin",
    [
        ATTACKER,
        "null",  # a sandboxed frame, a file:// page
        "http://127.0.0.1:1",  # another port on this host is another origin
        "http://127.0.0.1.attacker.example:{port}",
    ],
)
def test_a_foreign_origin_cannot_write(open_live: LiveServer, origin: str) -> None:
    headers = {"Origin": origin.format(port=open_live.port)}
    r = httpx.post(f"{open_live.url}/search", json=SEARCH, headers=headers)
    assert r.status_code == 403, r.text
    assert _detail(r)["code"] == "ORIGIN_NOT_ALLOWED"


def test_cross_site_without_origin_is_refused_too(open_live: LiveServer) -> None:
    r = httpx.post(f"{open_live.url}/search", json=SEARCH, headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert _detail(r)["code"] == "ORIGIN_NOT_ALLOWED"


@pytest.mark.parametrize("same", ["own", "none", "localhost"])
def test_same_origin_and_no_origin_writes_work(open_live: LiveServer, same: str) -> None:
    headers = {
        "own": {"Origin": _own(open_live), "Sec-Fetch-Site": "same-origin"},
        "none": {},
        "localhost": {"Origin": f"http://localhost:{open_live.port}", "Host": f"localhost:{open_live.port}"},
    }[same]
    r = httpx.post(f"{open_live.url}/search", json=SEARCH, headers=headers)
    assert r.status_code == 200, r.text


def test_reads_from_another_origin_are_answered(open_live: LiveServer) -> None:
    """A GET changes nothing, and without CORS consent the page cannot read the answer."""
    r = httpx.get(f"{open_live.url}/health", headers={"Origin": ATTACKER})
    assert r.status_code == 200


def test_a_listed_cors_origin_may_write(tmp_path: Path, model_cache: Path) -> None:
    app = create_app(_keyless(tmp_path, model_cache, cors_origins="https://chat.example.com"))
    client = TestClient(app, base_url="http://127.0.0.1")
    allowed = client.post("/search", json={}, headers={"Origin": "https://chat.example.com:443"})
    assert allowed.status_code != 403, allowed.text  # past the guard (then: not ready, or invalid)
    refused = client.post("/search", json={}, headers={"Origin": "https://other.example.com"})
    assert refused.status_code == 403


# -- the proxy --------------------------------------------------------------------------------------


def test_the_keyless_proxy_refuses_a_foreign_host(proxy_live: LiveServer) -> None:
    for path in ("/files", "/health", "/v1/models", "/anything/relayed"):
        r = httpx.get(f"{proxy_live.url}{path}", headers={"Host": "attacker.example"})
        assert r.status_code == 403, (path, r.text)
    assert httpx.get(f"{proxy_live.url}/files").status_code == 200


def test_the_keyless_proxy_refuses_a_cross_site_reindex(proxy_live: LiveServer) -> None:
    refused = httpx.post(f"{proxy_live.url}/reindex", headers={"Origin": ATTACKER})
    assert refused.status_code == 403, refused.text
    assert _detail(refused)["code"] == "ORIGIN_NOT_ALLOWED"
    own = httpx.post(f"{proxy_live.url}/reindex", headers={"Origin": _own(proxy_live)}, timeout=60)
    assert own.status_code == 200, own.text


# -- a keyed service: Bearer clients unaffected, the UI's cookie checked -------------------------


def test_a_bearer_client_with_a_foreign_origin_works(keyed_live: LiveServer) -> None:
    """A server-to-server client (or a page the operator let in with the key) is not a cookie."""
    r = httpx.post(f"{keyed_live.url}/search", json=SEARCH, headers={**AUTH, "Origin": ATTACKER})
    assert r.status_code == 200, r.text


@pytest.fixture
def ui_session(keyed_live: LiveServer) -> Iterator[httpx.Client]:
    """A browser-like client signed in to the UI from its own origin (cookie jar, X-Ragd-UI)."""
    own = {"Origin": _own(keyed_live), "X-Ragd-UI": "1"}
    with httpx.Client(base_url=keyed_live.url, headers=own) as client:
        signed = client.post("/ui/session", json={"key": KEY})
        assert signed.status_code == 200, signed.text
        assert client.cookies, "the sign-in set no cookie"
        yield client


def test_the_ui_cookie_works_from_its_own_origin(ui_session: httpx.Client) -> None:
    r = ui_session.post("/api/v1/tenants", json={"name": "own-origin"})
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("origin", [ATTACKER, "http://127.0.0.1:1"])
def test_the_ui_cookie_from_a_foreign_origin_cannot_write(ui_session: httpx.Client, origin: str) -> None:
    r = ui_session.post("/api/v1/tenants", json={"name": "planted"}, headers={"Origin": origin})
    assert r.status_code == 403, r.text
    assert _detail(r)["code"] == "ORIGIN_NOT_ALLOWED"
    names = [t["name"] for t in ui_session.get("/api/v1/tenants").json()["tenants"]]
    assert "planted" not in names


def test_a_cross_site_sign_in_is_refused(keyed_live: LiveServer) -> None:
    """Login CSRF: a page must not sign the browser in with a key of its choosing."""
    r = httpx.post(f"{keyed_live.url}/ui/session", json={"key": KEY}, headers={"Origin": ATTACKER})
    assert r.status_code == 403, r.text
    assert "set-cookie" not in r.headers


def test_mcp_answers_a_listed_host_too(tmp_path: Path, model_cache: Path) -> None:
    """The MCP SDK's own rebinding check takes the same list (it answered 421 to a listed name)."""
    app = create_app(_keyless(tmp_path, model_cache, allowed_hosts="rag.internal"))
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    with TestClient(app, base_url="http://rag.internal:8000") as client:
        r = client.post("/mcp", json=hello, headers=accept)
        assert r.status_code == 200, r.text
        assert r.json()["result"]["serverInfo"]
        foreign = client.post("/mcp", json=hello, headers={**accept, "Host": "attacker.example"})
        assert foreign.status_code == 403


def _echo_app() -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


@pytest.mark.parametrize(
    ("host", "origin", "passes"),
    [
        ("rag.example.com", "https://rag.example.com", True),
        ("rag.example.com:443", "https://rag.example.com", True),  # a default port, written or not
        ("rag.example.com", "http://rag.example.com:80", True),
        ("rag.example.com:8443", "https://rag.example.com:8443", True),
        ("RAG.example.com", "https://rag.EXAMPLE.com", True),
        ("[::1]:8000", "http://[::1]:8000", True),
        ("rag.example.com", "https://rag.example.com.attacker.example", False),
        ("rag.example.com:8443", "https://rag.example.com", False),
        ("rag.example.com", "https://rag.example.com/ui/", False),  # not an origin
        ("rag.example.com", "https://user@rag.example.com", False),
        ("rag.example.com", "null", False),
        ("[::1]:8000", "http://[::1]:8001", False),
    ],
)
def test_an_origin_is_compared_with_the_host_it_came_to(host: str, origin: str, passes: bool) -> None:
    """What counts as the request's own origin (the guard alone, on a keyed service with the cookie)."""
    from ragd.api.origin_guard import OriginGuard

    guarded = OriginGuard(_echo_app(), ServerSettings(api_key=KEY), session_cookie="ragd_session")
    client = TestClient(guarded, base_url="http://127.0.0.1")
    headers = {"Host": host, "Origin": origin, "Cookie": "ragd_session=abc"}
    status = client.post("/api/v1/tenants", headers=headers).status_code
    assert (status == 204) == passes, status


def test_the_session_cookie_is_found_in_any_cookie_header() -> None:
    from ragd.api.origin_guard import OriginGuard

    guarded = OriginGuard(_echo_app(), ServerSettings(api_key=KEY), session_cookie="ragd_session")
    client = TestClient(guarded, base_url="http://127.0.0.1")
    for cookies in (["theme=dark", "ragd_session=abc"], ["__Host-ragd_session=abc"]):
        headers = [("Origin", ATTACKER), *(("Cookie", c) for c in cookies)]
        assert client.post("/api/v1/tenants", headers=headers).status_code == 403, cookies
    assert (
        client.post("/api/v1/tenants", headers={"Origin": ATTACKER, "Cookie": "theme=dark"}).status_code
        == 204
    )
