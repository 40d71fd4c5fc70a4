"""A breadth-first crawl of one site section, yielding a SourceItem or ItemFailure per page.

Order and limits: pages are visited breadth-first from the start URL; links of a
page at depth ``d`` are queued at ``d + 1`` while ``d < max_depth``; the crawl stops
once ``max_pages`` pages have been yielded or failed.  A URL is queued once (its
canonical spelling), only when it is in the :class:`Scope` (same origin, path
prefix) and robots.txt allows it, so a disallowed page is never requested.

What a page becomes:

* redirects are followed hop by hop while the target stays in scope and is allowed;
  the last URL is the page's key, unless the page names an in-scope
  ``<link rel="canonical">``, which then is.  A page whose key was already seen
  (two URLs for one page) is not yielded twice, but its links are still followed;
* a non-2xx answer, a network error or too many redirects is an
  ``ItemFailure(code="FETCH_FAILED")``, a body over the limit ``FILE_TOO_LARGE``,
  a page with no text left ``EMPTY_DOCUMENT``, a host that resolved to a private address
  at this connection ``PRIVATE_ADDRESS`` (:mod:`ragd.sources.guarded_http`).  A failure
  that may pass (a network error, a timeout, 429 or 5xx, a private address) ``hides`` the
  whole scope: the pages only that page links to were not reached, so a sync removes
  nothing this time;
* any content type but HTML or plain text, and a redirect out of scope, are
  skipped silently;
* with a ``render`` step (a spec with ``render``: :mod:`ragd.sources.render`), an HTML answer is
  then loaded in headless Chromium and its settled DOM read instead of the body; a page that
  does not settle is ``RENDER_TIMEOUT`` (it may pass: it hides the scope), and no renderer at all
  (:class:`RenderUnavailable`) ends the crawl.

The start page is different: if it cannot be fetched the crawl raises (a 404 is
:class:`NotFound`, a robots.txt ban :class:`Forbidden`, a redirect out of scope
:class:`InvalidRequest`, anything else :class:`PageFetchFailed`) instead of yielding
a failure, because a crawl that reaches nothing would make every page look deleted.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from ragd.errors import (
    EmptyDocument,
    Forbidden,
    InvalidRequest,
    NotFound,
    PageFetchFailed,
    PrivateAddress,
    RagError,
    RenderUnavailable,
    UnsupportedType,
)
from ragd.observe.logging import sanitize
from ragd.sources.base import ItemFailure, SourceItem
from ragd.sources.crawl_spec import CrawlSpec
from ragd.sources.polite_fetch import Fetched, PoliteFetcher
from ragd.sources.robots import RobotsPolicy, read_robots
from ragd.sources.urls import Scope, canonical_url
from ragd.sources.web_page import HTML_TYPES, ParsedPage, is_readable, page_item, parse_page

logger = logging.getLogger(__name__)

MAX_REDIRECTS = 10

#: a fetched HTML page to the same page as a browser leaves it (given robots.txt's verdict on URLs)
Render = Callable[[Fetched, Callable[[str], bool]], Awaitable[Fetched]]


@dataclass(frozen=True, slots=True)
class _Visit:
    result: SourceItem | ItemFailure | None  # None: skipped silently
    links: tuple[str, ...] = ()


async def crawl(
    spec: CrawlSpec, fetcher: PoliteFetcher, render: Render | None = None
) -> AsyncIterator[SourceItem | ItemFailure]:
    """Every page of the crawl (see the module docstring); robots.txt is read first."""
    scope, start = spec.scope, spec.canonical_start
    robots = await read_robots(fetcher, scope, spec.user_agent)
    fetcher.gate.delay_s = max(spec.delay_s, robots.crawl_delay or 0.0)
    if not robots.allows(start):
        agent = spec.user_agent
        raise Forbidden(f"robots.txt of {scope.origin} disallows the start URL {start} for {agent!r}")
    visitor = _Visitor(fetcher, scope, robots, render)
    queue: deque[tuple[str, int]] = deque([(start, 0)])
    queued = {start}
    counted = 0
    while queue and counted < spec.max_pages:
        url, depth = queue.popleft()
        if url in visitor.keys:
            continue
        visit = await visitor.visit(url, is_start=depth == 0)
        if depth < spec.max_depth:
            for link in visit.links:
                if link not in queued and scope.contains(link) and robots.allows(link):
                    queued.add(link)
                    queue.append((link, depth + 1))
        if visit.result is not None:
            counted += 1
            yield visit.result
    logger.info("crawled %s: %d pages and failures, %d left queued", sanitize(start), counted, len(queue))


class _Visitor:
    """Fetches and reads one page at a time; remembers the keys already visited."""

    def __init__(
        self, fetcher: PoliteFetcher, scope: Scope, robots: RobotsPolicy, render: Render | None
    ) -> None:
        self.keys: set[str] = set()
        self._fetcher = fetcher
        self._scope = scope
        self._robots = robots
        self._render = render

    async def visit(self, url: str, *, is_start: bool) -> _Visit:
        key = url
        try:
            fetched = await self._follow(url)
            if isinstance(fetched, _Skip):
                return self._skip(url, fetched, is_start=is_start)
            key = fetched.url
            page = await self._read(fetched)
            if isinstance(page, _Skip):
                return self._skip(url, page, is_start=is_start)
        except RagError as exc:
            if isinstance(exc, RenderUnavailable):
                raise
            if is_start:
                if isinstance(exc, PageFetchFailed) and exc.status == 404:
                    raise NotFound(exc.message, hint="check the start URL") from exc
                raise
            logger.info("crawl: %s failed: %s %s", sanitize(key), exc.code, sanitize(exc.message))
            self.keys.add(key)
            # a page that may answer next time hid its links: any page of the scope may be behind it
            hides = f"{self._scope.origin}{self._scope.prefix}" if _may_pass(exc) else None
            return _Visit(ItemFailure(key, exc.code, exc.message, hides=hides))
        key = self._key(fetched.url, page.links.canonical)
        if key in self.keys:
            return _Visit(None, page.links.links)
        self.keys.update({key, fetched.url})
        try:
            return _Visit(page_item(key, page), page.links.links)
        except EmptyDocument as exc:
            return _Visit(ItemFailure(key, exc.code, exc.message), page.links.links)

    async def _follow(self, url: str) -> Fetched | _Skip:
        """The answer at the end of in-scope redirects, or why the page is skipped."""
        for _ in range(MAX_REDIRECTS + 1):
            fetched = await self._fetcher.get(url)
            if not fetched.is_redirect:
                return fetched
            target = canonical_url(fetched.location or "", url)
            if target is None or not self._scope.contains(target):
                where = f"{self._scope.origin}{self._scope.prefix}"
                return _Skip(f"redirects to {target or fetched.location}, outside {where}", InvalidRequest)
            if not self._robots.allows(target):
                return _Skip(f"redirects to {target}, which robots.txt disallows", Forbidden)
            if target in self.keys:
                return _Skip(f"redirects to {target}, already crawled", InvalidRequest)
            url = target
        raise PageFetchFailed(f"{url} redirects more than {MAX_REDIRECTS} times", status=fetched.status)

    async def _read(self, fetched: Fetched) -> ParsedPage | _Skip:
        """The parsed page, or a skip for a content type the crawl does not index."""
        if not fetched.ok:
            message = f"HTTP {fetched.status} {sanitize(fetched.reason, limit=80)} for {fetched.url}"
            raise PageFetchFailed(message, status=fetched.status)
        if not is_readable(fetched):
            kind = fetched.content_type or "unknown"
            return _Skip(f"is {kind}, not an HTML or text page", UnsupportedType)
        if self._render is not None and (fetched.content_type in HTML_TYPES or not fetched.content_type):
            fetched = await self._render(fetched, self._robots.allows)
        return await asyncio.to_thread(parse_page, fetched)

    def _key(self, url: str, canonical: str | None) -> str:
        if canonical and self._scope.contains(canonical) and self._robots.allows(canonical):
            return canonical
        return url

    @staticmethod
    def _skip(url: str, skip: _Skip, *, is_start: bool) -> _Visit:
        if is_start:
            raise skip.error(f"the start URL {url} {skip.reason}")
        logger.debug("crawl: skipping %s: it %s", sanitize(url), sanitize(skip.reason))
        return _Visit(None)


@dataclass(frozen=True, slots=True)
class _Skip:
    """Why a page is passed over without a failure, and the error it is when the start page is."""

    reason: str
    error: type[RagError]


def _may_pass(exc: RagError) -> bool:
    """A failure that may not happen next time: a network error, a timeout, 429 or a 5xx answer,
    or a host whose name resolved to a private address this time (the page is not known gone)."""
    if isinstance(exc, PrivateAddress):
        return True
    if not isinstance(exc, PageFetchFailed):
        return False
    return exc.status is None or exc.status in (408, 425, 429) or exc.status >= 500
