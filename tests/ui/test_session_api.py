"""The UI's session over plain HTTP: the cookie, the header that must come with it, and the limits."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from ragd.api.app import create_app
from ragd.settings import EmbeddingSettings, ServerSettings, Settings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer

UI = {"X-Ragd-UI": "1"}
AUTH = {"Authorization": f"Bearer {SERVICE_KEY}"}


@contextmanager
def signed_in(url: str, key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as client:
        r = client.post("/ui/session", json={"key": key}, headers=UI)
        assert r.status_code == 200, r.text
        yield client


def _encodings(key: str) -> set[str]:
    raw = key.encode()
    return {key, *(f(raw).decode().rstrip("=") for f in (base64.b64encode, base64.urlsafe_b64encode))}


def test_sign_in_sets_a_strict_httponly_cookie_that_is_not_the_key(ui_server: LiveServer) -> None:
    r = httpx.post(f"{ui_server.url}/ui/session", json={"key": SERVICE_KEY}, headers=UI)
    assert r.status_code == 200
    cookie = r.headers["set-cookie"]
    # the key is in no cookie and no answer, not even encoded (until issue 30 the cookie was its base64)
    for spelling in _encodings(SERVICE_KEY):
        assert spelling not in cookie
        assert spelling not in r.text
    assert r.json()["service"] is True
    assert r.json()["can_admin"] is True
    assert r.json()["session"]["expires_at"] > time.time()
    assert cookie.startswith("ragd_session=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert f"Max-Age={int(ServerSettings().ui_session_ttl_s)}" in cookie
    assert len(r.cookies["ragd_session"]) >= 40
    bad = httpx.post(f"{ui_server.url}/ui/session", json={"key": "wrong"}, headers=UI)
    assert bad.status_code == 401
    assert "set-cookie" not in bad.headers


def test_every_sign_in_is_a_session_of_its_own(ui_server: LiveServer) -> None:
    with signed_in(ui_server.url, SERVICE_KEY) as one, signed_in(ui_server.url, SERVICE_KEY) as two:
        assert one.cookies["ragd_session"] != two.cookies["ragd_session"]
        first = one.get("/ui/session", headers=UI).json()["session"]["id"]
        assert two.get("/ui/session", headers=UI).json()["session"]["id"] != first


def test_the_cookie_counts_only_with_the_ui_header_and_never_over_a_given_key(ui_server: LiveServer) -> None:
    with signed_in(ui_server.url, SERVICE_KEY) as client:
        assert client.get("/api/v1/datasets", headers=UI).status_code == 200
        assert client.get("/api/v1/datasets").status_code == 401  # a cross-site request has no UI header
        explicit = {**UI, "Authorization": "Bearer wrong-key"}
        assert client.get("/api/v1/datasets", headers=explicit).status_code == 401
        assert client.get("/ui/session", headers=UI).json()["service"] is True
        cookie = client.cookies["ragd_session"]
        assert client.delete("/ui/session", headers=UI).status_code == 204
        assert client.get("/api/v1/datasets", headers=UI).status_code == 401
    assert httpx.get(f"{ui_server.url}/api/v1/datasets", headers=UI).status_code == 401  # header, no cookie
    # sign-out revoked the session server-side: the old cookie, sent again, is refused
    replayed = {"ragd_session": cookie}
    for path in ("/ui/session", "/api/v1/datasets", "/api/v1/sessions"):
        assert httpx.get(f"{ui_server.url}{path}", headers=UI, cookies=replayed).status_code == 401, path
    assert (
        httpx.get(f"{ui_server.url}/api/v1/datasets", headers=AUTH).status_code == 200
    )  # the key still works


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
    open_app = create_app(Settings(data_dir=tmp_path / "open", embedding=embedding))
    # a service without a key answers loopback names only (TestClient's own is "testserver")
    with TestClient(open_app, base_url="http://127.0.0.1") as client:
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
    client = TestClient(create_app(off), base_url="http://127.0.0.1")
    assert client.get("/ui/", follow_redirects=False).status_code == 404
    assert client.get("/", follow_redirects=False).status_code == 404


def _cookie_of(url: str, key: str, agent: str = "test-agent/1.0") -> dict[str, str]:
    r = httpx.post(f"{url}/ui/session", json={"key": key}, headers={**UI, "User-Agent": agent})
    assert r.status_code == 200, r.text
    return {"ragd_session": r.cookies["ragd_session"]}


def _me(url: str, cookie: dict[str, str]) -> httpx.Response:
    return httpx.get(f"{url}/ui/session", headers=UI, cookies=cookie)


def test_sessions_are_listed_with_their_key_and_revoked_by_an_admin(
    ui_server: LiveServer, service_api: Api
) -> None:
    url = ui_server.url
    tenant, keys = new_tenant(service_api, "listed-co", "admin", "reader")
    reader_cookie = _cookie_of(url, keys["reader"].key, "Firefox/" + "9" * 300)
    admin_cookie = _cookie_of(url, keys["admin"].key)
    reader_id = _me(url, reader_cookie).json()["key_id"]
    admin = keys["admin"]

    listed = admin.ok("GET", f"/api/v1/tenants/{tenant}/sessions")["sessions"]
    assert len(listed) == 2
    mine = next(s for s in listed if s["key_id"] == reader_id)
    assert (mine["role"], mine["tenant_id"], mine["user_agent"]) == (
        "reader",
        tenant,
        ("Firefox/" + "9" * 300)[:200],
    )
    assert mine["created_at"] <= mine["last_seen_at"] < mine["expires_at"]
    assert all(reader_cookie["ragd_session"] not in str(s) for s in listed)  # never the secret
    counts = {k["id"]: k["sessions"] for k in admin.ok("GET", f"/api/v1/tenants/{tenant}/keys")["keys"]}
    assert counts[reader_id] == 1
    assert sum(counts.values()) == 2

    # a reader may not manage sessions; the admin revokes the reader's
    assert keys["reader"].get(f"/api/v1/tenants/{tenant}/sessions").status_code == 403
    admin.ok("DELETE", f"/api/v1/tenants/{tenant}/sessions/{mine['id']}")
    assert _me(url, reader_cookie).status_code == 401
    assert keys["reader"].get("/api/v1/datasets").status_code == 200  # the key itself still works
    assert admin.delete(f"/api/v1/tenants/{tenant}/sessions/{mine['id']}").status_code == 404
    assert _me(url, admin_cookie).status_code == 200
    for k in keys.values():
        k.close()


def test_a_tenant_admin_cannot_see_or_end_another_tenants_sessions(
    ui_server: LiveServer, service_api: Api
) -> None:
    url = ui_server.url
    ours, our_keys = new_tenant(service_api, "ours-co", "admin")
    theirs, their_keys = new_tenant(service_api, "theirs-co", "admin")
    their_cookie = _cookie_of(url, their_keys["admin"].key)
    service_cookie = _cookie_of(url, SERVICE_KEY)
    their_session = their_keys["admin"].ok("GET", f"/api/v1/tenants/{theirs}/sessions")["sessions"][0]["id"]
    service_session = _me(url, service_cookie).json()["session"]["id"]
    ours_admin = our_keys["admin"]
    assert ours_admin.get(f"/api/v1/tenants/{theirs}/sessions").status_code == 404
    assert ours_admin.delete(f"/api/v1/tenants/{theirs}/sessions/{their_session}").status_code == 404
    assert ours_admin.delete(f"/api/v1/tenants/{ours}/sessions/{their_session}").status_code == 404
    assert ours_admin.get("/api/v1/sessions").status_code == 403  # the service key's own
    assert ours_admin.delete(f"/api/v1/sessions/{service_session}").status_code == 403
    assert ours_admin.ok("GET", f"/api/v1/tenants/{ours}/sessions")["sessions"] == []
    assert _me(url, their_cookie).status_code == 200
    assert _me(url, service_cookie).status_code == 200
    # the service key sees and ends any tenant's sessions, and its own
    assert service_session in {s["id"] for s in service_api.ok("GET", "/api/v1/sessions")["sessions"]}
    assert all(s["tenant_id"] is None for s in service_api.ok("GET", "/api/v1/sessions")["sessions"])
    service_api.ok("DELETE", f"/api/v1/tenants/{theirs}/sessions/{their_session}")
    assert _me(url, their_cookie).status_code == 401
    service_api.ok("DELETE", f"/api/v1/sessions/{service_session}")
    assert _me(url, service_cookie).status_code == 401
    for k in (*our_keys.values(), *their_keys.values()):
        k.close()


def test_revoking_a_key_ends_its_sessions(ui_server: LiveServer, service_api: Api) -> None:
    tenant, keys = new_tenant(service_api, "revoked-key-co", "editor", "reader")
    editor_cookie = _cookie_of(ui_server.url, keys["editor"].key)
    reader_cookie = _cookie_of(ui_server.url, keys["reader"].key)
    editor_id = _me(ui_server.url, editor_cookie).json()["key_id"]
    service_api.ok("DELETE", f"/api/v1/tenants/{tenant}/keys/{editor_id}")
    assert _me(ui_server.url, editor_cookie).status_code == 401
    created = httpx.post(
        f"{ui_server.url}/api/v1/datasets", json={"name": "after"}, headers=UI, cookies=editor_cookie
    )
    assert created.status_code == 401
    assert _me(ui_server.url, reader_cookie).status_code == 200
    left = service_api.ok("GET", f"/api/v1/tenants/{tenant}/sessions")["sessions"]
    assert [s["role"] for s in left] == ["reader"]
    for k in keys.values():
        k.close()


def test_the_service_key_ends_all_of_its_own_sessions(ui_server: LiveServer, service_api: Api) -> None:
    first, second = _cookie_of(ui_server.url, SERVICE_KEY), _cookie_of(ui_server.url, SERVICE_KEY)
    _, keys = new_tenant(service_api, "untouched-co", "admin")
    tenant_cookie = _cookie_of(ui_server.url, keys["admin"].key)
    assert service_api.ok("DELETE", "/api/v1/sessions")["revoked"] >= 2
    assert _me(ui_server.url, first).status_code == 401
    assert _me(ui_server.url, second).status_code == 401
    assert _me(ui_server.url, tenant_cookie).status_code == 200
    keys["admin"].close()


@pytest.mark.slow
def test_a_session_expires_after_its_ttl(tmp_path: Path, model_cache: Path) -> None:
    ttl = 3
    settings = kb_settings(tmp_path / "data", model_cache, None)
    settings = settings.model_copy(
        update={"server": settings.server.model_copy(update={"ui_session_ttl_s": ttl})}
    )
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        signed = httpx.post(f"{live.url}/ui/session", json={"key": SERVICE_KEY}, headers=UI)
        assert f"Max-Age={ttl}" in signed.headers["set-cookie"]
        cookie = {"ragd_session": signed.cookies["ragd_session"]}
        ends = signed.json()["session"]["expires_at"]
        if _me(live.url, cookie).status_code == 200:  # asked before it ended (a slow machine may not)
            assert time.time() < ends
        time.sleep(max(0.0, ends - time.time()) + 0.5)
        assert _me(live.url, cookie).status_code == 401
        assert httpx.get(f"{live.url}/api/v1/datasets", headers=UI, cookies=cookie).status_code == 401


@pytest.mark.slow
def test_rotating_the_service_key_signs_every_browser_out(tmp_path: Path, model_cache: Path) -> None:
    first = kb_settings(tmp_path / "data", model_cache, None)
    with LiveServer(create_app(first)) as live:
        live.wait_ready()
        service = Api(live.url, SERVICE_KEY)
        _, keys = new_tenant(service, "rotated-co", "admin")
        tenant_key = keys["admin"].key
        cookies = [_cookie_of(live.url, SERVICE_KEY), _cookie_of(live.url, tenant_key)]
        assert [_me(live.url, c).status_code for c in cookies] == [200, 200]
        service.close()
        keys["admin"].close()
    new_key = SecretStr("rotated-" + "r" * 40)
    rotated = first.model_copy(update={"server": first.server.model_copy(update={"api_key": new_key})})
    with LiveServer(create_app(rotated)) as live:
        live.wait_ready()
        assert [_me(live.url, c).status_code for c in cookies] == [401, 401]
        by_key = httpx.get(f"{live.url}/api/v1/datasets", headers={"Authorization": f"Bearer {tenant_key}"})
        assert by_key.status_code == 200  # the tenant key itself still works
        assert _me(live.url, _cookie_of(live.url, tenant_key)).status_code == 200  # and signs in again
