"""A website as a source: each crawl lists the pages of one site section as they are now.

    spec = CrawlSpec("https://docs.example.org/guide/", max_depth=3, delay_s=1.0)
    source = WebSource(spec)
    async for entry in source.scan():      # SourceItem (text in hand) or ItemFailure
        ...
    await source.aclose()

Every :meth:`WebSource.scan` is a fresh breadth-first crawl (:mod:`ragd.sources.crawl`):
robots.txt is read again, and a page that has vanished is simply not yielded, which
the sync layer reads as deleted.  Items carry their Document, so :meth:`WebSource.load`
only fetches when handed an item without one.  Requests go through one
:class:`PoliteGate` per source, shared by scan and load: one request in flight,
request starts at least ``delay_s`` apart (longer if robots.txt asks).  Unless the spec
``allow_private``, every connection is made by :func:`ragd.sources.guarded_http.guarded_client`:
the host's addresses are checked at each connection and the socket goes to a checked one
(``network`` opens it; tests pass their own).  A ``client`` given is used as it is.
A spec with ``render`` loads each HTML page in headless Chromium (:mod:`ragd.sources.render`,
``chromium_path`` or Chromium on PATH), every request it makes sent through the same client;
the browser starts at the first page and :meth:`WebSource.aclose` ends it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpcore
import httpx

from ragd.errors import InvalidRequest, NotFound, PageFetchFailed, UnsupportedType
from ragd.observe.logging import sanitize
from ragd.sources.base import ItemFailure, ItemMetadata, SourceItem
from ragd.sources.crawl import MAX_REDIRECTS, crawl
from ragd.sources.crawl_spec import CrawlSpec
from ragd.sources.guarded_http import crawl_client
from ragd.sources.polite_fetch import Clock, Fetched, PoliteFetcher, PoliteGate, Sleep
from ragd.sources.render import PageRenderer
from ragd.sources.urls import canonical_url
from ragd.sources.web_page import is_readable, page_document, parse_page
from ragd.types import Blob, Document

__all__ = ["CrawlSpec", "PageFetchFailed", "WebSource"]


class WebSource:
    """The pages of one website section (implements :class:`ragd.sources.base.SourceReader`)."""

    def __init__(
        self,
        spec: CrawlSpec,
        *,
        client: httpx.AsyncClient | None = None,
        network: httpcore.AsyncNetworkBackend | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        chromium_path: str | None = None,
    ) -> None:
        self.spec = spec
        self._owns_client = client is None
        if client is None:
            client = crawl_client(allow_private=spec.allow_private, network=network)
        self._client = client
        gate = PoliteGate(spec.delay_s, clock=clock, sleep=sleep)
        self._fetcher = PoliteFetcher(
            self._client,
            gate,
            user_agent=spec.user_agent,
            timeout_s=spec.timeout_s,
            max_bytes=spec.max_page_bytes,
        )
        self.renderer: PageRenderer | None = None
        if spec.render:
            self.renderer = PageRenderer(
                self._client,
                chromium_path=chromium_path,
                timeout_s=spec.render_timeout_s,
                max_bytes=spec.max_page_bytes,
                user_agent=spec.user_agent,
            )

    def scan(self) -> AsyncIterator[SourceItem | ItemFailure]:
        """Crawl the site now; raises a RagError when the start page cannot be fetched at all."""
        return crawl(self.spec, self._fetcher, self.renderer.render if self.renderer else None)

    async def load(self, item: SourceItem) -> Document:
        """The item's Document: the one it carries, else its URL fetched and extracted again.

        Raises NotFound (the page is gone or now redirects elsewhere), PageFetchFailed,
        PayloadTooLarge, UnsupportedType or EmptyDocument."""
        if item.document is not None:
            return item.document
        fetched = await self._fetch(item.key)
        if not is_readable(fetched):
            kind = fetched.content_type or "untyped"
            raise UnsupportedType(f"{item.key} is {kind}, not an HTML or text page")
        if self.renderer is not None and fetched.content_type != "text/plain":
            fetched = await self.renderer.render(fetched)
        page = await asyncio.to_thread(parse_page, fetched)
        return page_document(item.key, page)

    async def release(self, blob: Blob) -> None:
        """Nothing to release: a web source hands out Documents, never Blobs."""

    async def item_metadata(self, item: SourceItem) -> ItemMetadata:
        """The page's meta tags and date, read when the crawl fetched it."""
        return item.metadata or ItemMetadata()

    async def aclose(self) -> None:
        """Close the browser, if one was started, and the HTTP client if this source created it."""
        try:
            if self.renderer is not None:
                await self.renderer.aclose()
        finally:
            if self._owns_client:
                await self._client.aclose()

    async def _fetch(self, key: str) -> Fetched:
        """``GET key``, following redirects within the crawl's scope."""
        scope = self.spec.scope
        url = canonical_url(key)
        if url is None or not (scope.contains(url) or url == self.spec.canonical_start):
            raise InvalidRequest(f"{key!r} is not a page of the crawl {scope.origin}{scope.prefix}")
        for _ in range(MAX_REDIRECTS + 1):
            fetched = await self._fetcher.get(url)
            target = canonical_url(fetched.location or "", url) if fetched.is_redirect else None
            if target is None:
                break
            if not scope.contains(target):
                raise NotFound(f"{key} now redirects to {target}, outside the crawl")
            url = target
        reason = sanitize(fetched.reason, limit=80)
        if fetched.status in {404, 410}:
            raise NotFound(f"HTTP {fetched.status} {reason} for {key}: the page is gone")
        if not fetched.ok:
            raise PageFetchFailed(f"HTTP {fetched.status} {reason} for {key}", status=fetched.status)
        return fetched
