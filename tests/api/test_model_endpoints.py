"""The model endpoints: ragd's own models served to other components, over a live server.

``POST /v1/embeddings`` (OpenAI's format: the ``openai`` SDK and Open WebUI's "OpenAI" embedding
engine, replayed byte for byte), ``POST /embed`` (TEI's format: ragd's own TEI client reads it),
``POST /v1/rerank`` (Cohere's format: Open WebUI's external reranker, replayed) and
``GET /v1/models/{id}``.  The default model is the real packaged MiniLM; a second one
(``RAGD_EMBEDDERS["words"]``, with query and document prefixes) and the reranker are played by a
scripted server on loopback that speaks the real wire formats, so the tests see which text reached
the upstream.  A second, bare server (no reranker) checks that the vectors are the ones the index
stores, and the 404 without a reranker.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import numpy as np
import openai
import pytest
import requests
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.generation.case import Case
from schemathesis.openapi import from_url

from ragd.api.app import create_app
from ragd.bootstrap import open_services
from ragd.embed.base import DenseEmbedder
from ragd.embed.tei import TeiEmbedder
from ragd.model_inputs import MAX_INPUT_CHARS, MAX_INPUTS, MAX_TOTAL_CHARS
from ragd.settings import ChunkSettings, EmbeddingSettings, RerankSettings, Settings
from ragd.types import PointFilter
from tests.api.conftest import AUTH, KEY, THREE, ingest_over_http, service_settings
from tests.support.live_server import LiveServer
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

DIM = 64
MINILM_DIM = 384
TEXTS = ["The alpha protocol requires three approvals.", "Beta deployments run every Tuesday."]
DOCS = ["Gamma releases are frozen.", "The alpha protocol needs three approvals.", "Alpha team lunch."]
QUERY = "alpha protocol approvals"


def words_vector(text: str) -> list[float]:
    """The scripted model: ``text``'s hashed bag of words, L2-normalised."""
    vector = np.zeros(DIM)
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % DIM] += 1.0
    return (vector / np.linalg.norm(vector)).tolist()  # type: ignore[no-any-return]


def embeddings_reply(request: RecordedRequest) -> Reply:
    data = [
        {"object": "embedding", "index": i, "embedding": words_vector(t)}
        for i, t in enumerate(request.json["input"])
    ]
    return Reply.json({"object": "list", "model": "words-64", "data": data, "usage": {"total_tokens": 1}})


def rerank_reply(request: RecordedRequest) -> Reply:
    """Cohere's shape: the share of the query's words in each document, best first."""
    words = set(re.findall(r"\w+", request.json["query"].lower()))
    results = [
        {"index": i, "relevance_score": len(words & set(re.findall(r"\w+", d.lower()))) / len(words)}
        for i, d in enumerate(request.json["documents"])
    ]
    return Reply.json({"results": sorted(results, key=lambda r: -r["relevance_score"])})


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.on("POST", "/v1/embeddings", embeddings_reply)
        server.on("POST", "/v1/rerank", rerank_reply)
        yield server


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    words = EmbeddingSettings(  # type: ignore[call-arg]
        provider="openai", base_url=f"{upstream.url}/v1", model="words-64", dimension=DIM, retries=0,
        query_prefix="q: ", document_prefix="d: ",
    )  # fmt: skip
    rerank = RerankSettings(provider="remote", base_url=upstream.url, model="rr-base", retries=0)  # type: ignore[call-arg]
    settings_ = service_settings(tmp_path_factory.mktemp("models"), model_cache).model_copy(
        update={"embedders": {"words": words}, "rerank": rerank}
    )
    with LiveServer(create_app(settings_)) as server:
        server.wait_ready()
        yield server


def post(live: LiveServer, path: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    """``body`` as JSON, or bytes sent as they are (JSON no Python encoder writes)."""
    sent = AUTH if headers is None else headers
    if isinstance(body, bytes):
        sent = {**sent, "Content-Type": "application/json"}
        return httpx.post(f"{live.url}{path}", content=body, headers=sent, timeout=60)
    return httpx.post(f"{live.url}{path}", json=body, headers=sent, timeout=60)


def sdk(live: LiveServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.url}/v1", api_key=KEY, max_retries=0, timeout=60)


def words_sent(upstream: ScriptedServer) -> list[str]:
    return [t for r in upstream.requests_to("POST", "/v1/embeddings") for t in r.json["input"]]


# -- POST /v1/embeddings ------------------------------------------------------------------------


def test_the_openai_sdk_embeds_in_both_encodings(live: LiveServer, dense: DenseEmbedder) -> None:
    with sdk(live) as client:
        default = client.embeddings.create(model="default", input=TEXTS)  # the SDK asks for base64
        floats = client.embeddings.create(model="default", input=TEXTS, encoding_format="float")
        packed = client.embeddings.create(model="default", input=TEXTS, encoding_format="base64")
    expected = asyncio.run(dense.embed_documents(TEXTS))
    for item, want in zip(floats.data, expected, strict=True):
        assert len(item.embedding) == MINILM_DIM
        assert np.allclose(item.embedding, want, atol=1e-6)
    for a, b, c in zip(default.data, floats.data, packed.data, strict=True):
        assert a.embedding == b.embedding  # base64 decoded by the SDK: the same float32 values
        assert isinstance(c.embedding, str)  # asked for explicitly: the SDK hands the string over
        assert np.frombuffer(base64.b64decode(c.embedding), dtype="<f4").tolist() == b.embedding
    assert [d.index for d in floats.data] == [0, 1]
    assert floats.model == "default"
    tokens = sum(dense.tokenizer.count(t) for t in TEXTS)  # type: ignore[union-attr]
    assert floats.usage.prompt_tokens == floats.usage.total_tokens == tokens


def test_the_response_is_openai_s_shape(live: LiveServer) -> None:
    response = post(live, "/v1/embeddings", {"input": "one text", "model": "ragd"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"object", "data", "model", "usage"}
    assert body["object"] == "list"
    assert body["model"] == "ragd"
    assert [(d["object"], d["index"]) for d in body["data"]] == [("embedding", 0)]
    assert len(body["data"][0]["embedding"]) == MINILM_DIM
    assert set(body["usage"]) == {"prompt_tokens", "total_tokens"}


@pytest.mark.parametrize(
    ("model", "dim"),
    [
        (None, MINILM_DIM),
        ("default", MINILM_DIM),
        ("ragd", MINILM_DIM),
        ("packaged:all-MiniLM-L6-v2", MINILM_DIM),  # the index's model as ragd reports it
        ("all-MiniLM-L6-v2", MINILM_DIM),
        ("sentence-transformers/all-MiniLM-L6-v2", MINILM_DIM),  # Open WebUI's default model name
        ("words", DIM),  # a RAGD_EMBEDDERS name
        ("openai:words-64", DIM),
        ("words-64", DIM),
    ],
)
def test_every_name_of_a_model_is_accepted(live: LiveServer, model: str | None, dim: int) -> None:
    body: dict[str, Any] = {"input": ["alpha"]} | ({} if model is None else {"model": model})
    response = post(live, "/v1/embeddings", body)
    assert response.status_code == 200, response.text
    assert len(response.json()["data"][0]["embedding"]) == dim


def test_an_unknown_model_is_a_404_naming_the_served_ones(live: LiveServer) -> None:
    response = post(live, "/v1/embeddings", {"input": ["alpha"], "model": "text-embedding-3-small"})
    assert response.status_code == 404, response.text
    error = response.json()["error"]
    assert error["code"] == "NOT_FOUND"
    assert error["type"] == "invalid_request_error"
    assert "default (packaged:all-MiniLM-L6-v2)" in error["message"]
    assert "words (openai:words-64)" in error["message"]
    with sdk(live) as client, pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="nope", input="alpha")


def test_the_input_type_picks_the_query_or_the_document_prefix(
    live: LiveServer, upstream: ScriptedServer
) -> None:
    cases = [
        (None, "d: "),
        ("document", "d: "),
        ("query", "q: "),
        ("search_query", "q: "),
        ("passage", "d: "),
    ]
    for input_type, prefix in cases:
        body: dict[str, Any] = {"input": ["alpha beta", "gamma"], "model": "words"}
        if input_type is not None:
            body["input_type"] = input_type
        before = len(words_sent(upstream))
        response = post(live, "/v1/embeddings", body)
        assert response.status_code == 200, response.text
        assert sorted(words_sent(upstream)[before:]) == [f"{prefix}alpha beta", f"{prefix}gamma"]
        got = [d["embedding"] for d in response.json()["data"]]
        assert np.allclose(
            got, [words_vector(f"{prefix}alpha beta"), words_vector(f"{prefix}gamma")], atol=1e-6
        )
    before = len(words_sent(upstream))
    with sdk(live) as client:  # the documented SDK call: the extension field rides in extra_body
        client.embeddings.create(model="words", input="alpha", extra_body={"input_type": "query"})
    assert words_sent(upstream)[before:] == ["q: alpha"]
    bad = post(live, "/v1/embeddings", {"input": "alpha", "model": "words", "input_type": "banana"})
    assert bad.status_code == 400, bad.text
    assert bad.json()["error"]["code"] == "INVALID_REQUEST"
    assert "document, passage, query, search_document, search_query" in bad.json()["error"]["message"]


def test_minilm_has_no_prefixes_so_queries_and_documents_agree(live: LiveServer) -> None:
    """The packaged MiniLM has empty prefixes: both input types give the same vectors."""
    query = post(live, "/v1/embeddings", {"input": TEXTS, "input_type": "query", "encoding_format": "base64"})
    document = post(live, "/v1/embeddings", {"input": TEXTS, "encoding_format": "base64"})
    assert query.status_code == document.status_code == 200
    q = [np.frombuffer(base64.b64decode(d["embedding"]), "<f4") for d in query.json()["data"]]
    d = [np.frombuffer(base64.b64decode(d["embedding"]), "<f4") for d in document.json()["data"]]
    assert all(float(a @ b) > 0.9999 for a, b in zip(q, d, strict=True))


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"input": []}, 400, "empty"),
        ({"input": ""}, 400, "empty string"),
        ({"input": ["a", ""]}, 400, "input 1 is an empty string"),
        ({"input": [1, 2, 3]}, 400, "token arrays"),
        ({"input": [[1, 2], [3]]}, 400, "token arrays"),
        ({"input": ["a"] * (MAX_INPUTS + 1)}, 413, f"at most {MAX_INPUTS:,}"),
        ({"input": ["a" * (MAX_INPUT_CHARS + 1)]}, 413, f"at most {MAX_INPUT_CHARS:,}"),
        ({"input": ["a" * MAX_INPUT_CHARS] * 11}, 413, f"at most {MAX_TOTAL_CHARS:,} in one request"),
        ({"input": "a", "dimensions": 12}, 400, "384-dimensional"),
        ({"input": "a", "encoding_format": "int8"}, 422, "encoding_format"),
        ({"model": "default"}, 422, "input"),
        ({"input": {"text": "a"}}, 422, "input"),
    ],
)
def test_bad_requests_are_4xx_with_a_code(live: LiveServer, body: Any, status: int, words: str) -> None:
    response = post(live, "/v1/embeddings", body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == ("INPUT_TOO_LARGE" if status == 413 else "INVALID_REQUEST")
    assert error["type"] == "invalid_request_error"
    assert words in error["message"]


def test_an_input_past_the_window_is_embedded_as_its_window(live: LiveServer) -> None:
    """A 100,000-character input is cut to the model's window (256 tokens), not refused."""
    sentence = "The alpha protocol requires three approvals before deployment. "
    long = (sentence * (MAX_INPUT_CHARS // len(sentence) + 1))[:MAX_INPUT_CHARS]
    window = (sentence * 60)[:3000]  # already past 256 tokens
    response = post(live, "/v1/embeddings", {"input": [long, window]})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["usage"]["prompt_tokens"] == 2 * 256
    first, second = (np.array(item["embedding"]) for item in body["data"])
    assert float(first @ second) > 0.9999


def test_the_model_s_own_dimension_may_be_asked_for(live: LiveServer) -> None:
    response = post(live, "/v1/embeddings", {"input": "a", "model": "words", "dimensions": DIM})
    assert response.status_code == 200, response.text


def test_a_key_is_required_and_a_tenant_key_may_embed(live: LiveServer) -> None:
    refused = post(live, "/v1/embeddings", {"input": "a"}, headers={})
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "UNAUTHORIZED"
    tenant = httpx.post(f"{live.url}/api/v1/tenants", json={"name": "embedder"}, headers=AUTH).json()
    made = httpx.post(f"{live.url}/api/v1/tenants/{tenant['id']}/keys", json={"role": "reader"}, headers=AUTH)
    assert made.status_code == 201, made.text
    tenant_auth = {"Authorization": f"Bearer {made.json()['secret']}"}
    assert post(live, "/v1/embeddings", {"input": "a"}, headers=tenant_auth).status_code == 200
    assert post(live, "/embed", {"inputs": "a"}, headers=tenant_auth).status_code == 200
    reranked = post(live, "/v1/rerank", {"query": "a", "documents": ["a"]}, headers=tenant_auth)
    assert reranked.status_code == 200


def test_open_webui_s_openai_embedding_engine_works(live: LiveServer, upstream: ScriptedServer) -> None:
    """Open WebUI 0.12.4 ``agenerate_openai_batch_embeddings`` (open_webui/retrieval/utils.py): aiohttp
    posts ``{"input": [...], "model": m}`` to ``{url}/embeddings`` with ``get_json_bearer_headers``
    (and the user-info headers when ENABLE_FORWARD_USER_INFO_HEADERS), then reads ``data[].embedding``;
    with RAG_EMBEDDING_PREFIX_FIELD_NAME=input_type it adds ``input_type`` = the configured prefix."""

    async def owui(texts: list[str], model: str, prefix: str | None = None) -> list[list[float]]:
        form_data: dict[str, Any] = {"input": texts, "model": model}
        if prefix is not None:
            form_data["input_type"] = prefix
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}
        headers |= {
            "X-OpenWebUI-User-Name": "Jane",
            "X-OpenWebUI-User-Id": "u-1",
            "X-OpenWebUI-User-Email": "jane@example.org",
            "X-OpenWebUI-User-Role": "user",
        }
        timeout = aiohttp.ClientTimeout(total=60)
        async with (
            aiohttp.ClientSession(trust_env=True, timeout=timeout) as session,
            session.post(f"{live.url}/v1/embeddings", headers=headers, json=form_data) as r,
        ):
            r.raise_for_status()
            data = await r.json()
            return [item["embedding"] for item in data["data"]]

    vectors = asyncio.run(owui(TEXTS, "sentence-transformers/all-MiniLM-L6-v2"))  # its default model
    assert [len(v) for v in vectors] == [MINILM_DIM, MINILM_DIM]
    before = len(words_sent(upstream))
    asyncio.run(owui(["alpha"], "words", prefix="query"))  # RAG_EMBEDDING_QUERY_PREFIX=query
    asyncio.run(owui(["alpha"], "words", prefix="document"))  # RAG_EMBEDDING_CONTENT_PREFIX=document
    assert words_sent(upstream)[before:] == ["q: alpha", "d: alpha"]


def test_an_upstream_failure_is_a_502_with_its_code(live: LiveServer, upstream: ScriptedServer) -> None:
    upstream.expect("POST", "/v1/embeddings", Reply.error(500))
    failed = post(live, "/v1/embeddings", {"input": "alpha", "model": "words"})
    assert failed.status_code == 502, failed.text
    assert failed.json()["error"]["code"] == "EMBEDDING_FAILED"
    upstream.expect("POST", "/v1/rerank", Reply.error(500))
    failed = post(live, "/v1/rerank", {"query": QUERY, "documents": DOCS})
    assert failed.status_code == 502, failed.text
    assert failed.json()["error"]["code"] == "RERANK_FAILED"
    upstream.verify()


# -- POST /embed (TEI) --------------------------------------------------------------------------


def test_embed_answers_tei_s_shapes(live: LiveServer) -> None:
    single = post(live, "/embed", {"inputs": TEXTS[0], "normalize": True, "truncate": True})
    batch = post(live, "/embed", {"inputs": TEXTS, "normalize": True, "truncate": True})
    assert single.status_code == batch.status_code == 200, single.text
    assert np.array(single.json()).shape == (1, MINILM_DIM)  # a string answers [[...]] too
    assert np.array(batch.json()).shape == (2, MINILM_DIM)
    assert np.allclose(single.json()[0], batch.json()[0], atol=1e-6)  # alone or batched: padding
    openai_shape = post(live, "/v1/embeddings", {"input": TEXTS}).json()
    assert np.allclose(batch.json(), [d["embedding"] for d in openai_shape["data"]], atol=1e-6)
    query = post(live, "/embed", {"inputs": TEXTS, "prompt_name": "query", "truncate": False})
    assert query.status_code == 200, query.text


def test_ragd_s_own_tei_client_reads_embed(live: LiveServer, dense: DenseEmbedder) -> None:
    settings_ = EmbeddingSettings(  # type: ignore[call-arg]
        provider="tei", base_url=live.url, api_key=KEY, dimension=MINILM_DIM, max_tokens=256, retries=0
    )

    async def embed() -> list[Any]:
        client = await TeiEmbedder.create(settings_)
        try:
            return await client.embed_documents(TEXTS)
        finally:
            await client.aclose()

    got, want = asyncio.run(embed()), asyncio.run(dense.embed_documents(TEXTS))
    assert all(np.allclose(a, b, atol=1e-6) for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"inputs": []}, 400, "empty"),
        ({"inputs": [101, 2023, 102]}, 400, "token arrays"),
        ({"inputs": "a", "normalize": False}, 400, "normalize"),
        ({"inputs": "a", "truncation_direction": "Left"}, 400, "right"),
        ({"inputs": "a", "prompt_name": "classification"}, 400, "valid values"),
        ({"inputs": "a", "dimensions": 12}, 400, "384-dimensional"),
        ({"input": "a"}, 422, "inputs"),
    ],
)
def test_bad_tei_requests_are_4xx_with_a_code(
    live: LiveServer, body: dict[str, Any], status: int, words: str
) -> None:
    response = post(live, "/embed", body)
    assert response.status_code == status, response.text
    if status == 400:
        detail = response.json()["detail"]
        assert detail["code"] == "INVALID_REQUEST"
        assert words in detail["error"]
    else:
        assert words in response.text


# -- ragproxy's embedder (seed 004): POST /ragproxy/embed, GET /health -------------------------


@pytest.mark.parametrize("field", ["inputs", "texts"])
def test_ragproxy_embed_answers_vectors_normalize_and_dim(live: LiveServer, field: str) -> None:
    response = post(live, "/ragproxy/embed", {field: TEXTS, "normalize": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"vectors", "normalize", "dim"}
    assert (body["normalize"], body["dim"]) == (True, MINILM_DIM)
    vectors = np.array(body["vectors"])
    assert vectors.shape == (2, MINILM_DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    tei = post(live, "/embed", {"inputs": TEXTS}).json()  # the same vectors TEI's shape gives
    assert np.allclose(vectors, tei, atol=1e-6)
    single = post(live, "/ragproxy/embed", {field: TEXTS[0]}).json()  # normalize defaults to true
    assert single["normalize"] is True
    assert np.allclose(single["vectors"], vectors[:1], atol=1e-6)


def test_the_tei_shape_is_unchanged_beside_ragproxy_s(live: LiveServer) -> None:
    tei = post(live, "/embed", {"inputs": TEXTS, "normalize": True})
    assert tei.status_code == 200
    vectors = tei.json()
    assert isinstance(vectors, list)  # a bare array …
    assert all(isinstance(v, list) for v in vectors)  # … of arrays
    assert tei.content == json.dumps(vectors, separators=(",", ":")).encode()
    assert post(live, "/embed", {"texts": TEXTS}).status_code == 422  # TEI's /embed reads inputs only


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"inputs": TEXTS, "normalize": False}, "normalize"),
        ({"inputs": TEXTS, "texts": TEXTS}, "one of the two"),
        ({"normalize": True}, "one of the two"),
        ({"texts": []}, "empty"),
        ({"texts": ["a"], "input_type": "classification"}, "valid values"),
    ],
)
def test_bad_ragproxy_requests_are_400_with_a_code(
    live: LiveServer, body: dict[str, Any], words: str
) -> None:
    response = post(live, "/ragproxy/embed", body)
    assert response.status_code == 400, response.text
    detail = response.json()["detail"]
    assert detail["code"] == "INVALID_REQUEST"
    assert words in detail["error"]


def test_ragproxy_embed_needs_a_key_and_health_names_the_model(live: LiveServer) -> None:
    assert post(live, "/ragproxy/embed", {"texts": ["a"]}, headers={}).status_code == 401
    for path in ("/health", "/ragproxy/health"):
        health = httpx.get(f"{live.url}{path}", timeout=10)  # no key, as liveness probes call it
        assert health.status_code == 200, path
        assert health.json() == {"status": "ok", "ok": True, "model": "packaged:all-MiniLM-L6-v2"}


# -- POST /v1/rerank ----------------------------------------------------------------------------


def test_rerank_answers_cohere_s_shape_best_first(live: LiveServer, upstream: ScriptedServer) -> None:
    body = {"model": "rr-base", "query": QUERY, "documents": DOCS, "top_n": 2, "return_documents": True}
    response = post(live, "/v1/rerank", body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["model"] == "rr-base"
    assert [(r["index"], r["document"]["text"]) for r in answer["results"]] == [(1, DOCS[1]), (2, DOCS[2])]
    assert answer["results"][0]["relevance_score"] == 1.0
    assert upstream.requests_to("POST", "/v1/rerank")[-1].json["documents"] == DOCS


@pytest.mark.parametrize(
    "body",
    [
        {"query": QUERY, "documents": [{"text": d} for d in DOCS]},  # Cohere's document objects
        {"query": QUERY, "texts": DOCS, "raw_scores": False, "truncate": True},  # TEI's request
        {"model": "default", "query": QUERY, "documents": DOCS},
        {"model": "ragd", "query": QUERY, "documents": DOCS},
    ],
)
def test_rerank_accepts_every_request_shape(live: LiveServer, body: dict[str, Any]) -> None:
    response = post(live, "/v1/rerank", body)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["index"] for r in results] == [1, 2, 0]
    assert all("document" not in r for r in results)


def test_open_webui_s_external_reranker_works(live: LiveServer) -> None:
    """Open WebUI 0.12.4 ``ExternalReranker.predict`` (open_webui/retrieval/models/external.py),
    replayed: requests posts ``{"model", "query", "documents", "top_n": len(docs)}`` with
    Content-Type and a bearer key, sorts ``results`` by ``index`` and reads ``relevance_score``."""
    sentences = [(QUERY, d) for d in DOCS]
    query, docs = sentences[0][0], [i[1] for i in sentences]
    payload = {"model": "default", "query": query, "documents": docs, "top_n": len(docs)}
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}
    r = requests.post(f"{live.url}/v1/rerank", headers=headers, json=payload, timeout=60)
    r.raise_for_status()
    data = r.json()
    assert "results" in data
    scores = [result["relevance_score"] for result in sorted(data["results"], key=lambda x: x["index"])]
    assert scores == [0.0, 1.0, pytest.approx(1 / 3)]


def test_rerank_errors_are_4xx_with_a_code(live: LiveServer) -> None:
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"model": "nope", "query": QUERY, "documents": DOCS}, 404, "NOT_FOUND"),
        ({"query": QUERY, "documents": []}, 400, "INVALID_REQUEST"),
        ({"query": " ", "documents": DOCS}, 400, "INVALID_REQUEST"),
        ({"query": QUERY, "documents": DOCS, "texts": DOCS}, 400, "INVALID_REQUEST"),
        ({"query": QUERY, "documents": ["d"] * 1001}, 413, "INPUT_TOO_LARGE"),
        ({"query": "q" * (MAX_INPUT_CHARS + 1), "documents": DOCS}, 413, "INPUT_TOO_LARGE"),
        ({"query": QUERY, "documents": ["d" * MAX_INPUT_CHARS] * 11}, 413, "INPUT_TOO_LARGE"),
        ({"query": QUERY, "documents": DOCS, "top_n": 0}, 422, "INVALID_REQUEST"),
        ({"documents": DOCS}, 422, "INVALID_REQUEST"),
    ]
    for body, status, code in cases:
        response = post(live, "/v1/rerank", body)
        assert response.status_code == status, (body, response.text)
        assert response.json()["error"]["code"] == code


# -- GET /v1/models/{id} ------------------------------------------------------------------------


def test_a_dense_model_has_an_openai_model_object(live: LiveServer) -> None:
    with sdk(live) as client:
        words = client.models.retrieve("words")
        minilm = client.models.retrieve("packaged:all-MiniLM-L6-v2")
        with pytest.raises(openai.NotFoundError):
            client.models.retrieve("gpt-4o")
    assert (words.id, words.object, words.owned_by) == ("words", "model", "ragd")
    assert words.model_extra is not None
    assert words.model_extra["ragd"]["dimension"] == DIM
    assert minilm.model_extra is not None
    assert minilm.model_extra["ragd"] == {
        "name": "default", "kind": "embedding", "model": "packaged:all-MiniLM-L6-v2",
        "dimension": MINILM_DIM, "max_tokens": 256,
    }  # fmt: skip
    assert httpx.get(f"{live.url}/v1/models/sentence-transformers/x", headers=AUTH).status_code == 404
    found = httpx.get(f"{live.url}/v1/models/sentence-transformers/all-MiniLM-L6-v2", headers=AUTH)
    assert found.json()["id"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_the_texts_are_counted_in_metrics(live: LiveServer) -> None:
    post(live, "/embed", {"inputs": ["a", "b"]})
    text = httpx.get(f"{live.url}/metrics", headers=AUTH).text
    counted = re.search(r'^model_inputs_total\{endpoint="embed"\} (\S+)$', text, re.M)
    assert counted is not None
    assert float(counted.group(1)) >= 2


FUZZ = settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
MODEL_PATHS = {"/v1/embeddings", "/embed", "/v1/rerank", "/v1/models/{model_id}"}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_no_request_to_a_model_endpoint_gets_a_server_error(live: LiveServer, mode: GenerationMode) -> None:
    schema = from_url(f"{live.url}/openapi.json")
    operations = [op.ok() for op in schema.get_all_operations() if op.ok().path in MODEL_PATHS]
    assert {op.path for op in operations} == MODEL_PATHS
    for operation in operations:

        @FUZZ
        @given(case=operation.as_strategy(generation_mode=mode))
        def fuzz(case: Case) -> None:
            response = case.call(base_url=live.url, headers=AUTH, timeout=60)
            case.validate_response(response, checks=[not_a_server_error])

        fuzz()


# -- a bare server: the vectors are the index's; no reranker ------------------------------------


@dataclass(frozen=True, slots=True)
class Observed:
    served: dict[tuple[str, int], list[float]]  # (file id, split id) -> /v1/embeddings' vector
    stored: dict[tuple[str, int], np.ndarray]  # the same chunk's stored vector
    no_reranker: httpx.Response


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Observed:
    settings_: Settings = service_settings(
        tmp_path_factory.mktemp("bare"), model_cache, inspection_enabled=True
    )
    settings_ = settings_.model_copy(update={"chunking": ChunkSettings(token_size=16, token_overlap=0)})
    served: dict[tuple[str, int], list[float]] = {}
    with LiveServer(create_app(settings_)) as server:
        server.wait_ready()
        ingest_over_http(server, (*THREE, ("n", "notes.txt", b"Plain notes without headings. " * 6)))
        for file_id in ("a", "b", "g", "n"):
            url = f"{server.url}/api/v1/documents/{file_id}/chunks"
            page = httpx.get(url, params={"include_content": "full"}, headers=AUTH).json()["chunks"]
            texts = [_embedding_text(c["content"], c["meta"]) for c in page]
            vectors = post(server, "/v1/embeddings", {"input": texts, "input_type": "document"}).json()[
                "data"
            ]
            for chunk, vector in zip(page, vectors, strict=True):
                served[(file_id, chunk["split_id"])] = vector["embedding"]
        no_reranker = post(server, "/v1/rerank", {"query": "q", "documents": ["d"]})

    async def stored_vectors() -> dict[tuple[str, int], np.ndarray]:
        async with open_services(settings_) as svc:
            points, _ = await svc.store.scroll(PointFilter(), limit=1000, with_vectors=True)
        return {(p.meta["file_id"], p.meta["split_id"]): p.dense for p in points if p.dense is not None}

    return Observed(served=served, stored=asyncio.run(stored_vectors()), no_reranker=no_reranker)


def _embedding_text(content: str, meta: dict[str, Any]) -> str:
    """What ingestion embedded: the heading breadcrumb line, then the chunk (``Chunk.embedding_text``)."""
    breadcrumb = meta.get("headers_breadcrumb")
    return f"{breadcrumb}\n{content}" if breadcrumb else content


def test_the_vectors_are_the_ones_the_index_stores(bare: Observed) -> None:
    assert len(bare.served) >= 5
    assert set(bare.served) == set(bare.stored)
    for key, vector in bare.served.items():
        cosine = float(np.dot(vector, bare.stored[key]))
        assert cosine >= 0.999, (key, cosine)


def test_without_a_reranker_rerank_is_a_404_naming_the_setting(bare: Observed) -> None:
    assert bare.no_reranker.status_code == 404
    error = bare.no_reranker.json()["error"]
    assert error["code"] == "NOT_FOUND"
    assert "RAGD_RERANK__PROVIDER" in error["message"]


def test_the_snapshot_of_an_embeddings_body(live: LiveServer) -> None:
    """The exact keys a client reads, once more as JSON text (what Open WebUI's parser sees)."""
    raw = post(live, "/v1/embeddings", {"input": ["x"], "model": "words", "encoding_format": "float"}).text
    body = json.loads(raw)
    body["data"][0]["embedding"] = "<64 floats>"
    assert body == {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": "<64 floats>"}],
        "model": "words",
        "usage": {"prompt_tokens": 3, "total_tokens": 3},  # "d: x" estimated: d, :, x
    }
