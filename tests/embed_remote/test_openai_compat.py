"""OpenAIEmbedder against a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragd.embed.base import DenseEmbedder
from ragd.embed.openai_compat import OpenAIEmbedder
from ragd.embed.remote_http import Backoff
from ragd.errors import ConfigurationError, EmbeddingFailed
from ragd.settings import EmbeddingSettings
from tests.support.scripted_http import Reply, ScriptedServer

from .fakes import expected, openai_body, openai_handler, raw_vector

DIM = 6
PATH = "/v1/embeddings"
FAST = Backoff(base_s=0.01, max_s=0.05)


def settings(server: ScriptedServer, **overrides: object) -> EmbeddingSettings:
    values: dict[str, object] = {
        "provider": "openai",
        "model": "text-embed-small",
        "base_url": f"{server.url}/v1",
        "api_key": "sk-test-key-123456",
        "dimension": DIM,
        "timeout_s": 5.0,
        "retries": 2,
        "batch_size": 16,
    }
    return EmbeddingSettings.model_validate(values | overrides)


async def test_documents_come_back_in_input_order_normalised(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", PATH, openai_handler(DIM))  # lists data[] in reverse
    texts = ["alpha", "beta", "gamma"]
    embedder: DenseEmbedder = await OpenAIEmbedder.create(settings(scripted_server))
    try:
        vectors = await embedder.embed_documents(texts)
    finally:
        await embedder.aclose()

    assert [v.dtype for v in vectors] == [np.float32] * 3
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, expected(text, DIM), rtol=1e-6)
        assert math.isclose(float(np.linalg.norm(vector)), 1.0, rel_tol=1e-6)
    (request,) = scripted_server.requests
    assert request.json == {"model": "text-embed-small", "input": texts}
    assert request.header("authorization") == "Bearer sk-test-key-123456"
    assert request.header("content-type") == "application/json"
    scripted_server.verify()


async def test_spec_and_tokenizer(scripted_server: ScriptedServer) -> None:
    embedder = await OpenAIEmbedder.create(
        settings(scripted_server, query_prefix="query: ", document_prefix="passage: ")
    )
    await embedder.aclose()
    assert embedder.spec.model == "openai:text-embed-small"
    assert embedder.spec.dimension == DIM
    assert (embedder.spec.query_prefix, embedder.spec.document_prefix) == ("query: ", "passage: ")
    assert embedder.tokenizer is None
    assert scripted_server.requests == []  # the dimension was configured: no probe


async def test_batches_of_batch_size(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", PATH, openai_handler(DIM))
    texts = [f"text {i}" for i in range(7)]
    embedder = await OpenAIEmbedder.create(settings(scripted_server, batch_size=3))
    try:
        vectors = await embedder.embed_documents(texts)
    finally:
        await embedder.aclose()

    assert [r.json["input"] for r in scripted_server.requests] == [texts[0:3], texts[3:6], texts[6:7]]
    assert len(scripted_server.requests) == math.ceil(len(texts) / 3)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(vector, expected(text, DIM), rtol=1e-6)


async def test_prefixes_are_sent_to_the_server(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", PATH, openai_handler(DIM))
    embedder = await OpenAIEmbedder.create(
        settings(scripted_server, query_prefix="query: ", document_prefix="passage: ")
    )
    try:
        query = await embedder.embed_query("what is rrf?")
        docs = await embedder.embed_documents(["a", "b"])
    finally:
        await embedder.aclose()

    inputs = [r.json["input"] for r in scripted_server.requests]
    assert inputs == [["query: what is rrf?"], ["passage: a", "passage: b"]]
    np.testing.assert_allclose(query, expected("query: what is rrf?", DIM), rtol=1e-6)
    np.testing.assert_allclose(docs[1], expected("passage: b", DIM), rtol=1e-6)


async def test_no_documents_no_request(scripted_server: ScriptedServer) -> None:
    embedder = await OpenAIEmbedder.create(settings(scripted_server))
    try:
        assert await embedder.embed_documents([]) == []
    finally:
        await embedder.aclose()
    assert scripted_server.requests == []


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
async def test_base_url_with_or_without_trailing_slash(scripted_server: ScriptedServer, suffix: str) -> None:
    scripted_server.on("POST", PATH, openai_handler(DIM))
    embedder = await OpenAIEmbedder.create(settings(scripted_server, base_url=scripted_server.url + suffix))
    try:
        await embedder.embed_query("x")
    finally:
        await embedder.aclose()
    assert [r.path for r in scripted_server.requests] == [PATH]


async def test_dimension_is_probed_once_when_not_configured(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", PATH, openai_handler(9))
    embedder = await OpenAIEmbedder.create(settings(scripted_server, dimension=None))
    try:
        assert embedder.spec.dimension == 9
        assert len(scripted_server.requests) == 1
        assert len(scripted_server.requests[0].json["input"]) == 1
        vector = await embedder.embed_query("hello")
    finally:
        await embedder.aclose()
    assert vector.shape == (9,)


async def test_failed_probe_raises(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, Reply.error(401, "bad key"))
    with pytest.raises(EmbeddingFailed, match="401"):
        await OpenAIEmbedder.create(settings(scripted_server, dimension=None))


async def test_dimension_mismatch_fails(scripted_server: ScriptedServer) -> None:
    scripted_server.on("POST", PATH, openai_handler(DIM + 2))
    embedder = await OpenAIEmbedder.create(settings(scripted_server))
    try:
        with pytest.raises(EmbeddingFailed, match=r"8-dimensional vectors, expected 6"):
            await embedder.embed_documents(["a", "b"])
    finally:
        await embedder.aclose()


async def test_count_mismatch_fails(scripted_server: ScriptedServer) -> None:
    short = openai_body(["a", "b"], DIM, shuffle=False)  # two vectors for three texts
    scripted_server.expect("POST", PATH, Reply.json(short))
    embedder = await OpenAIEmbedder.create(settings(scripted_server))
    try:
        with pytest.raises(EmbeddingFailed, match=r"2 vector\(s\) for 3 text\(s\)"):
            await embedder.embed_documents(["a", "b", "c"])
    finally:
        await embedder.aclose()


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"data": [{"index": 0, "embedding": [1.0] * DIM}, {"index": 0, "embedding": [1.0] * DIM}]}, "index"),
        ({"data": [{"index": 1, "embedding": [1.0] * DIM}, {"index": 2, "embedding": [1.0] * DIM}]}, "0..1"),
        (
            {"data": [{"index": 0, "embedding": [1.0] * DIM}, {"index": 1, "embedding": [1.0, 2.0]}]},
            "malformed",
        ),
        ({"data": [{"index": 0, "embedding": [0.0] * DIM}, {"index": 1, "embedding": [1.0] * DIM}]}, "zero"),
        ({"object": "list"}, "no 'data' list"),
    ],
    ids=["repeated-index", "index-gap", "ragged", "zero-vector", "no-data"],
)
async def test_malformed_responses_fail(
    scripted_server: ScriptedServer, payload: object, reason: str
) -> None:
    scripted_server.expect("POST", PATH, Reply.json(payload))
    embedder = await OpenAIEmbedder.create(settings(scripted_server))
    try:
        with pytest.raises(EmbeddingFailed, match=reason):
            await embedder.embed_documents(["a", "b"])
    finally:
        await embedder.aclose()


async def test_non_json_success_fails(scripted_server: ScriptedServer) -> None:
    scripted_server.expect("POST", PATH, Reply.text("<html>proxy login</html>"))
    embedder = await OpenAIEmbedder.create(settings(scripted_server))
    try:
        with pytest.raises(EmbeddingFailed, match="not JSON"):
            await embedder.embed_query("a")
    finally:
        await embedder.aclose()


async def test_model_must_be_named() -> None:
    with pytest.raises(ConfigurationError, match=r"embedding\.model"):
        await OpenAIEmbedder.create(
            EmbeddingSettings.model_validate({"provider": "openai", "base_url": "http://127.0.0.1:9/v1"})
        )


async def test_invalid_base_url_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"base_url"):
        await OpenAIEmbedder.create(
            EmbeddingSettings.model_validate(
                {"provider": "openai", "model": "m", "base_url": "localhost:8080"}
            )
        )


async def test_vectors_survive_a_real_exchange_exactly(scripted_server: ScriptedServer) -> None:
    # The JSON round trip must not lose precision beyond float32.
    scripted_server.on("POST", PATH, openai_handler(DIM))
    embedder = await OpenAIEmbedder.create(settings(scripted_server))
    try:
        (vector,) = await embedder.embed_documents(["precise"])
    finally:
        await embedder.aclose()
    raw = np.asarray(raw_vector("precise", DIM))
    np.testing.assert_allclose(vector * np.linalg.norm(raw), raw, rtol=1e-6)
