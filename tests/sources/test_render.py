"""Web sources with ``render``: pages loaded in Debian's Chromium through Playwright, on loopback sites.

Each browser test launches Chromium (about a second or two), so they are marked slow; without
Chromium or Playwright they skip.  The address check is tested with the site reached under a
public name (tests/support/fake_dns.py) and ``allow_private`` off, as a tenant's crawl runs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragd.bootstrap.knowledge import reader_factory
from ragd.errors import InvalidRequest, RenderUnavailable
from ragd.kb.sources import parse_config
from ragd.kb_types import SourceKind, SourceSpec
from ragd.settings import CrawlSettings, Settings
from ragd.sources.base import ItemFailure, SourceItem
from ragd.sources.crawl_spec import CrawlSpec
from ragd.sources.render import find_chromium
from ragd.sources.web import WebSource
from tests.sources.site import LoopbackSite, Page
from tests.support.fake_dns import PUBLIC, FakeDns, Routing

Entry = SourceItem | ItemFailure
WRITTEN = (
    "The deployment guide explains how the quarterly zebra migration is planned, which teams "
    "take part, and what to do when the herd reaches the river before the bridge is finished."
)


def chromium() -> str:
    try:
        path = find_chromium(None)
    except RenderUnavailable:
        pytest.skip("no Chromium: apt-get install chromium")
    pytest.importorskip("playwright.async_api", reason="rendering needs ragd[render]")
    return path


def js_page(script: str, title: str = "Loading") -> Page:
    """A page whose only text is what ``script`` writes into <main>."""
    body = (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><main id='main'></main>"
        f"<script>{script}</script></body></html>"
    )
    return Page(body.encode())


#: writes WRITTEN (fetched from /data.json) into the page, and a link to /b; asks for a URL
#: robots.txt disallows
WRITER = """
fetch('/hidden/tracker.json').catch(() => null);
fetch('/data.json').then(r => r.json()).then(d => {
  const main = document.getElementById('main');
  main.innerHTML = '<article><h1>Zebras</h1><p>' + d.text + '</p><p>' + d.text + '</p>'
    + '<a href="/b">the second page</a></article>';
});
"""


def site_pages() -> dict[str, Page]:
    return {
        "/robots.txt": Page.text("User-agent: *\nDisallow: /hidden/\n"),
        "/": js_page(WRITER),
        "/data.json": Page(json.dumps({"text": WRITTEN}).encode(), content_type="application/json"),
        "/b": Page.html("Second", f"<p>{WRITTEN} Page b repeats it in plain HTML for the crawler.</p>"),
    }


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(site_pages()) as running:
        yield running


async def crawl(spec: CrawlSpec, **options: Any) -> tuple[list[Entry], WebSource]:
    source = WebSource(spec, **options)
    try:
        return [entry async for entry in source.scan()], source
    finally:
        await source.aclose()


def texts(entries: list[Entry]) -> dict[str, str]:
    return {e.key: e.document.text for e in entries if isinstance(e, SourceItem) and e.document}


@pytest.mark.slow
async def test_text_written_by_javascript_is_read_only_when_rendered(site: LoopbackSite) -> None:
    path = chromium()
    plain, _ = await crawl(CrawlSpec(site.url("/"), delay_s=0, allow_private=True))
    assert [(e.key, e.code) for e in plain if isinstance(e, ItemFailure)] == [
        (site.url("/"), "EMPTY_DOCUMENT")
    ]
    assert texts(plain) == {}  # and /b is never found: its link exists only in the rendered DOM

    spec = CrawlSpec(site.url("/"), delay_s=0, allow_private=True, render=True, render_timeout_s=20)
    rendered, source = await crawl(spec, chromium_path=path)
    found = texts(rendered)
    assert set(found) == {site.url("/"), site.url("/b")}
    assert "quarterly zebra migration" in found[site.url("/")]
    assert source.renderer is not None
    assert list(source.renderer.blocked) == [(site.url("/hidden/tracker.json"), "robots.txt disallows it")]
    # the page's own request went through ragd's client, each page was fetched once, robots.txt kept
    assert site.page_paths().count("/") == 2
    assert "/data.json" in site.page_paths()
    assert not any(p.startswith("/hidden/") for p in site.paths())


@pytest.mark.slow
async def test_a_script_that_calls_a_private_address_is_refused(
    site: LoopbackSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = chromium()
    with LoopbackSite({"/secret": Page.text("internal secret")}) as inside:
        internal_port = inside.url("/").rsplit(":", 1)[1].rstrip("/")
        calls = (
            f"fetch('http://127.0.0.1:{internal_port}/secret').catch(() => null);"
            f"fetch('http://intranet.example.test:{internal_port}/secret').catch(() => null);"
        )
        site.pages["/"] = js_page(calls + WRITER)
        dns = FakeDns(monkeypatch)
        dns.answer("docs.example.test", [PUBLIC])
        dns.answer("intranet.example.test", ["10.1.2.3", PUBLIC])
        port = site.url("/").rsplit(":", 1)[1].rstrip("/")
        spec = CrawlSpec(
            f"http://docs.example.test:{port}/", delay_s=0, max_depth=0, render=True, render_timeout_s=20
        )
        entries, source = await crawl(spec, chromium_path=path, network=Routing())
        assert inside.requests == []
        assert source.renderer is not None
        refused = {url: reason for url, reason in source.renderer.blocked if "robots.txt" not in reason}
        assert set(refused) == {
            f"http://127.0.0.1:{internal_port}/secret",
            f"http://intranet.example.test:{internal_port}/secret",
        }
        assert all("resolves to" in reason for reason in refused.values())
        # the page itself still renders, through the guarded client under its public name
        assert "quarterly zebra migration" in texts(entries)[f"http://docs.example.test:{port}/"]

        # the same page on a crawl that may reach private addresses does call the internal site
        inside_spec = CrawlSpec(site.url("/"), delay_s=0, max_depth=0, render=True, allow_private=True)
        await crawl(inside_spec, chromium_path=path)
        assert [r.path for r in inside.requests] == ["/secret"]


@pytest.mark.slow
async def test_a_page_that_never_settles_is_render_timeout_and_the_crawl_goes_on(site: LoopbackSite) -> None:
    path = chromium()
    site.pages["/"] = Page.html("Home", "<p>" + WRITTEN + "</p>", links=["/busy", "/spin", "/b"])
    site.pages["/busy"] = js_page("setInterval(() => fetch('/ping?' + Date.now()), 100);")
    site.pages["/spin"] = js_page("setTimeout(() => { for (;;) {} }, 0);")  # never yields again
    spec = CrawlSpec(site.url("/"), delay_s=0, allow_private=True, render=True, render_timeout_s=2)
    entries, _ = await crawl(spec, chromium_path=path)
    failures = {e.key: e.code for e in entries if isinstance(e, ItemFailure)}
    assert failures == {site.url("/busy"): "RENDER_TIMEOUT", site.url("/spin"): "RENDER_TIMEOUT"}
    assert set(texts(entries)) == {site.url("/"), site.url("/b")}
    busy = next(e for e in entries if isinstance(e, ItemFailure))
    assert busy.hides is not None  # it may settle next time: the sync deletes nothing


async def test_no_chromium_is_render_unavailable_with_the_install_hint(site: LoopbackSite) -> None:
    spec = CrawlSpec(site.url("/"), delay_s=0, allow_private=True, render=True)
    with pytest.raises(RenderUnavailable) as caught:
        await crawl(spec, chromium_path="/nonexistent/chromium")
    assert caught.value.code == "RENDER_UNAVAILABLE"
    assert "ragd[render]" in str(caught.value.hint)
    assert "chromium" in str(caught.value.hint)


async def test_no_playwright_is_render_unavailable_with_the_install_hint(
    site: LoopbackSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)  # import fails as if not installed
    spec = CrawlSpec(site.url("/"), delay_s=0, allow_private=True, render=True)
    with pytest.raises(RenderUnavailable, match="Playwright") as caught:
        await crawl(spec, chromium_path=shutil.which("true") or "/bin/true")
    assert "ragd[render]" in str(caught.value.hint)
    assert site.page_paths() == ["/"]  # the page was fetched, no browser was started


def test_a_web_source_config_with_render_builds_a_rendering_reader(tmp_path: Path) -> None:
    config = parse_config(SourceKind.WEB, {"url": "https://docs.example.org/", "render": True})
    assert config == {"url": "https://docs.example.org/", "render": True}
    with pytest.raises(InvalidRequest, match="render"):
        parse_config(SourceKind.WEB, {"url": "https://docs.example.org/", "render": "sometimes"})
    settings = Settings(
        data_dir=tmp_path, crawl=CrawlSettings(chromium_path="/opt/chromium", render_timeout_s=7)
    )
    spec = SourceSpec(id="s", dataset_id="d", kind=SourceKind.WEB, config=config)

    async def built() -> WebSource:
        async with reader_factory(settings, None, None)(spec) as reader:
            assert isinstance(reader, WebSource)
            return reader

    reader = asyncio.run(built())
    assert (reader.spec.render, reader.spec.render_timeout_s) == (True, 7)
    assert reader.renderer is not None
    assert reader.renderer.chromium_path == "/opt/chromium"
    plain = SourceSpec(id="s", dataset_id="d", kind=SourceKind.WEB, config={"url": "https://x.org/"})

    async def built_plain() -> WebSource:
        async with reader_factory(settings, None, None)(plain) as reader:
            assert isinstance(reader, WebSource)
            return reader

    assert asyncio.run(built_plain()).renderer is None


@pytest.mark.slow
async def test_websockets_and_popups_reach_nothing_even_where_private_addresses_may(
    site: LoopbackSite,
) -> None:
    """On a crawl allowed to reach loopback, a script's WebSocket and popup still open no connection:
    the WebSocket is closed unconnected and a popup is closed (its requests are not routed, and the
    browser's dead proxy takes what is not routed)."""
    path = chromium()
    with LoopbackSite({"/ws": Page.text("upgrade me"), "/popup": Page.text("popped")}) as other:
        port = other.url("/").rsplit(":", 1)[1].rstrip("/")
        calls = (
            f"try {{ new WebSocket('ws://127.0.0.1:{port}/ws'); }} catch (e) {{}}"
            f"window.open('http://127.0.0.1:{port}/popup');"
        )
        site.pages["/"] = js_page(calls + WRITER)
        spec = CrawlSpec(site.url("/"), delay_s=0, max_depth=0, allow_private=True, render=True)
        entries, _ = await crawl(spec, chromium_path=path)
        assert "quarterly zebra migration" in texts(entries)[site.url("/")]
        assert other.requests == []
