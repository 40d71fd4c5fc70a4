"""A web source with ``render: true`` on a live ragd (issue 32 §4): a site whose text is written by
JavaScript is searchable with rendering on and empty without.

A real ``ragd serve`` (uvicorn, its job worker, embedded Qdrant, a SQLite catalog, the real model)
crawls a loopback site through the sources API; Debian's Chromium renders (skips without it or
without Playwright).  The service key adds the sources: the site is on loopback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.api.app import create_app
from ragd.errors import RenderUnavailable
from ragd.settings import CrawlSettings, EmbeddingSettings, ServerSettings, Settings, WorkerSettings
from ragd.sources.render import find_chromium
from tests.kb.conftest import Api, new_tenant
from tests.sources.site import LoopbackSite, Page
from tests.support.live_server import LiveServer

SERVICE_KEY = "rendered-sources-service-key-0123456789abcdef"
FACT = (
    "The lighthouse keeper logs the fog horn tests every Thursday, and the Gannet Rock horn was "
    "heard at nine nautical miles during the last calibration run before the winter storms."
)
SCRIPT = """
fetch('/docs/facts.json').then(r => r.json()).then(d => {
  document.getElementById('main').innerHTML = '<article><h1>Fog horns</h1><p>' + d.text
    + '</p><a href="/docs/more">more</a></article>';
});
"""
PAGES = {
    "/docs/": Page(
        (
            "<!DOCTYPE html><html><head><title>Fog horns</title></head><body><main id='main'></main>"
            f"<script>{SCRIPT}</script></body></html>"
        ).encode()
    ),
    "/docs/facts.json": Page(json.dumps({"text": FACT}).encode(), content_type="application/json"),
    "/docs/more": Page.html("More", "<p>The Gannet Rock horn sounds twice every thirty seconds in fog.</p>"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[LiveServer]:
    try:
        find_chromium(None)
    except RenderUnavailable:
        pytest.skip("no Chromium: apt-get install chromium")
    pytest.importorskip("playwright.async_api", reason="rendering needs ragd[render]")
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("rendered") / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        server=ServerSettings(api_key=SERVICE_KEY),  # type: ignore[arg-type]
        worker=WorkerSettings(poll_s=0.1, lease_s=5, backoff_s=0.2),
        crawl=CrawlSettings(delay_s=0.0, allow_private=False, render_timeout_s=20),
    )
    with LiveServer(create_app(settings)) as live:
        live.wait_ready()
        yield live


def crawl_into(admin: Api, service: Api, name: str, config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A dataset of the tenant, a web source the service key adds to it, and its first sync."""
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": name})["id"]
    made = service.ok("POST", f"/api/v1/datasets/{ds}/sources", 202, json={"kind": "web", "config": config})
    return ds, service.wait_job(made["job"]["id"])


@pytest.mark.slow
def test_a_site_written_by_javascript_is_searchable_only_with_render(server: LiveServer) -> None:
    service = Api(server.url, SERVICE_KEY)
    _, keys = new_tenant(service, "lighthouses", "admin")
    admin = keys["admin"]
    try:
        with LoopbackSite(PAGES) as site:
            plain_ds, plain = crawl_into(admin, service, "plain", {"url": site.url("/docs/"), "delay_s": 0})
            assert plain["done"] == 0, plain  # the empty shell; /docs/more is linked only by the script
            hits = admin.search("Gannet Rock fog horn", plain_ds)
            assert all("nautical miles" not in hit["content"] for hit in hits)

            config = {"url": site.url("/docs/"), "delay_s": 0, "render": True}
            rendered_ds, rendered = crawl_into(admin, service, "rendered", config)
            assert (rendered["status"], rendered["done"]) == ("succeeded", 2), rendered
            hits = admin.search("How far was the Gannet Rock horn heard?", rendered_ds)
            assert "nine nautical miles" in hits[0]["content"]
            assert hits[0]["source"] == site.url("/docs/")
            [source] = admin.ok("GET", f"/api/v1/datasets/{rendered_ds}/sources")["sources"]
            assert source["config"]["render"] is True
    finally:
        service.close()
        admin.close()
