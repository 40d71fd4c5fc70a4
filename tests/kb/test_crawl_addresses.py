"""Web sources reach only public addresses, checked at every connection of every sync (issue 30 §1.6).

A live ``ragd serve`` (real uvicorn, its job worker, embedded Qdrant, a SQLite catalog) with
``crawl.allow_private`` off, as in production.  Host names are answered by a scripted resolver
(tests/support/fake_dns.py patches ``socket.getaddrinfo``, beneath ragd's resolver and httpx's
alike); the site is a real server on loopback that records every request.  A name that answers a
public address when the source is added and ``127.0.0.1`` afterwards (DNS rebinding) must never
bring a request to that server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.api.app import create_app
from ragd.settings import CrawlSettings, EmbeddingSettings, ServerSettings, Settings, WorkerSettings
from tests.kb.conftest import Api, new_tenant
from tests.sources.site import LoopbackSite, Page
from tests.support.fake_dns import PUBLIC, FakeDns
from tests.support.live_server import LiveServer

SERVICE_KEY = "crawl-addresses-service-key-0123456789abcdef"
NAME = "docs.rebind.test"
PAGES = {
    "/docs/": Page.html(
        "Docs", "<p>The osprey valve guide covers every valve in the plant.</p>", links=["/docs/a"]
    ),
    "/docs/a": Page.html("Valve A", "<p>The osprey valve A opens at four bar of pressure.</p>"),
}


@pytest.fixture(scope="module", params=["auto", "asyncio"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[LiveServer]:
    """uvloop when installed (production), and asyncio, whose resolver is socket.getaddrinfo for
    httpx too: there, a crawl that connected without the check would reach the loopback site."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("crawl-addresses") / "data",
        embedding=EmbeddingSettings(cache_dir=model_cache),
        server=ServerSettings(api_key=SERVICE_KEY),  # type: ignore[arg-type]
        worker=WorkerSettings(poll_s=0.1, lease_s=5, backoff_s=0.2),
        crawl=CrawlSettings(delay_s=0.0, allow_private=False),
    )
    live_server = LiveServer(create_app(settings))
    live_server._server.config.loop = request.param  # uvicorn picks the loop as it starts
    with live_server as live:
        live.wait_ready()
        yield live


@pytest.fixture(scope="module")
def keys(server: LiveServer) -> Iterator[dict[str, Api]]:
    service = Api(server.url, SERVICE_KEY)
    _, tenant = new_tenant(service, "harbour", "admin")
    yield {"service": service, "admin": tenant["admin"]}
    for api in (service, tenant["admin"]):
        api.close()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDns:
    return FakeDns(monkeypatch)


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(PAGES) as running:
        yield running


def port_of(site: LoopbackSite) -> int:
    return int(site.origin.rsplit(":", 1)[1])


def add_web(api: Api, dataset_id: str, config: dict[str, Any]) -> dict[str, Any]:
    return api.ok(
        "POST", f"/api/v1/datasets/{dataset_id}/sources", 202, json={"kind": "web", "config": config}
    )  # type: ignore[no-any-return]


def test_a_name_that_rebinds_after_the_source_was_added_never_reaches_loopback(
    keys: dict[str, Api], dns: FakeDns, site: LoopbackSite
) -> None:
    admin = keys["admin"]
    dns.answer(NAME, [PUBLIC], ["127.0.0.1"])  # public when added, loopback from then on
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "rebinding"})["id"]
    made = add_web(admin, ds, {"url": f"http://{NAME}:{port_of(site)}/docs/", "delay_s": 0})
    assert "allow_private" not in made["source"]["config"]
    first = admin.wait_job(made["job"]["id"])
    assert (first["status"], first["error"]["code"]) == ("failed", "PRIVATE_ADDRESS"), first
    assert first["attempts"] == 1  # refused for good, not retried

    source_id = made["source"]["id"]
    again = admin.ok("POST", f"/api/v1/datasets/{ds}/sources/{source_id}/sync", 202)["job"]
    second = admin.wait_job(again["id"])
    assert (second["status"], second["error"]["code"]) == ("failed", "PRIVATE_ADDRESS"), second
    [source] = admin.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"]
    assert source["last_error"].startswith("PRIVATE_ADDRESS")
    assert site.requests == []  # not robots.txt, not a page: no connection to loopback at all
    assert dns.asked.count(NAME) >= 3  # added, then resolved again by each sync


def test_a_tenant_cannot_add_a_private_address(
    keys: dict[str, Api], dns: FakeDns, site: LoopbackSite
) -> None:
    admin = keys["admin"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "private"})["id"]
    dns.answer(NAME, [PUBLIC, "10.0.0.9"])
    for url in (site.url("/docs/"), f"http://[::ffff:127.0.0.1]:{port_of(site)}/", f"http://{NAME}/"):
        r = admin.post(f"/api/v1/datasets/{ds}/sources", json={"kind": "web", "config": {"url": url}})
        assert (r.status_code, r.json()["detail"]["code"]) == (403, "PRIVATE_ADDRESS"), (url, r.text)
    # a tenant cannot mark its own source as allowed to reach private addresses
    config = {"url": site.url("/docs/"), "allow_private": True}
    r = admin.post(f"/api/v1/datasets/{ds}/sources", json={"kind": "web", "config": config})
    assert (r.status_code, r.json()["detail"]["code"]) == (400, "INVALID_REQUEST"), r.text
    assert admin.ok("GET", f"/api/v1/datasets/{ds}/sources")["sources"] == []
    assert site.requests == []


def test_the_service_keys_source_on_loopback_is_marked_and_syncs(
    keys: dict[str, Api], site: LoopbackSite
) -> None:
    admin, service = keys["admin"], keys["service"]
    ds = admin.ok("POST", "/api/v1/datasets", 201, json={"name": "intranet"})["id"]
    made = add_web(service, ds, {"url": site.url("/docs/"), "delay_s": 0})
    assert made["source"]["config"]["allow_private"] is True
    job = admin.wait_job(made["job"]["id"])
    assert (job["status"], job["done"]) == ("succeeded", 2), job
    assert site.page_paths() == ["/docs/", "/docs/a"]
