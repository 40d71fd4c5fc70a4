"""Retry, timeout and error behaviour of the shared remote layer, over real HTTP."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from ragd.embed.openai_compat import OpenAIEmbedder
from ragd.embed.remote_http import Backoff
from ragd.errors import EmbeddingFailed
from ragd.settings import EmbeddingSettings
from tests.support.scripted_http import Reply, ScriptedServer

from .fakes import expected, openai_body

DIM = 4
PATH = "/v1/embeddings"
KEY = "sk-live-SECRET-0123456789"
FAST = Backoff(base_s=0.01, max_s=0.05)


async def embedder_for(
    base_url: str, *, backoff: Backoff = FAST, retries: int = 3, timeout_s: float = 5.0
) -> OpenAIEmbedder:
    settings = EmbeddingSettings.model_validate(
        {
            "provider": "openai",
            "model": "m",
            "base_url": base_url,
            "api_key": KEY,
            "dimension": DIM,
            "retries": retries,
            "timeout_s": timeout_s,
        }
    )
    return await OpenAIEmbedder.create(settings, backoff=backoff)


def ok(*texts: str) -> Reply:
    return Reply.json(openai_body(texts, DIM))


async def embed(embedder: OpenAIEmbedder, *texts: str) -> list[np.ndarray]:
    try:
        return await embedder.embed_documents(list(texts))
    finally:
        await embedder.aclose()


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_transient_statuses_are_retried(scripted_server: ScriptedServer, status: int) -> None:
    scripted_server.expect("POST", PATH, Reply.error(status), Reply.error(status), ok("a"))
    (vector,) = await embed(await embedder_for(f"{scripted_server.url}/v1"), "a")
    np.testing.assert_allclose(vector, expected("a", DIM), rtol=1e-6)
    assert len(scripted_server.requests) == 3
    assert all(r.json == {"model": "m", "input": ["a"]} for r in scripted_server.requests)
    scripted_server.verify()


async def test_retries_exhausted(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, *[Reply.error(503, "overloaded")] * 3)
    embedder = await embedder_for(f"{scripted_server.url}/v1", retries=2)
    with pytest.raises(EmbeddingFailed, match=r"after 3 attempt\(s\).*HTTP 503.*overloaded") as caught:
        await embed(embedder, "a")
    assert f"{scripted_server.url}/v1/embeddings" in str(caught.value)
    assert len(scripted_server.requests) == 3
    scripted_server.verify()


async def test_retry_after_is_honoured(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, Reply.error(429, headers={"Retry-After": "1"}), ok("a"))
    await embed(await embedder_for(f"{scripted_server.url}/v1"), "a")
    first, second = scripted_server.requests
    assert 0.95 <= second.received_at - first.received_at < 1.6  # not the 10 ms backoff


async def test_retry_after_is_capped(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, Reply.error(503, headers={"Retry-After": "3600"}), ok("a"))
    backoff = Backoff(base_s=0.01, max_retry_after_s=0.2)
    await embed(await embedder_for(f"{scripted_server.url}/v1", backoff=backoff), "a")
    first, second = scripted_server.requests
    assert 0.18 <= second.received_at - first.received_at < 1.0


async def test_retry_after_beyond_the_timeout_fails_at_once(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, Reply.error(429, headers={"Retry-After": "20"}))
    embedder = await embedder_for(f"{scripted_server.url}/v1", timeout_s=3.0)
    started = time.monotonic()
    with pytest.raises(EmbeddingFailed, match=r"would pass the timeout.*429"):
        await embed(embedder, "a")
    assert time.monotonic() - started < 1.0
    assert len(scripted_server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried_and_never_leak_the_key(
    scripted_server: ScriptedServer, status: int
) -> None:
    # Some servers echo the key back in their error message: it must not reach ours.
    scripted_server.expect("POST", PATH, Reply.error(status, f"Incorrect API key provided: {KEY}"))
    embedder = await embedder_for(f"{scripted_server.url}/v1")
    with pytest.raises(EmbeddingFailed) as caught:
        await embed(embedder, "a")
    message = f"{caught.value} {caught.value.hint}"
    assert f"HTTP {status}" in message
    assert f"{scripted_server.url}/v1/embeddings" in message
    assert KEY not in message
    assert "Incorrect API key provided: ***" in message
    assert caught.value.code == "EMBEDDING_FAILED"
    assert len(scripted_server.requests) == 1
    assert scripted_server.requests[0].header("authorization") == f"Bearer {KEY}"


async def test_timeout_fails_within_the_configured_time(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", PATH, lambda _: Reply.json(openai_body(["a"], DIM), delay_s=30))
    embedder = await embedder_for(f"{scripted_server.url}/v1", timeout_s=0.5, retries=3)
    started = time.monotonic()
    with pytest.raises(EmbeddingFailed, match=r"no answer within 0\.5 s"):
        await embed(embedder, "a")
    elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 1.0


async def test_dropped_connection_is_retried(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, Reply.dropped(), ok("a", "b"))
    vectors = await embed(await embedder_for(f"{scripted_server.url}/v1"), "a", "b")
    np.testing.assert_allclose(vectors[1], expected("b", DIM), rtol=1e-6)
    assert len(scripted_server.requests) == 2
    scripted_server.verify()


async def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = await embedder_for(f"http://127.0.0.1:{port}/v1", retries=2)
    with pytest.raises(EmbeddingFailed, match=r"after 3 attempt\(s\).*ConnectError"):
        await embed(embedder, "a")


async def test_credentials_in_the_base_url_stay_out_of_messages(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, Reply.error(400, "bad input"))
    base = scripted_server.url.replace("http://", "http://user:hunter2secret@") + "/v1"
    embedder = await embedder_for(base)
    with pytest.raises(EmbeddingFailed, match="HTTP 400") as caught:
        await embed(embedder, "a")
    assert "hunter2secret" not in str(caught.value)
