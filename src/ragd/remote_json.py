"""POST JSON to an upstream service over one HTTP client, with retries, backoff and a deadline.

Shared by every adapter that speaks JSON over HTTP to a model server (remote embedders,
remote rerankers), so retries and error wording behave the same everywhere.

:class:`RemoteJsonClient` POSTs JSON over one ``httpx.AsyncClient`` and retries
what a retry can fix (connect errors, dropped connections, timeouts, HTTP
408/429/5xx except 501) with exponential backoff and jitter, honouring
``Retry-After`` up to a cap; any other 4xx fails at once.  ``timeout_s`` bounds
one call *including* its retries, so a caller never waits longer than configured.

Every failure is raised as the caller's error class (``EmbeddingFailed``,
``RerankFailed``…, chosen with an :class:`ErrorTerms`), naming the endpoint and
the status; the API key and any credentials in the URL never appear in a message.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx

from ragd.errors import ConfigurationError, RagError

logger = logging.getLogger(__name__)

T = TypeVar("T")

_RETRY_STATUSES = frozenset({408, 429})
_RETRY_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass(frozen=True, slots=True)
class ErrorTerms:
    """How one kind of upstream's failures are typed and worded."""

    #: the settings group, also the noun in messages: ``embedding`` -> "embedding request to …"
    group: str
    #: raised for every failure except a bad base URL (that is a ConfigurationError)
    error: type[RagError]
    #: a hint per HTTP status of a non-retryable client error
    hints: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Pause between attempts: ``base * 2**(n-1)`` with jitter, or the server's ``Retry-After``, capped."""

    base_s: float = 0.25
    max_s: float = 8.0
    max_retry_after_s: float = 30.0

    def delay(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_retry_after_s)
        ceiling = min(self.max_s, self.base_s * 2.0 ** (attempt - 1))
        return ceiling * random.uniform(0.5, 1.0)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most ``size`` items (one request each)."""
    if size < 1:
        raise ValueError(f"batch size must be positive, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def display_url(url: httpx.URL | str) -> str:
    """``url`` without user info or query string."""
    return str(httpx.URL(url).copy_with(username=None, password=None, query=None, fragment=None))


class _Retryable(Exception):
    """An attempt failed in a way a later attempt may not."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class RemoteJsonClient:
    """POST JSON to one service with retries.  One per adapter; close with :meth:`aclose`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout_s: float,
        retries: int,
        terms: ErrorTerms,
        backoff: Backoff | None = None,
        connect_timeout_s: float = 5.0,
    ) -> None:
        group = terms.group
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL as exc:
            raise ConfigurationError(f"invalid {group}.base_url: {exc}") from exc
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigurationError(f"{group}.base_url must be an http(s) URL, got {display_url(url)!r}")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, connect_timeout_s))
        self._http = httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout)
        self._terms = terms
        self._secret = api_key or ""
        self._timeout_s = timeout_s
        self._retries = retries
        self._backoff = backoff or Backoff()

    @property
    def base_url(self) -> httpx.URL:
        """The base URL as configured (may hold credentials: format it with :func:`display_url`)."""
        return self._http.base_url

    def endpoint(self, path: str) -> str:
        """The URL ``path`` resolves to, without credentials or query (safe for messages and logs)."""
        return display_url(self._http.base_url.join(path))

    async def get_json(self, path: str) -> object | None:
        """One GET of a JSON document (a server's metadata); None when it is missing or unreadable."""
        try:
            response = await self._http.get(path)
            response.raise_for_status()
            document: object = response.json()
        except (httpx.HTTPError, ValueError):
            return None
        return document

    async def post_json(self, path: str, body: Mapping[str, object]) -> object:
        """POST ``body`` to ``path`` (relative to the base URL) and return the parsed JSON answer."""
        url = self.endpoint(path)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        attempts: list[str] = []  # the failure reason of each attempt so far
        try:
            async with asyncio.timeout_at(deadline):
                return await self._post_with_retries(path, body, url, deadline, attempts)
        except TimeoutError as exc:
            last = f"; earlier: {attempts[-1]}" if attempts else ""
            group = self._terms.group
            raise self._terms.error(
                f"{group} request to {url} got no answer within {self._timeout_s:g} s "
                f"(attempt {len(attempts) + 1}{last})",
                hint=f"check that the server is up, or raise {group}.timeout_s",
            ) from exc

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post_with_retries(
        self, path: str, body: Mapping[str, object], url: str, deadline: float, attempts: list[str]
    ) -> object:
        loop = asyncio.get_running_loop()
        while True:
            try:
                return await self._attempt(path, body, url)
            except _Retryable as failure:
                attempts.append(failure.reason)
                if len(attempts) > self._retries:
                    raise self._gave_up(url, attempts, "retries exhausted") from failure
                wait = self._backoff.delay(len(attempts), failure.retry_after_s)
                if loop.time() + wait >= deadline:
                    raise self._gave_up(
                        url, attempts, f"a retry in {wait:g} s would pass the timeout"
                    ) from failure
                logger.warning(
                    "%s request to %s failed (%s); retry %d/%d in %.2f s",
                    self._terms.group, url, failure.reason, len(attempts), self._retries, wait,
                )  # fmt: skip
                await asyncio.sleep(wait)

    async def _attempt(self, path: str, body: Mapping[str, object], url: str) -> object:
        error, group = self._terms.error, self._terms.group
        try:
            response = await self._http.post(path, json=body)
        except _RETRY_ERRORS as exc:
            raise _Retryable(self._redact(f"{type(exc).__name__}: {exc}".rstrip(": "))) from exc
        except httpx.HTTPError as exc:
            raise error(self._redact(f"{group} request to {url} failed: {exc}")) from exc
        status = response.status_code
        if response.is_success:
            try:
                return response.json()
            except ValueError as exc:
                raise error(f"{url} answered HTTP {status} with a body that is not JSON") from exc
        reason = self._redact(
            f"HTTP {status} {response.reason_phrase}: {_snippet(response.text)}".rstrip(": ")
        )
        if status in _RETRY_STATUSES or (status >= 500 and status != 501):
            raise _Retryable(reason, parse_retry_after(response.headers.get("Retry-After")))
        raise error(f"{group} request to {url} failed: {reason}", hint=self._terms.hints.get(status))

    def _gave_up(self, url: str, attempts: list[str], why: str) -> RagError:
        group = self._terms.group
        return self._terms.error(
            f"{group} request to {url} failed after {len(attempts)} attempt(s) ({why}); last: {attempts[-1]}",
            hint=f"check the {group} server's health and logs",
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if len(self._secret) >= 4 else text


def _snippet(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
