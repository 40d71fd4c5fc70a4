"""Shared plumbing for remote dense embedders: one HTTP client, retries, batching, vector checks.

:class:`RemoteJsonClient` POSTs JSON over one ``httpx.AsyncClient`` and retries
what a retry can fix (connect errors, dropped connections, timeouts, HTTP
408/429/5xx) with exponential backoff and jitter, honouring ``Retry-After``
up to a cap; any other 4xx fails at once.  ``timeout_s`` bounds one call
*including* its retries, so a caller never waits longer than configured.
Every failure is an :class:`~ragd.errors.EmbeddingFailed` naming the endpoint
and the status; the API key never appears in a message.

:class:`RemoteEmbedder` implements :class:`~ragd.embed.base.DenseEmbedder`
over any :class:`EmbeddingWire` (the request/response shape of one API);
``openai_compat`` and ``tei`` supply the wires.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol, Self, TypeVar

import httpx
import numpy as np

from ragd.chunk.base import TokenCounter
from ragd.embed.base import DenseSpec
from ragd.errors import ConfigurationError, EmbeddingFailed
from ragd.settings import EmbeddingSettings
from ragd.types import DenseVector

logger = logging.getLogger(__name__)

T = TypeVar("T")

_RETRY_STATUSES = frozenset({408, 429})
_RETRY_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
_HINTS = {
    400: "the server rejected the request; check embedding.model and the input size",
    401: "check embedding.api_key",
    403: "check embedding.api_key and its permissions",
    404: "check embedding.base_url (OpenAI-compatible servers usually end in /v1) and embedding.model",
    413: "lower embedding.batch_size",
}


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
    """Consecutive slices of at most ``size`` items."""
    if size < 1:
        raise ValueError(f"batch size must be positive, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Retryable(Exception):
    """An attempt failed in a way a later attempt may not."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class RemoteJsonClient:
    """POST JSON to one service with retries.  One per embedder; close with :meth:`aclose`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout_s: float,
        retries: int,
        backoff: Backoff | None = None,
        connect_timeout_s: float = 5.0,
    ) -> None:
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL as exc:
            raise ConfigurationError(f"invalid embedding.base_url: {exc}") from exc
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigurationError(f"embedding.base_url must be an http(s) URL, got {display_url(url)!r}")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, connect_timeout_s))
        self._http = httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout)
        self._secret = api_key or ""
        self._timeout_s = timeout_s
        self._retries = retries
        self._backoff = backoff or Backoff()

    def endpoint(self, path: str) -> str:
        """The URL ``path`` resolves to, without credentials or query (safe for messages and logs)."""
        return display_url(self._http.base_url.join(path))

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
            raise EmbeddingFailed(
                f"embedding request to {url} got no answer within {self._timeout_s:g} s "
                f"(attempt {len(attempts) + 1}{last})",
                hint="check that the server is up, or raise embedding.timeout_s",
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
                    "embedding request to %s failed (%s); retry %d/%d in %.2f s",
                    url, failure.reason, len(attempts), self._retries, wait,
                )  # fmt: skip
                await asyncio.sleep(wait)

    async def _attempt(self, path: str, body: Mapping[str, object], url: str) -> object:
        try:
            response = await self._http.post(path, json=body)
        except _RETRY_ERRORS as exc:
            raise _Retryable(self._redact(f"{type(exc).__name__}: {exc}".rstrip(": "))) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingFailed(self._redact(f"embedding request to {url} failed: {exc}")) from exc
        status = response.status_code
        if response.is_success:
            try:
                return response.json()
            except ValueError as exc:
                raise EmbeddingFailed(f"{url} answered HTTP {status} with a body that is not JSON") from exc
        reason = self._redact(
            f"HTTP {status} {response.reason_phrase}: {_snippet(response.text)}".rstrip(": ")
        )
        if status in _RETRY_STATUSES or (status >= 500 and status != 501):
            raise _Retryable(reason, parse_retry_after(response.headers.get("Retry-After")))
        raise EmbeddingFailed(f"embedding request to {url} failed: {reason}", hint=_HINTS.get(status))

    def _gave_up(self, url: str, attempts: list[str], why: str) -> EmbeddingFailed:
        return EmbeddingFailed(
            f"embedding request to {url} failed after {len(attempts)} attempt(s) ({why}); "
            f"last: {attempts[-1]}",
            hint="check the embedding server's health and logs",
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if len(self._secret) >= 4 else text


def display_url(url: httpx.URL | str) -> str:
    """``url`` without user info or query string."""
    return str(httpx.URL(url).copy_with(username=None, password=None, query=None, fragment=None))


def _snippet(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def unit_vectors(
    rows: Sequence[object], *, count: int, dimension: int | None, source: str
) -> list[DenseVector]:
    """Check ``rows`` (one vector per text) and L2-normalise them to float32."""
    if len(rows) != count:
        raise EmbeddingFailed(f"{source} returned {len(rows)} vector(s) for {count} text(s)")
    try:
        matrix = np.array(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        sizes = sorted({len(r) for r in rows if isinstance(r, list)})
        raise EmbeddingFailed(f"{source} returned malformed vectors (lengths {sizes})") from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise EmbeddingFailed(f"{source} returned malformed vectors (shape {matrix.shape})")
    if dimension is not None and matrix.shape[1] != dimension:
        raise EmbeddingFailed(
            f"{source} returned {matrix.shape[1]}-dimensional vectors, expected {dimension}",
            hint="set embedding.dimension to the model's size (or leave it unset to probe it)",
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise EmbeddingFailed(f"{source} returned a zero or non-finite vector")
    return list(matrix / norms)


class EmbeddingWire(Protocol):
    """The request and response shape of one embeddings API (pure: no I/O)."""

    @property
    def path(self) -> str:
        """Relative to the base URL, without a leading slash."""
        ...

    def request(self, texts: Sequence[str]) -> dict[str, object]: ...

    def vectors(self, payload: object) -> list[object]:
        """One raw vector per input text, in input order; ValueError (with a reason) if malformed."""
        ...


class RemoteEmbedder:
    """A :class:`~ragd.embed.base.DenseEmbedder` over HTTP.  Build with a subclass's ``create``."""

    def __init__(
        self, client: RemoteJsonClient, wire: EmbeddingWire, spec: DenseSpec, batch_size: int
    ) -> None:
        self.spec = spec
        self._client = client
        self._wire = wire
        self._batch_size = batch_size

    @property
    def tokenizer(self) -> TokenCounter | None:
        return None  # the model's tokenizer lives on the server

    async def embed_query(self, text: str) -> DenseVector:
        texts = [self.spec.query_prefix + text]
        (vector,) = await fetch_vectors(self._client, self._wire, texts, self.spec.dimension)
        return vector

    async def embed_documents(self, texts: Sequence[str]) -> list[DenseVector]:
        prefixed = [self.spec.document_prefix + t for t in texts]
        vectors: list[DenseVector] = []
        for batch in batched(prefixed, self._batch_size):
            vectors.extend(await fetch_vectors(self._client, self._wire, batch, self.spec.dimension))
        return vectors

    async def aclose(self) -> None:
        await self._client.aclose()

    @classmethod
    async def _connect(
        cls,
        settings: EmbeddingSettings,
        wire: EmbeddingWire,
        *,
        name: str,
        base_url: str,
        backoff: Backoff | None,
    ) -> Self:
        """Open a client, learn the dimension (``settings.dimension`` or one probe request), build."""
        client = RemoteJsonClient(
            base_url,
            api_key=settings.api_key,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
            backoff=backoff,
        )
        try:
            dimension = settings.dimension or await probe_dimension(client, wire)
        except BaseException:
            await client.aclose()
            raise
        spec = DenseSpec(
            model=name,
            dimension=dimension,
            max_tokens=settings.max_tokens,
            query_prefix=settings.query_prefix,
            document_prefix=settings.document_prefix,
        )
        return cls(client, wire, spec, settings.batch_size)


async def fetch_vectors(
    client: RemoteJsonClient, wire: EmbeddingWire, texts: Sequence[str], dimension: int | None
) -> list[DenseVector]:
    """One request for ``texts``; checked, L2-normalised vectors in input order."""
    payload = await client.post_json(wire.path, wire.request(texts))
    source = client.endpoint(wire.path)
    try:
        rows = wire.vectors(payload)
    except ValueError as exc:
        raise EmbeddingFailed(f"{source} returned an unexpected response: {exc}") from exc
    return unit_vectors(rows, count=len(texts), dimension=dimension, source=source)


async def probe_dimension(client: RemoteJsonClient, wire: EmbeddingWire) -> int:
    """The server's vector size, from embedding one short text."""
    (vector,) = await fetch_vectors(client, wire, ["dimension probe"], None)
    logger.info(
        "embedding server at %s returns %d-dimensional vectors", client.endpoint(wire.path), len(vector)
    )
    return len(vector)
