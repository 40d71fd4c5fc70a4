"""The shell: sign-in with a key kept out of scripts' reach, security headers, sign-out, a dead key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from ragd.api.app import create_app
from ragd.settings import ServerSettings
from tests.kb.conftest import SERVICE_KEY, Api, kb_settings, new_tenant
from tests.support.live_server import LiveServer
from tests.ui.conftest import shot, sign_in

STATIC = Path(__file__).parents[2] / "src" / "ragd" / "ui" / "static"


def test_root_redirects_and_the_ui_sends_its_security_headers(ui_server: LiveServer) -> None:
    root = httpx.get(f"{ui_server.url}/", follow_redirects=False)
    assert root.status_code == 307
    assert root.headers["location"] == "/ui/"
    for path in ("/ui/", "/ui/static/js/app.js", "/ui/static/css/app.css"):
        r = httpx.get(f"{ui_server.url}{path}")
        assert r.status_code == 200, path
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp
        assert "require-trusted-types-for 'script'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
    assert httpx.get(f"{ui_server.url}/ui/static/../../settings.py").status_code == 404


def test_head_is_answered_wherever_get_is(ui_server: LiveServer) -> None:
    """`curl -I`, link checkers and uptime probes send HEAD: the same status and headers, no body."""
    for path in ("/", "/ui", "/ui/", "/ui/static/js/app.js"):
        get = httpx.get(f"{ui_server.url}{path}", follow_redirects=False)
        head = httpx.head(f"{ui_server.url}{path}", follow_redirects=False)
        assert head.status_code == get.status_code, (path, head.status_code)
        assert head.headers.get("location") == get.headers.get("location"), path
        assert head.headers["content-security-policy"] == get.headers["content-security-policy"], path
        assert head.content == b"", path
    assert httpx.head(f"{ui_server.url}/ui/").headers["content-type"].startswith("text/html")


def test_the_static_files_hold_no_inline_script_and_no_html_sinks() -> None:
    """No inline script or handler in the page; no HTML-string sink or eval in the code."""
    html = (STATIC / "index.html").read_text()
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html) is None
    assert re.search(r"\son[a-z]+\s*=", html) is None
    sinks = re.compile(r"\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(")
    for js in STATIC.rglob("*.js"):
        assert sinks.search(js.read_text()) is None, js
    assert not [p for p in STATIC.rglob("*") if p.suffix in (".map", ".ts", ".jsx")]
    external = re.compile(r"(src|href)=\"(https?:)?//")
    for text in [html, *(p.read_text() for p in STATIC.rglob("*.css"))]:
        assert external.search(text) is None  # no CDN: everything ships in the package


def test_sign_in_keeps_the_key_out_of_reach_and_sign_out_clears_it(
    page: Any, ui_server: LiveServer, tmp_path: Path
) -> None:
    page.goto(f"{ui_server.url}/")
    page.get_by_label("API key").wait_for()
    assert page.url.endswith("/ui/#/signin")
    shot(page, "signin", tmp_path)
    page.get_by_label("API key").fill("not-the-key")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("alert").filter(has_text="not valid").wait_for()
    sign_in(page, ui_server.url, SERVICE_KEY)
    assert page.get_by_text("service key").is_visible()
    assert SERVICE_KEY not in page.url
    cookies = page.context.cookies()
    assert [(c["name"], c["httpOnly"], c["sameSite"]) for c in cookies] == [("ragd_session", True, "Strict")]
    assert SERVICE_KEY not in str(cookies)  # encoded, and unreadable to scripts anyway
    assert page.evaluate("document.cookie") == ""
    stored = page.evaluate("JSON.stringify({...localStorage}) + JSON.stringify({...sessionStorage})")
    assert SERVICE_KEY not in stored
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API key").wait_for()
    assert page.context.cookies() == []


def test_the_cookie_alone_does_not_authorise_an_api_call(page: Any, ui_server: LiveServer) -> None:
    """A cross-site form or image cannot send X-Ragd-UI: the cookie is only honoured with it."""
    sign_in(page, ui_server.url, SERVICE_KEY)
    status = page.evaluate("fetch('/api/v1/datasets').then(r => r.status)")
    assert status == 401
    status = page.evaluate("fetch('/api/v1/datasets', {headers: {'X-Ragd-UI': '1'}}).then(r => r.status)")
    assert status == 200


def test_a_revoked_key_is_sent_back_to_sign_in(page: Any, ui_server: LiveServer, service_api: Api) -> None:
    tenant_id, keys = new_tenant(service_api, "revoked-co", "editor")
    editor = keys["editor"]
    sign_in(page, ui_server.url, editor.key)
    assert page.get_by_text("revoked-co · editor").is_visible()
    listed = service_api.ok("GET", f"/api/v1/tenants/{tenant_id}/keys")
    key_id = next(k["id"] for k in listed["keys"])
    revoked = service_api.delete(f"/api/v1/tenants/{tenant_id}/keys/{key_id}")
    assert revoked.status_code in (200, 204), revoked.text
    page.reload()
    page.get_by_label("API key").wait_for()
    assert "#/signin" in page.url
    editor.close()


def test_an_open_service_says_so_and_the_bare_hash_is_home(
    page: Any, tmp_path: Path, model_cache: Path
) -> None:
    """The keyless demo: no sign-in, and no claim of a key; /ui/#/ is the home screen, not "Not found"."""
    settings = kb_settings(tmp_path / "data", model_cache, None).model_copy(
        update={"server": ServerSettings()}
    )
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        page.goto(f"{live.url}/ui/#/")
        page.get_by_role("heading", name="Datasets").wait_for()
        assert page.get_by_role("heading", name="Not found").count() == 0
        assert page.url.endswith("/ui/#/datasets")
        assert page.locator("#who").inner_text() == "open service, no key"
        page.goto(f"{live.url}/ui/#/system")
        page.get_by_text("open service, no key (every tenant)").wait_for()
        assert "the service key (every tenant)" not in page.locator("main").inner_text()
