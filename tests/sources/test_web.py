"""The website source against a real HTTP server on loopback (tests/sources/site.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import re
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragd.errors import Forbidden, InvalidRequest, NotFound, UnsupportedType
from ragd.sources.base import ItemFailure, SourceItem, SourceReader
from ragd.sources.urls import canonical_url
from ragd.sources.web import CrawlSpec, PageFetchFailed, WebSource
from tests.sources.site import FOOTER_TEXT, NAV_TEXT, LoopbackSite, Page

Entry = SourceItem | ItemFailure


def article(topic: str) -> str:
    """Main content long enough for trafilatura to recognise it as the article."""
    return (
        f"<p>This article explains {topic} in some detail, because {topic} matters to every reader "
        f"who maintains a documentation site and wants its pages found again.</p>"
        f"<h2>Details about {topic}</h2>"
        f"<p>The second paragraph adds more about {topic}: how it is configured, how it fails, "
        f"and what to do when it does.</p>"
    )


def page(name: str, *links: str) -> Page:
    return Page.html(f"Page {name}", article(f"topic-{name}"), links=links)


class VirtualClock:
    """A clock that only moves when the crawler sleeps, so delays cost no wall time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite() as running:
        yield running


def spec_for(site: LoopbackSite, path: str = "/", **options: Any) -> CrawlSpec:
    options.setdefault("delay_s", 0.0)
    options.setdefault("allow_private", True)  # the site is on loopback (tests/sources/test_address_guard.py)
    return CrawlSpec(site.url(path), **options)


async def crawl(spec: CrawlSpec, **options: Any) -> list[Entry]:
    source = WebSource(spec, **options)
    try:
        return [entry async for entry in source.scan()]
    finally:
        await source.aclose()


def keys(entries: list[Entry]) -> list[str]:
    return [e.key for e in entries if isinstance(e, SourceItem)]


def failures(entries: list[Entry]) -> dict[str, ItemFailure]:
    return {e.key: e for e in entries if isinstance(e, ItemFailure)}


def paths(site: LoopbackSite, entries: list[Entry]) -> list[str]:
    return [key.removeprefix(site.origin) for key in keys(entries)]


# -- traversal -----------------------------------------------------------------------------------


def tree_site(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/": page("root", "/a", "/b"),
            "/a": page("a", "/a1", "/"),
            "/b": page("b", "/b1"),
            "/a1": page("a1", "/a2"),
            "/b1": page("b1"),
            "/a2": page("a2"),
        }
    )


async def test_breadth_first_order_and_max_depth(site: LoopbackSite) -> None:
    tree_site(site)
    entries = await crawl(spec_for(site, max_depth=2))
    assert paths(site, entries) == ["/", "/a", "/b", "/a1", "/b1"]
    assert "/a2" not in site.paths()
    assert all(isinstance(e, SourceItem) for e in entries)


async def test_depth_zero_is_the_start_page_only(site: LoopbackSite) -> None:
    tree_site(site)
    entries = await crawl(spec_for(site, max_depth=0))
    assert paths(site, entries) == ["/"]
    assert site.page_paths() == ["/"]


async def test_max_pages_counts_items_and_failures(site: LoopbackSite) -> None:
    tree_site(site)
    site.pages["/a"] = Page(b"boom", 500, "text/plain")
    entries = await crawl(spec_for(site, max_depth=5, max_pages=3))
    assert len(entries) == 3
    assert paths(site, entries) == ["/", "/b"]
    assert list(failures(entries)) == [site.url("/a")]
    assert site.page_paths() == ["/", "/a", "/b"]  # nothing fetched past the limit


async def test_path_prefix_defaults_to_the_start_directory(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/docs/index.html": page(
                "index", "guide.html", "/blog/post.html", "/", "../about.html", "sub/deep.html"
            ),
            "/docs/guide.html": page("guide", "sub/deep.html"),
            "/docs/sub/deep.html": page("deep"),
            "/blog/post.html": page("post"),
            "/": page("root"),
            "/about.html": page("about"),
        }
    )
    entries = await crawl(spec_for(site, "/docs/index.html"))
    assert paths(site, entries) == ["/docs/index.html", "/docs/guide.html", "/docs/sub/deep.html"]
    assert site.page_paths() == ["/docs/index.html", "/docs/guide.html", "/docs/sub/deep.html"]

    site.requests.clear()
    narrowed = await crawl(spec_for(site, "/docs/index.html", path_prefix="/docs/sub/"))
    assert paths(site, narrowed) == ["/docs/index.html", "/docs/sub/deep.html"]


async def test_off_site_links_are_never_followed(site: LoopbackSite) -> None:
    with LoopbackSite({"/": page("elsewhere")}) as other:
        port = site.origin.rsplit(":", 1)[1]
        site.pages.update(
            {
                "/": page(
                    "root",
                    other.url("/"),
                    f"https://127.0.0.1:{port}/a",  # another scheme is another site
                    f"http://localhost:{port}/a",  # and so is another host name
                    "http://example.invalid/x",
                    "/a",
                ),
                "/a": page("a"),
            }
        )
        entries = await crawl(spec_for(site))
        assert other.requests == []
    assert paths(site, entries) == ["/", "/a"]


async def test_fragments_and_duplicate_spellings_are_fetched_once(site: LoopbackSite) -> None:
    port = site.origin.rsplit(":", 1)[1]
    site.pages.update(
        {
            "/": page(
                "root",
                "/a#intro",
                "/a",
                "a#other",
                "./a",
                "/x/../a",
                f"HTTP://127.0.0.1:{port}/a",
                "mailto:someone@example.org",
                "javascript:void(0)",
                "tel:+123",
                "/a?page=2",  # a query string is another page
                "/a?page=2#top",
            ),
            "/a": page("a", "/#top", "/"),
            "/a?page=2": page("a2"),
        }
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/a", "/a?page=2"]
    assert site.page_paths() == ["/", "/a", "/a?page=2"]


async def test_redirects_within_the_site_key_the_target(site: LoopbackSite) -> None:
    with LoopbackSite({"/": page("elsewhere")}) as other:
        site.pages.update(
            {
                "/": page("root", "/old", "/away", "/new"),
                "/old": Page.redirect("/new"),
                "/new": page("new"),
                "/away": Page.redirect(other.url("/")),
            }
        )
        entries = await crawl(spec_for(site))
        assert other.requests == []
    assert paths(site, entries) == ["/", "/new"]
    assert site.page_paths() == ["/", "/old", "/new", "/away"]  # /new fetched once, via /old
    assert failures(entries) == {}


async def test_canonical_link_names_the_page(site: LoopbackSite) -> None:
    canonical = Page.html("Shared", article("canonical pages"), links=["/shared"]).body.replace(
        b"</head>", b'<link rel="canonical" href="/shared"></head>'
    )
    site.pages.update(
        {
            "/": page("root", "/shared?utm_source=feed", "/shared"),
            "/shared?utm_source=feed": Page(canonical),
            "/shared": Page(canonical),
        }
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/shared"]
    assert site.page_paths() == ["/", "/shared?utm_source=feed"]


# -- robots.txt and politeness -------------------------------------------------------------------


async def test_robots_disallow_is_honoured(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/robots.txt": Page.text("User-agent: *\nDisallow: /private/\n"),
            "/": page("root", "/private/secret", "/public"),
            "/private/secret": page("secret"),
            "/public": page("public", "/private/other"),
        }
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/public"]
    assert site.paths() == ["/robots.txt", "/", "/public"]
    assert all(r.user_agent == "ragd-crawler" for r in site.requests)


async def test_robots_rules_for_our_agent_only(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/robots.txt": Page.text(
                "User-agent: otherbot\nDisallow: /\n\nUser-agent: ragd-crawler\nDisallow: /b"
            ),
            "/": page("root", "/a", "/b"),
            "/a": page("a"),
            "/b": page("b"),
        }
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/a"]


async def test_robots_disallowing_the_start_page_stops_the_crawl(site: LoopbackSite) -> None:
    site.pages.update({"/robots.txt": Page.text("User-agent: *\nDisallow: /\n"), "/": page("root")})
    with pytest.raises(Forbidden, match=r"robots\.txt"):
        await crawl(spec_for(site))
    assert site.paths() == ["/robots.txt"]


@pytest.mark.parametrize(("status", "allowed"), [(404, True), (410, True), (401, False), (403, False)])
async def test_robots_answer_status(site: LoopbackSite, status: int, allowed: bool) -> None:
    site.pages.update({"/robots.txt": Page(b"", status, "text/plain"), "/": page("root")})
    if allowed:
        assert paths(site, await crawl(spec_for(site))) == ["/"]
    else:
        with pytest.raises(Forbidden):
            await crawl(spec_for(site))


async def test_robots_server_error_stops_the_crawl(site: LoopbackSite) -> None:
    site.pages.update({"/robots.txt": Page(b"down", 503, "text/plain"), "/": page("root")})
    with pytest.raises(PageFetchFailed, match="503"):
        await crawl(spec_for(site))
    assert site.paths() == ["/robots.txt"]


async def test_request_starts_are_spaced_by_delay(site: LoopbackSite) -> None:
    tree_site(site)
    await crawl(spec_for(site, delay_s=0.1))
    times = [r.at for r in site.requests]
    assert len(times) == 6
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # Arrival times at the server: a request that reaches it late (it opens a connection; on a
    # loaded 2-core machine that took 40 ms once) shortens the gap after it by as much, so each
    # gap gets 50 ms of slack and their mean, where such delays cancel out, 10 ms.  Without the
    # gate the requests arrive milliseconds apart.  test_spacing_on_a_virtual_clock is exact.
    assert min(gaps) >= 0.05, gaps
    assert sum(gaps) / len(gaps) >= 0.09, gaps


async def test_spacing_on_a_virtual_clock(site: LoopbackSite) -> None:
    clock = VirtualClock()
    site.clock = clock
    tree_site(site)
    await crawl(spec_for(site, delay_s=0.5), clock=clock, sleep=clock.sleep)
    times = [r.at for r in site.requests]
    assert len(times) == 6
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(times))
    assert times[-1] - times[0] < 0.5 * 5 + 0.2  # it does not wait much longer than asked


async def test_crawl_delay_raises_the_delay(site: LoopbackSite) -> None:
    clock = VirtualClock()
    site.clock = clock
    tree_site(site)
    site.pages["/robots.txt"] = Page.text("User-agent: ragd-crawler\nCrawl-delay: 3\n")
    await crawl(spec_for(site, delay_s=0.5), clock=clock, sleep=clock.sleep)
    times = [r.at for r in site.requests]
    assert site.paths()[0] == "/robots.txt"
    page_gaps = [b - a for a, b in itertools.pairwise(times[1:])]
    assert len(page_gaps) == 4
    assert all(gap >= 3 for gap in page_gaps), page_gaps


async def test_crawl_delay_for_another_agent_is_ignored(site: LoopbackSite) -> None:
    clock = VirtualClock()
    site.clock = clock
    tree_site(site)
    site.pages["/robots.txt"] = Page.text("User-agent: otherbot\nCrawl-delay: 30\n")
    await crawl(spec_for(site, delay_s=0.5), clock=clock, sleep=clock.sleep)
    times = [r.at for r in site.requests]
    assert max(b - a for a, b in itertools.pairwise(times)) < 1


async def test_one_request_in_flight_even_with_concurrent_loads(site: LoopbackSite) -> None:
    tree_site(site)
    site.latency_s = 0.02
    source = WebSource(spec_for(site, delay_s=0.0))
    try:

        async def scan() -> list[Entry]:
            return [entry async for entry in source.scan()]

        scanning = asyncio.create_task(scan())
        bare = [SourceItem(key=site.url(p), fingerprint="", name=p) for p in ("/a", "/b", "/b1")]
        documents = await asyncio.gather(*(source.load(item) for item in bare))
        entries = await scanning
    finally:
        await source.aclose()
    assert len(keys(entries)) == 5
    assert all("topic-" in doc.text for doc in documents)
    assert len(site.requests) == 9
    assert site.max_in_flight == 1


# -- what a page becomes -------------------------------------------------------------------------


async def test_only_html_and_plain_text_are_indexed(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/": page("root", "/doc.pdf", "/logo.png", "/data.json", "/notes.txt", "/untyped"),
            "/doc.pdf": Page(b"%PDF-1.7 fake", 200, "application/pdf"),
            "/logo.png": Page(b"\x89PNG fake", 200, "image/png"),
            "/data.json": Page(b'{"a": 1}', 200, "application/json"),
            "/notes.txt": Page.text("Plain notes about the release.\r\nSecond line."),
            "/untyped": Page(b"\x00\x01binary", 200, None),
        }
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/notes.txt"]
    assert failures(entries) == {}
    notes = entries[1]
    assert isinstance(notes, SourceItem)
    assert notes.document is not None
    assert notes.document.text == "Plain notes about the release.\nSecond line."
    assert notes.document.mime_type == "text/plain"
    assert notes.name == site.url("/notes.txt")


async def test_http_errors_are_item_failures(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/": page("root", "/broken", "/missing", "/fine"),
            "/broken": Page(b"oops", 500, "text/plain"),
            "/fine": page("fine"),
        }
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/fine"]
    found = failures(entries)
    assert set(found) == {site.url("/broken"), site.url("/missing")}
    assert found[site.url("/broken")].code == "FETCH_FAILED"
    assert found[site.url("/broken")].message.startswith("HTTP 500")
    assert found[site.url("/missing")].code == "FETCH_FAILED"
    assert "HTTP 404" in found[site.url("/missing")].message


@pytest.mark.parametrize(
    ("status", "hides"),
    [(500, True), (503, True), (429, True), (408, True), (404, False), (410, False), (403, False)],
)
async def test_failures_that_may_pass_hide_the_scope(site: LoopbackSite, status: int, hides: bool) -> None:
    # /docs/hub failing may hide any page of /docs/ (it could be the only way to them): a sync
    # must not take its unreached pages for deleted; a page that is gone or refused hides nothing
    site.pages.update({"/docs/": page("root", "/docs/hub"), "/docs/hub": Page(b"no", status, "text/plain")})
    failure = failures(await crawl(spec_for(site, "/docs/")))[site.url("/docs/hub")]
    assert failure.hides == (site.url("/docs/") if hides else None)
    assert not failure.listing


async def test_network_errors_are_item_failures(site: LoopbackSite) -> None:
    site.pages.update({"/": page("root", "/slow", "/fine"), "/fine": page("fine")})
    transport = httpx.AsyncHTTPTransport()

    class FailingSlow(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/slow":
                raise httpx.ReadTimeout("timed out", request=request)
            return await transport.handle_async_request(request)

    async with httpx.AsyncClient(transport=FailingSlow()) as client:
        entries = await crawl(spec_for(site), client=client)
    await transport.aclose()
    assert paths(site, entries) == ["/", "/fine"]
    failure = failures(entries)[site.url("/slow")]
    assert failure.code == "FETCH_FAILED"
    assert "ReadTimeout" in failure.message
    assert failure.hides == site.url("/")


async def test_oversize_pages_fail_with_file_too_large(site: LoopbackSite) -> None:
    big = Page.html("Big", article("size") * 40)
    site.pages.update({"/": page("root", "/big"), "/big": big})
    limit = len(site.pages["/"].body) + 100
    assert len(big.body) > limit
    entries = await crawl(spec_for(site, max_page_bytes=limit))
    assert paths(site, entries) == ["/"]
    assert failures(entries)[site.url("/big")].code == "FILE_TOO_LARGE"


async def test_empty_pages_fail_but_their_links_are_followed(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/": page("root", "/empty"),
            "/empty": Page(b"<html><body><script>var a = 1;</script><a href='/after'></a></body></html>"),
            "/after": page("after"),
        }
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/after"]
    assert failures(entries)[site.url("/empty")].code == "EMPTY_DOCUMENT"


async def test_boilerplate_is_removed_and_structure_kept(site: LoopbackSite) -> None:
    site.pages.update({"/": page("root", "/a"), "/a": page("a", "/")})
    entries = await crawl(spec_for(site))
    for entry in entries:
        assert isinstance(entry, SourceItem)
        document = entry.document
        assert document is not None
        assert NAV_TEXT not in document.text
        assert FOOTER_TEXT not in document.text
        assert "Example Site header banner" not in document.text
        assert "link to" not in document.text
        assert "This article explains topic-" in document.text
        assert "## Details about topic-" in document.text  # headings survive as Markdown
        assert document.extractor == "trafilatura"
        assert document.mime_type == "text/html"
        assert document.meta["url"] == entry.key
        assert entry.name == document.meta["title"]
        assert entry.size == len(site.pages[entry.key.removeprefix(site.origin)].body)
        assert entry.fingerprint == hashlib.sha256(document.text.encode()).hexdigest()
    assert [e.name for e in entries if isinstance(e, SourceItem)] == ["Page root", "Page a"]


async def test_page_trafilatura_finds_nothing_in_falls_back_to_body_text(site: LoopbackSite) -> None:
    site.pages.update(
        {
            "/": page("root", "/footer-only"),
            "/footer-only": Page(
                b"<html><head><title>Contact</title></head><body><aside><p>Opening hours vary.</p></aside>"
                b"<footer><p>Call us on Mondays.</p></footer><script>track()</script></body></html>"
            ),
        }
    )
    entries = await crawl(spec_for(site))
    item = entries[1]
    assert isinstance(item, SourceItem)
    assert item.document is not None
    assert item.document.text == "Opening hours vary.\nCall us on Mondays."
    assert item.document.extractor == "lxml"
    assert item.name == "Contact"


async def test_charset_from_header_or_meta(site: LoopbackSite) -> None:
    words = "<p>Привет, мир: страница на русском языке о настройке сайта и его документации.</p>"
    html = Page.html("Menu", article("desserts") + words).body.decode()
    with_meta = html.replace("<head>", '<head><meta charset="windows-1251">')
    site.pages.update(
        {
            "/": page("root", "/header", "/meta"),
            "/header": Page(html.encode("koi8-r"), 200, "text/html; charset=KOI8-R"),
            "/meta": Page(with_meta.encode("cp1251"), 200, "text/html"),
        }
    )
    entries = await crawl(spec_for(site))
    assert len(keys(entries)) == 3
    for entry in entries[1:]:
        assert isinstance(entry, SourceItem)
        assert entry.document is not None
        assert "Привет, мир" in entry.document.text


# -- re-crawls -----------------------------------------------------------------------------------


async def test_fingerprints_follow_content_across_crawls(site: LoopbackSite) -> None:
    tree_site(site)
    first = {e.key: e.fingerprint for e in await crawl(spec_for(site)) if isinstance(e, SourceItem)}
    second = {e.key: e.fingerprint for e in await crawl(spec_for(site)) if isinstance(e, SourceItem)}
    assert first == second
    assert len(set(first.values())) == len(first)

    site.pages["/b1"] = Page.html("Page b1", article("something new"))
    third = {e.key: e.fingerprint for e in await crawl(spec_for(site)) if isinstance(e, SourceItem)}
    changed = {key for key in first if third[key] != first[key]}
    assert changed == {site.url("/b1")}


async def test_removed_pages_are_not_yielded_again(site: LoopbackSite) -> None:
    tree_site(site)
    before = await crawl(spec_for(site))
    assert site.url("/b1") in keys(before)

    del site.pages["/b1"]
    site.pages["/b"] = page("b")  # the link is gone too
    after = await crawl(spec_for(site))
    assert site.url("/b1") not in keys(after)
    assert site.url("/b1") not in failures(after)
    assert paths(site, after) == ["/", "/a", "/b", "/a1"]

    del site.pages["/a1"]  # still linked from /a: a failure, so the sync can tell
    again = await crawl(spec_for(site))
    assert site.url("/a1") not in keys(again)
    assert failures(again)[site.url("/a1")].code == "FETCH_FAILED"


# -- load ----------------------------------------------------------------------------------------


async def test_load_returns_the_document(site: LoopbackSite) -> None:
    site.pages.update({"/": page("root", "/a"), "/a": page("a")})
    source: SourceReader = WebSource(spec_for(site))
    assert isinstance(source, WebSource)
    try:
        items = [e async for e in source.scan() if isinstance(e, SourceItem)]
        requests = len(site.requests)
        carried = await source.load(items[1])
        assert carried is items[1].document
        assert len(site.requests) == requests  # no fetch for a carried document

        fetched = await source.load(SourceItem(key=items[1].key, fingerprint="", name="a"))
        assert fetched == items[1].document
        assert site.paths()[-1] == "/a"

        del site.pages["/a"]
        with pytest.raises(NotFound):
            await source.load(SourceItem(key=items[1].key, fingerprint="", name="a"))
        site.pages["/a"] = Page(b"%PDF", 200, "application/pdf")
        with pytest.raises(UnsupportedType):
            await source.load(SourceItem(key=items[1].key, fingerprint="", name="a"))
        with pytest.raises(InvalidRequest, match="not a page of the crawl"):
            await source.load(SourceItem(key="http://example.invalid/", fingerprint="", name="x"))
    finally:
        await source.aclose()


async def test_a_given_client_is_left_open(site: LoopbackSite) -> None:
    site.pages["/"] = page("root")
    async with httpx.AsyncClient() as client:
        source = WebSource(spec_for(site), client=client)
        assert len([e async for e in source.scan()]) == 1
        await source.aclose()
        assert not client.is_closed


# -- the start page and the spec -----------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/file",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "mailto:a@example.org",
        "example.org/docs",
        "http://",
        "http://user:secret@example.org/",
        "http://example.org:99999/",
        "",
    ],
)
def test_invalid_start_urls(url: str) -> None:
    with pytest.raises(InvalidRequest):
        CrawlSpec(url)


@pytest.mark.parametrize(
    "options",
    [{"max_depth": -1}, {"max_pages": 0}, {"delay_s": -1.0}, {"timeout_s": 0.0}, {"path_prefix": "docs"}],
)
def test_invalid_limits(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest):
        CrawlSpec("https://example.org/", **options)


async def test_start_page_failures_raise(site: LoopbackSite) -> None:
    with pytest.raises(NotFound):
        await crawl(spec_for(site, "/nothing-here"))
    site.pages["/"] = Page(b"down", 500, "text/plain")
    with pytest.raises(PageFetchFailed, match="HTTP 500"):
        await crawl(spec_for(site))
    site.pages["/"] = Page.redirect("https://example.invalid/")
    with pytest.raises(InvalidRequest, match=re.escape("redirects to https://example.invalid/")):
        await crawl(spec_for(site))
    site.pages["/"] = Page(b"%PDF", 200, "application/pdf")
    with pytest.raises(UnsupportedType):
        await crawl(spec_for(site))


async def test_unreachable_site_raises() -> None:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(PageFetchFailed, match="ConnectError"):
            await crawl(CrawlSpec(f"http://127.0.0.1:{port}/", delay_s=0.0, allow_private=True))


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("HTTP://Example.ORG:80/a/./b/../c#frag", "http://example.org/a/c"),
        ("https://example.org:443", "https://example.org/"),
        ("https://example.org:8443/x?b=2&a=1", "https://example.org:8443/x?b=2&a=1"),
        ("/a b/ü", "http://h.test/a%20b/%C3%BC"),
        ("?q=1", "http://h.test/dir/page?q=1"),
        ("//other.test/p", "http://other.test/p"),
        ("mailto:a@b.c", None),
        ("javascript:void(0)", None),
        ("  ", None),
    ],
)
def test_canonical_url(href: str, expected: str | None) -> None:
    assert canonical_url(href, "http://h.test/dir/page") == expected


@pytest.mark.parametrize("location", ["javascript:alert(1)", "javascript:void(0)"])
async def test_a_redirect_httpx_refuses_is_that_pages_failure(site: LoopbackSite, location: str) -> None:
    # httpx raises InvalidURL building the next request from such a Location (even unfollowed):
    # the page fails with INVALID_LINK, hides nothing (it fails the same way next time), the crawl goes on
    site.pages.update(
        {"/": page("root", "/bad", "/fine"), "/bad": Page.redirect(location), "/fine": page("fine")}
    )
    entries = await crawl(spec_for(site))
    assert paths(site, entries) == ["/", "/fine"]
    failure = failures(entries)[site.url("/bad")]
    assert failure.code == "INVALID_LINK"
    assert "redirects to a URL that cannot be fetched" in failure.message
    assert failure.hides is None


async def test_a_start_page_redirecting_to_a_refused_url_is_a_400(site: LoopbackSite) -> None:
    site.pages["/"] = Page.redirect("javascript:alert(1)")
    with pytest.raises(InvalidRequest) as raised:
        await crawl(spec_for(site))
    assert raised.value.code == "INVALID_LINK"
