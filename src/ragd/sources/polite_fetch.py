"""GET one URL of a site politely: one request in flight, request starts spaced, bodies bounded.

:class:`PoliteGate` serialises requests to a site and keeps at least ``delay_s``
between two request starts (the clock and the sleep are injected, so tests can
run on a virtual clock).  :class:`PoliteFetcher` sends one GET through the gate
without following redirects (the crawler decides which hops stay in scope) and
reads at most ``max_bytes`` of the body.  Network failures become
:class:`PageFetchFailed`, an oversize body :class:`PayloadTooLarge`, and a URL httpx refuses
(``httpx.InvalidURL`` is no ``httpx.HTTPError``: a ``Location: javascript:…`` raises it even when the
redirect is not followed) :class:`InvalidLink`, so one bad page never ends a crawl.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

import httpx

from ragd.errors import InvalidLink, PageFetchFailed, PayloadTooLarge
from ragd.observe.logging import sanitize

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Fetched:
    """One HTTP answer, redirects not followed."""

    url: str
    status: int
    reason: str
    content_type: str  # media type, lower-case, without parameters ("" when absent)
    charset: str | None
    location: str | None  # the Location header of a redirect
    body: bytes
    last_modified: str | None = None  # the Last-Modified header, as sent

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def is_redirect(self) -> bool:
        return 300 <= self.status < 400 and self.location is not None


class PoliteGate:
    """At most one request in flight, and request starts at least ``delay_s`` apart."""

    def __init__(self, delay_s: float, *, clock: Clock, sleep: Sleep) -> None:
        self.delay_s = delay_s
        self._clock = clock
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._last_start = -math.inf

    def raise_delay(self, delay_s: float) -> None:
        """Use ``delay_s`` from now on if it is longer than the current delay."""
        self.delay_s = max(self.delay_s, delay_s)

    async def __aenter__(self) -> None:
        await self._lock.acquire()
        try:
            wait = self._last_start + self.delay_s - self._clock()
            if wait > 0:
                await self._sleep(wait)
            self._last_start = self._clock()
        except BaseException:
            self._lock.release()
            raise

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._lock.release()


class PoliteFetcher:
    """Sends GETs to one site through a :class:`PoliteGate`."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        gate: PoliteGate,
        *,
        user_agent: str,
        timeout_s: float,
        max_bytes: int,
    ) -> None:
        self.gate = gate
        self._client = client
        self._headers = {"User-Agent": user_agent, "Accept": "text/html, text/plain;q=0.9, */*;q=0.1"}
        self._timeout = httpx.Timeout(timeout_s)
        self._max_bytes = max_bytes

    async def get(self, url: str) -> Fetched:
        """The answer to ``GET url`` (any status); raises PageFetchFailed, PayloadTooLarge or InvalidLink."""
        async with self.gate:
            try:
                request = self._client.build_request("GET", url, headers=self._headers, timeout=self._timeout)
                response = await self._client.send(request, stream=True, follow_redirects=False)
                try:
                    body = await self._read(url, response)
                finally:
                    await response.aclose()
            except httpx.HTTPError as exc:
                reason = type(exc).__name__
                raise PageFetchFailed(f"fetching {sanitize(url)} failed: {reason}: {sanitize(exc)}") from exc
            except httpx.InvalidURL as exc:  # the URL, or the Location it answers, is no fetchable URL
                raise InvalidLink(
                    f"{sanitize(url)} redirects to a URL that cannot be fetched (javascript:, a malformed"
                    f" address): {sanitize(exc)}"
                ) from exc
        media_type, _, params = response.headers.get("content-type", "").partition(";")
        return Fetched(
            url=url,
            status=response.status_code,
            reason=response.reason_phrase,
            content_type=media_type.strip().lower(),
            charset=_charset(params),
            location=response.headers.get("location"),
            body=body,
            last_modified=response.headers.get("last-modified"),
        )

    async def _read(self, url: str, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise self._too_large(url)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self._max_bytes:
                raise self._too_large(url)
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, url: str) -> PayloadTooLarge:
        limit = self._max_bytes
        return PayloadTooLarge(f"{sanitize(url)} is larger than the crawl's page limit of {limit} bytes")


def _charset(params: str) -> str | None:
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'").lower()
    return None
