"""The Sources tab adds a web source with "Render JavaScript": a loopback site whose text a script
writes is crawled in headless Chromium and found by search (issue 32 §4)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ragd.errors import RenderUnavailable
from ragd.sources.render import find_chromium
from tests.kb.conftest import SERVICE_KEY, Api
from tests.sources.site import LoopbackSite, Page
from tests.support.live_server import LiveServer
from tests.ui.conftest import sign_in

SCRIPT = """
fetch('/kb/facts.json').then(r => r.json()).then(d => {
  document.getElementById('main').innerHTML = '<article><h1>Ferries</h1><p>' + d.text + '</p></article>';
});
"""
FACT = (
    "The night ferry to Skerry Island leaves from pier seven at twenty past eleven, and in winter "
    "storms the harbour master may hold it until the swell drops below two metres."
)


def test_a_web_source_with_render_javascript_is_crawled_in_chromium(
    page: Any, ui_server: LiveServer, service_api: Api
) -> None:
    try:
        find_chromium(None)
    except RenderUnavailable:
        pytest.skip("no Chromium: apt-get install chromium")
    tenant = service_api.ok("POST", "/api/v1/tenants", 201, json={"name": "ferries-ui"})
    ds = service_api.ok("POST", "/api/v1/datasets", 201, json={"name": "ferries", "tenant_id": tenant["id"]})
    site = {
        "/kb/": Page(
            (
                "<!DOCTYPE html><html><head><title>Ferries</title></head><body><main id='main'></main>"
                f"<script>{SCRIPT}</script></body></html>"
            ).encode()
        ),
        "/kb/facts.json": Page(f'{{"text": "{FACT}"}}'.encode(), content_type="application/json"),
    }
    with LoopbackSite(site) as web:
        sign_in(page, ui_server.url, SERVICE_KEY)
        page.goto(f"{ui_server.url}/ui/#/datasets/{ds['id']}?tab=sources")
        page.get_by_label("Kind").select_option("web")
        page.get_by_label("Start URL").fill(web.url("/kb/"))
        page.get_by_label("Delay (s)").fill("0")
        page.get_by_label("Render JavaScript").check()
        page.get_by_role("button", name="Add source").click()
        rows = page.locator(".sources-panel table.data tbody tr")
        rows.filter(has_text=web.url("/kb/")).wait_for()
        assert "rendered (JavaScript)" in rows.first.inner_text()
        page.locator(".source-job").filter(has_text=re.compile(r"succeeded · 1 of 1 items")).wait_for(
            timeout=60_000
        )
    [source] = service_api.ok("GET", f"/api/v1/datasets/{ds['id']}/sources")["sources"]
    assert source["config"]["render"] is True
    hits = service_api.search("When does the night ferry to Skerry Island leave?", ds["id"])
    assert "twenty past eleven" in hits[0]["content"]
