"""The UI's session over plain HTTP: the cookie, the header that must come with it, and the limits."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from ragd.api.app import create_app
from ragd.settings import EmbeddingSettings, ServerSettings, Settings
from tests.kb.conftest import SERVICE_KEY, Api, new_tenant
from tests.support.live_server import LiveServer

UI = {"X-Ragd-UI": "1"}


@contextmanager
def signed_in(url: str, key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as client:
        r = client.post("/ui/session", json={"key": key}, headers=UI)
        assert r.status_code == 200, r.text
        yield client


def test_sign_in_sets_a_strict_httponly_cookie_that_is_not_the_key(ui_server: LiveServer) -> None:
    r = httpx.post(f"{ui_server.url}/ui/session", json={"key": SERVICE_KEY}, headers=UI)
    assert r.status_code == 200
    assert r.json()["service"] is True
    assert r.json()["can_admin"] is True
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("ragd_session=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert SERVICE_KEY not in cookie
    bad = httpx.post(f"{ui_server.url}/ui/session", json={"key": "wrong"}, headers=UI)
    assert bad.status_code == 401
    assert "set-cookie" not in bad.headers


def test_the_cookie_counts_only_with_the_ui_header_and_never_over_a_given_key(ui_server: LiveServer) -> None:
    with signed_in(ui_server.url, SERVICE_KEY) as client:
        assert client.get("/api/v1/datasets", headers=UI).status_code == 200
        assert client.get("/api/v1/datasets").status_code == 401  # a cross-site request has no UI header
        explicit = {**UI, "Authorization": "Bearer wrong-key"}
        assert client.get("/api/v1/datasets", headers=explicit).status_code == 401
        assert client.get("/ui/session", headers=UI).json()["service"] is True
        assert client.delete("/ui/session", headers=UI).status_code == 204
        assert client.get("/api/v1/datasets", headers=UI).status_code == 401
    assert httpx.get(f"{ui_server.url}/api/v1/datasets", headers=UI).status_code == 401  # header, no cookie


def test_a_tenant_session_is_the_tenant_key_and_a_garbage_cookie_is_a_401(
    ui_server: LiveServer, service_api: Api
) -> None:
    _, keys = new_tenant(service_api, "session-co", "reader")
    with signed_in(ui_server.url, keys["reader"].key) as client:
        me = client.get("/ui/session", headers=UI).json()
        assert (me["tenant_name"], me["role"], me["can_write"], me["service"]) == (
            "session-co",
            "reader",
            False,
            False,
        )
        created = client.post("/api/v1/datasets", json={"name": "nope"}, headers=UI)
        assert created.status_code == 403  # the key's role, exactly as on the API
    keys["reader"].close()
    for junk in ("%%%", "ab", "!" * 5000, "cmdkX2Zha2U"):
        r = httpx.get(f"{ui_server.url}/ui/session", headers=UI, cookies={"ragd_session": junk})
        assert r.status_code == 401, junk


def test_the_sign_in_body_is_size_limited_and_validated(ui_server: LiveServer) -> None:
    huge = httpx.post(
        f"{ui_server.url}/ui/session",
        content=b'{"key": "' + b"a" * (ServerSettings().max_json_bytes + 10) + b'"}',
        headers={**UI, "Content-Type": "application/json"},
    )
    assert huge.status_code == 413
    assert httpx.post(f"{ui_server.url}/ui/session", json={}, headers=UI).status_code == 422
    assert httpx.post(f"{ui_server.url}/ui/session", json={"key": "x" * 600}, headers=UI).status_code == 422


def test_an_open_service_needs_no_sign_in_and_the_ui_can_be_turned_off(
    tmp_path: Path, model_cache: Path
) -> None:
    embedding = EmbeddingSettings(cache_dir=model_cache)
    with TestClient(create_app(Settings(data_dir=tmp_path / "open", embedding=embedding))) as client:
        deadline = time.monotonic() + 120
        while client.get("/health/ready").status_code != 200:
            assert time.monotonic() < deadline, "ragd did not become ready"
            time.sleep(0.05)
        me = client.get("/ui/session", headers=UI).json()
        assert (me["open"], me["service"]) == (True, True)
        # any bearer is the service on an open service: the system screen says so ("open service")
        anyone = client.get("/api/v1/system", headers={"Authorization": "Bearer whatever"}).json()
        assert (anyone["principal"]["service"], anyone["principal"]["open"]) == (True, True)
    off = Settings(data_dir=tmp_path / "off", embedding=embedding, server=ServerSettings(ui_enabled=False))
    client = TestClient(create_app(off))
    assert client.get("/ui/", follow_redirects=False).status_code == 404
    assert client.get("/", follow_redirects=False).status_code == 404
