"""Byte-exact passthrough to an OpenAI-compatible endpoint over httpx (the chat proxy's other models,
and every other path in ``ragd proxy``: :meth:`HttpUpstream.relay`).

The request body goes out unchanged; the response status, content type and body come back as
they arrive (an SSE stream is relayed chunk by chunk, not buffered).  Connection attempts are
retried (``retries``; nothing was sent yet, so it is safe), every phase is bounded by ``timeout_s``,
and the upstream is asked not to compress so the relayed bytes are the bytes it wrote.  A transport
failure is an :class:`~ragd.errors.UpstreamFailed` naming the endpoint's host, never the key.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from ragd.errors import ConfigurationError, UpstreamFailed
from ragd.llm.base import Forwarded
from ragd.settings import LlmSettings

log = logging.getLogger(__name__)

#: response headers worth relaying; framing and connection headers are the server's own business
RELAYED_HEADERS = ("content-type", "cache-control", "x-request-id", "openai-processing-ms")
CONNECT_TIMEOUT_S = 10.0
#: never relayed by :meth:`HttpUpstream.relay`, either way: hop-by-hop, framing, the server's own
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "content-encoding",
        "host",
        "date",
        "server",
    }
)
#: request headers that belong to the caller's hop to ragd: its key and cookies are ragd's business
CALLER_HEADERS = frozenset({"authorization", "cookie", "accept-encoding"})
API_PREFIX = "/v1"


class HttpUpstream:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client
        self._host = client.base_url.host or "upstream"

    @classmethod
    def from_settings(cls, settings: LlmSettings, *, timeout_s: float, retries: int) -> HttpUpstream:
        if not settings.base_url:
            raise ConfigurationError("the chat proxy needs an upstream", hint="set RAGD_LLM__BASE_URL")
        headers = {"Accept-Encoding": "identity"}
        if settings.api_key is not None:
            headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        client = httpx.AsyncClient(
            base_url=settings.base_url.rstrip("/") + "/",
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S)),
            transport=httpx.AsyncHTTPTransport(retries=retries),
        )
        return cls(client)

    async def forward(self, body: bytes, headers: Mapping[str, str]) -> Forwarded:
        request = self._client.build_request("POST", "chat/completions", content=body, headers=dict(headers))
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._failed(exc) from exc
        relayed = {k: v for k, v in response.headers.items() if k.lower() in RELAYED_HEADERS}
        return Forwarded(response.status_code, relayed, self._body(response), response.aclose)

    async def _body(self, response: httpx.Response) -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_bytes():
                yield chunk
        except httpx.HTTPError as exc:
            raise self._failed(exc) from exc
        finally:
            await asyncio.shield(response.aclose())

    async def models(self) -> list[dict[str, Any]]:
        try:
            response = await self._client.get("models")
        except httpx.HTTPError as exc:
            raise self._failed(exc) from exc
        if response.status_code != 200:
            raise UpstreamFailed(f"upstream {self._host} answered HTTP {response.status_code} to GET /models")
        try:
            data = response.json().get("data")
        except (ValueError, AttributeError) as exc:
            raise UpstreamFailed(f"upstream {self._host} sent a model list that is not JSON") from exc
        if not isinstance(data, list):
            raise UpstreamFailed(f"upstream {self._host} sent a model list without 'data'")
        return [entry for entry in data if isinstance(entry, dict) and isinstance(entry.get("id"), str)]

    async def relay(self, method: str, target: str, body: bytes, headers: Mapping[str, str]) -> Forwarded:
        """Any request byte for byte (see :class:`ragd.llm.base.Upstream`); the response streams back
        with every header but the hop-by-hop and framing ones."""
        sent = {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS | CALLER_HEADERS}
        url = self._target(target)
        request = self._client.build_request(method, url, content=body, headers=sent)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._failed(exc) from exc
        relayed = {k: v for k, v in response.headers.multi_items() if k.lower() not in HOP_HEADERS}
        return Forwarded(response.status_code, relayed, self._body(response), response.aclose)

    def _target(self, target: str) -> httpx.URL:
        """``/v1/x?q`` -> ``<base>/x?q``; any other path on the base URL's origin."""
        base = self._client.base_url  # ends with "/"
        path, mark, query = target.partition("?")
        if path == API_PREFIX or path.startswith(API_PREFIX + "/"):
            path = base.raw_path.decode("ascii").partition("?")[0] + path[len(API_PREFIX) + 1 :]
        elif not path.startswith("/"):
            path = "/" + path
        return base.copy_with(raw_path=f"{path}{mark}{query}".encode("latin-1"))

    async def aclose(self) -> None:
        await self._client.aclose()

    def _failed(self, exc: httpx.HTTPError) -> UpstreamFailed:
        kind = "timed out" if isinstance(exc, httpx.TimeoutException) else f"failed ({type(exc).__name__})"
        log.warning("upstream %s %s", self._host, kind)
        return UpstreamFailed(
            f"upstream {self._host} {kind}", hint="check RAGD_LLM__BASE_URL and that it runs"
        )
