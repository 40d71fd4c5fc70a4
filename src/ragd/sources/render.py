"""Web pages loaded in headless Chromium: the DOM their scripts leave, every connection made by ragd.

    renderer = PageRenderer(client, chromium_path=None, timeout_s=30, max_bytes=10_000_000,
                            user_agent="ragd-crawler")
    rendered = await renderer.render(fetched, robots.allows)   # a Fetched whose body is the DOM
    await renderer.aclose()

The crawl fetches a page as always (:mod:`ragd.sources.polite_fetch`: robots.txt, scope, redirects,
the politeness delay, the size limit); :meth:`PageRenderer.render` then loads **that answer** into
Chromium (the main frame's navigation is fulfilled with the fetched body, nothing fetched twice)
and returns ``page.content()`` once the page has settled (no request for 500 ms:
``wait_until="networkidle"``), bounded by ``timeout_s`` (:class:`RenderTimeout`, that page's
failure) and ``max_bytes`` (:class:`PayloadTooLarge`).

Chromium opens no connection of its own.  Every request the page makes is routed
(``context.route("**/*")``) and either aborted or fulfilled by ragd's own ``client`` -- the
crawl's :func:`ragd.sources.guarded_http.crawl_client`, whose every connection checks the
addresses it resolves to, redirect hops included -- so a script that calls ``127.0.0.1`` or a
name that resolves to a private address gets a network error (recorded in :attr:`blocked`).
Aborted: another main-frame navigation (a script sending the page elsewhere), images, media and
fonts (no text), a same-site URL robots.txt disallows, a body over ``max_bytes``.  After a page
that did not settle the browser is closed (a script spinning forever may hold its renderer) and
started again for the next page.  WebSockets
are closed unconnected, service workers blocked, downloads refused, popups closed; a dead proxy
(``127.0.0.1:9``, loopback not bypassed) and WebRTC limited to proxied UDP catch anything that
slipped past the routes.  One browser per renderer (a crawl), launched at the first page, one
fresh profile (no persistent state), pages one at a time.

Playwright for Python is the optional extra ``ragd[render]``; Chromium is Debian's ``chromium``
(``crawl.chromium_path``, else ``chromium`` / ``chromium-browser`` on PATH).  Without either, or
when Chromium will not start, :class:`RenderUnavailable` with an install hint.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from ragd.errors import PageFetchFailed, PayloadTooLarge, PrivateAddress, RenderTimeout, RenderUnavailable
from ragd.observe.logging import sanitize
from ragd.sources.polite_fetch import Fetched

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'ragd[render]' and apt-get install chromium (or set RAGD_CRAWL__CHROMIUM_PATH)"
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--dns-prefetch-disable",
    # nothing should reach the network unrouted; what would goes to a port nobody listens on
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
#: resource types never fetched for a rendered page: they carry no text
SKIPPED_TYPES = frozenset({"image", "media", "font"})
#: request headers passed on from Chromium to the site
FORWARDED_HEADERS = ("accept", "accept-language", "content-type", "referer", "x-requested-with")
#: response headers that no longer describe the body ragd hands to Chromium (httpx decoded it)
_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection"})

Allows = Callable[[str], bool]


def find_chromium(configured: str | None) -> str:
    """The Chromium to launch: ``configured``, else on PATH; RenderUnavailable when there is none."""
    found = configured or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found or shutil.which(found) is None:
        where = repr(configured) if configured else "chromium on PATH"
        raise RenderUnavailable(f"rendering needs Chromium and there is no {where}", hint=INSTALL_HINT)
    return found


class PageRenderer:
    """Renders one crawl's pages in one headless Chromium, launched at the first page."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        chromium_path: str | None,
        timeout_s: float,
        max_bytes: int,
        user_agent: str,
    ) -> None:
        self._client = client
        self.chromium_path = chromium_path
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._user_agent = user_agent
        self._lock = asyncio.Lock()
        self._playwright: Any = None
        self._browser: Any = None
        self._context: Any = None
        #: the last requests refused by the address check or the rules above: (url, reason)
        self.blocked: deque[tuple[str, str]] = deque(maxlen=100)

    async def render(self, fetched: Fetched, allows: Allows | None = None) -> Fetched:
        """``fetched`` loaded in Chromium: its body replaced by the settled DOM (UTF-8 HTML)."""
        async with self._lock:  # pages one at a time
            context = await self._started()
            page = await context.new_page()
            router = _Router(self, fetched, allows, page)
            try:
                await page.route("**/*", router.handle)
                html = await self._settle(page, fetched.url)
            except RenderTimeout:
                await self.aclose()  # the next page gets a fresh browser
                raise
            finally:
                if self._context is not None:
                    await _close(page)
        body = html.encode("utf-8")
        if len(body) > self._max_bytes:
            limit = self._max_bytes
            raise PayloadTooLarge(
                f"{sanitize(fetched.url)} renders to more than the page limit of {limit} bytes"
            )
        return Fetched(
            fetched.url,
            fetched.status,
            fetched.reason,
            "text/html",
            "utf-8",
            None,
            body,
            fetched.last_modified,
        )

    async def aclose(self) -> None:
        """Close the browser and the Playwright driver, if they were started."""
        browser, playwright = self._browser, self._playwright
        self._context = self._browser = self._playwright = None
        if browser is not None:
            await browser.close()
        if playwright is not None:
            await playwright.stop()

    async def _settle(self, page: Any, url: str) -> str:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        timeout_ms = self._timeout_s * 1000
        try:
            async with asyncio.timeout(self._timeout_s + 5):  # should a route handler hang
                await page.goto(url, wait_until="networkidle", timeout=timeout_ms)
                return str(await page.content())
        except (PlaywrightTimeout, TimeoutError) as exc:
            raise RenderTimeout(
                f"{sanitize(url)} did not settle within {self._timeout_s:g} s of rendering",
                hint="the page keeps loading; raise RAGD_CRAWL__RENDER_TIMEOUT_S or crawl it without render",
            ) from exc
        except PlaywrightError as exc:
            raise PageFetchFailed(f"rendering {sanitize(url)} failed: {sanitize(exc.message)}") from exc

    async def _started(self) -> Any:
        if self._context is not None:
            return self._context
        path = find_chromium(self.chromium_path)
        try:
            from playwright.async_api import Error as PlaywrightError
            from playwright.async_api import async_playwright
        except ImportError as exc:
            raise RenderUnavailable("rendering needs Playwright for Python", hint=INSTALL_HINT) from exc
        self._playwright = await async_playwright().start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=path, args=list(CHROMIUM_ARGS), headless=True
            )
            context = await self._browser.new_context(
                user_agent=self._user_agent, service_workers="block", accept_downloads=False
            )
        except PlaywrightError as exc:
            await self.aclose()
            message = f"Chromium at {path} would not start: {sanitize(exc.message, limit=300)}"
            raise RenderUnavailable(message, hint=INSTALL_HINT) from exc
        await context.route_web_socket("**/*", _refuse_websocket)
        context.on("page", _close_popup)
        self._context = context
        return context

    async def forward(self, route: Any) -> None:
        """Fetch a page's request with ragd's client and hand Chromium the answer (or abort it)."""
        request = route.request
        url = str(request.url)
        headers = {name: value for name, value in request.headers.items() if name in FORWARDED_HEADERS}
        headers["user-agent"] = self._user_agent
        try:
            outgoing = self._client.build_request(
                request.method,
                url,
                headers=headers,
                content=request.post_data_buffer,
                timeout=httpx.Timeout(self._timeout_s),
            )
            response = await self._client.send(outgoing, stream=True, follow_redirects=True)
            try:
                body = await _bounded(response, self._max_bytes)
            finally:
                await response.aclose()
        except PrivateAddress as exc:
            await self.refuse(route, url, exc.message, "addressunreachable")
            return
        except (httpx.HTTPError, httpx.InvalidURL, PayloadTooLarge) as exc:
            await self.refuse(route, url, f"{type(exc).__name__}: {exc}", "failed")
            return
        kept = {k: v for k, v in response.headers.items() if k.lower() not in _DROPPED_HEADERS}
        await route.fulfill(status=response.status_code, headers=kept, body=body)

    async def refuse(self, route: Any, url: str, reason: str, code: str = "blockedbyclient") -> None:
        self.blocked.append((url, reason))
        logger.debug("render: refused %s: %s", sanitize(url), sanitize(reason))
        await route.abort(code)


class _Router:
    """What each request of one rendered page gets (see the module docstring)."""

    def __init__(self, renderer: PageRenderer, fetched: Fetched, allows: Allows | None, page: Any) -> None:
        self._renderer = renderer
        self._fetched = fetched
        self._allows = allows
        self._page = page
        self._origin = _origin(fetched.url)
        self._loaded = False

    async def handle(self, route: Any) -> None:
        request = route.request
        url = str(request.url)
        if request.is_navigation_request() and request.frame == self._page.main_frame:
            if self._loaded:  # the first is the page itself (goto), whatever Chromium's spelling
                await self._renderer.refuse(route, url, "the page navigates away")
                return
            self._loaded = True
            content_type = self._fetched.content_type or "text/html"
            charset = f"; charset={self._fetched.charset}" if self._fetched.charset else ""
            await route.fulfill(status=200, content_type=content_type + charset, body=self._fetched.body)
            return
        if urlsplit(url).scheme not in ("http", "https"):
            await self._renderer.refuse(route, url, "not http(s)")
        elif request.resource_type in SKIPPED_TYPES:
            await route.abort("blockedbyclient")
        elif self._allows is not None and _origin(url) == self._origin and not self._allows(url):
            await self._renderer.refuse(route, url, "robots.txt disallows it")
        else:
            await self._renderer.forward(route)


async def _bounded(response: httpx.Response, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"a resource is larger than the crawl's page limit of {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


async def _refuse_websocket(ws: Any) -> None:
    await ws.close(code=1008, reason="ragd renders without WebSockets")


async def _close_popup(page: Any) -> None:
    opener = await page.opener()
    if opener is not None:
        await _close(page)


async def _close(page: Any) -> None:
    try:
        await asyncio.wait_for(page.close(), 10)
    except Exception:  # a page already gone, a renderer that hung: the browser closes at the end
        logger.debug("render: a page did not close cleanly", exc_info=True)
