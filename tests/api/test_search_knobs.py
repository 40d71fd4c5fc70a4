"""The search knobs on the HTTP surfaces: ``vector_weight``, ``diversity``, ``max_per_file``.

``POST /search`` (extension fields) and the chat proxy (``rag_*`` fields) over a live server with
the real model, small chunks (one file makes several), and a scripted upstream LLM.  The dataset
search: tests/kb/test_kb_api.py; the CLI: tests/test_cli.py.

The corpus is built so that each knob has a visible effect:

* "how to fix a car that will not start": ``parking.md`` has the words, ``engine.md`` the meaning;
  BM25 alone (vector_weight 0) ranks parking first, the dense model alone (1) engine first;
* "harbour tariff for cargo ships": ``tariffs.md`` makes four near-identical chunks that take every
  top slot; a per-file cap or MMR lets ``ledger.md`` and ``pilots.md`` in;
* ``notice.md`` and ``notice-copy.md`` differ by one character: not the same text, the same meaning.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragd.api.app import create_app
from ragd.settings import ChatSettings, ChunkSettings, LlmSettings, QueryGenerationSettings
from tests.api.conftest import AUTH, ingest_over_http, service_settings
from tests.support.knobs_corpus import CAR, FILES, HARBOUR, NOTICE
from tests.support.live_server import LiveServer
from tests.support.scripted_http import Reply, ScriptedServer


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("knobs"), model_cache).model_copy(
        update={
            "chunking": ChunkSettings(token_size=40, token_overlap=0),
            "llm": LlmSettings(base_url=f"{upstream.url}/v1", model="up-model"),  # type: ignore[call-arg]
            "query_generation": QueryGenerationSettings(enabled=False),  # type: ignore[call-arg]
            "chat": ChatSettings(retries=0, timeout_s=10, tools_enabled=False, min_score=0.0),
        }
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server, FILES)
        yield server


def search(live: LiveServer, query: str, k: int = 4, **knobs: Any) -> list[str]:
    body = {"queries": [query], "collection_names": ["kb"], "k": k, **knobs}
    response = httpx.post(f"{live.url}/search", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 200, response.text
    return [m["name"] for m in response.json()["metadatas"][0]]


def chat_sources(live: LiveServer, upstream: ScriptedServer, query: str, **knobs: Any) -> list[str]:
    upstream.expect("POST", "/v1/chat/completions", Reply.json(_completion("ok")))
    body = {"model": "rag/kb", "messages": [{"role": "user", "content": query}], "rag_top_k": 4, **knobs}
    response = httpx.post(f"{live.url}/v1/chat/completions", json=body, headers=AUTH, timeout=60)
    assert response.status_code == 200, response.text
    return [s["source"] for s in response.json()["rag_sources"]]


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "up-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


def test_the_tariffs_file_is_several_chunks(live: LiveServer) -> None:
    assert search(live, HARBOUR, k=4).count("tariffs.md") >= 3, "the corpus must crowd the top slots"


@pytest.mark.parametrize(("weight", "first"), [(0.0, "parking.md"), (1.0, "engine.md")])
def test_vector_weight_moves_the_fusion_between_bm25_and_dense(
    live: LiveServer, weight: float, first: str
) -> None:
    assert search(live, CAR, vector_weight=weight)[0] == first


def test_max_per_file_and_diversity_let_other_files_in(live: LiveServer) -> None:
    plain = search(live, HARBOUR, k=3)
    capped = search(live, HARBOUR, k=3, max_per_file=1)
    assert len(set(capped)) == len(capped) == 3
    assert plain.count("tariffs.md") > capped.count("tariffs.md") == 1
    diverse = search(live, HARBOUR, k=3, diversity=0.7)
    assert diverse.count("tariffs.md") < plain.count("tariffs.md")


def test_a_language_filter_keeps_chunks_in_those_languages(live: LiveServer) -> None:
    assert set(search(live, HARBOUR, k=5, languages=["de"])) == {"hafen.md"}
    assert set(search(live, HARBOUR, k=5, languages=["de", "fr"])) == {"hafen.md", "port.md"}
    assert "hafen.md" not in search(live, HARBOUR, k=5, languages=["en"])


def test_out_of_range_knobs_are_422(live: LiveServer) -> None:
    for knobs in (
        {"vector_weight": 1.5},
        {"diversity": -0.1},
        {"max_per_file": 0},
        {"languages": ["German"]},
    ):
        body = {"queries": ["x"], "collection_names": ["kb"], **knobs}
        response = httpx.post(f"{live.url}/search", json=body, headers=AUTH, timeout=60)
        assert response.status_code == 422, (knobs, response.text)


def test_the_chat_proxy_honours_the_same_knobs(live: LiveServer, upstream: ScriptedServer) -> None:
    assert chat_sources(live, upstream, CAR, rag_vector_weight=0.0)[0] == "parking.md"
    assert chat_sources(live, upstream, CAR, rag_vector_weight=1.0)[0] == "engine.md"
    capped = chat_sources(live, upstream, HARBOUR, rag_max_per_file=1)
    assert len(set(capped)) == len(capped)
    assert set(chat_sources(live, upstream, HARBOUR, rag_languages=["fr"])) == {"port.md"}
    sent = json.loads(upstream.requests_to("POST", "/v1/chat/completions")[-1].body)
    assert "rag_max_per_file" not in sent, "ragd's own fields are not sent upstream"
    upstream.verify()


def test_the_chat_proxy_drops_near_duplicates_by_default(live: LiveServer, upstream: ScriptedServer) -> None:
    """A page and its copy: /search returns both (it is opt-in there), the model gets one."""
    assert {"notice.md", "notice-copy.md"} <= set(search(live, NOTICE, k=4))
    sources = chat_sources(live, upstream, NOTICE)
    assert len({"notice.md", "notice-copy.md"} & set(sources)) == 1, sources
    upstream.verify()


def test_the_chat_proxy_takes_the_same_filter_as_search(live: LiveServer, upstream: ScriptedServer) -> None:
    """``rag_filter`` is the filter language of ``POST /search``'s ``filter``: the same sources."""
    flt = {"must_not": [{"key": "name", "match": {"any": ["tariffs.md", "ledger.md"]}}]}
    searched = search(live, HARBOUR, k=4, filter=flt)
    assert searched
    assert not {"tariffs.md", "ledger.md"} & set(searched)
    sources = chat_sources(live, upstream, HARBOUR, rag_filter=flt)
    assert sources[0] == searched[0]  # the chat's own defaults (near-duplicates, caps) shape the tail
    assert not {"tariffs.md", "ledger.md"} & set(sources)
    assert {"tariffs.md", "ledger.md"} & set(chat_sources(live, upstream, HARBOUR)), "the filter narrowed"
    sent = json.loads(upstream.requests_to("POST", "/v1/chat/completions")[-1].body)
    assert "rag_filter" not in sent, "ragd's own fields are not sent upstream"

    bad = {
        "model": "rag/kb",
        "messages": [{"role": "user", "content": HARBOUR}],
        "rag_filter": {"must": [{}]},
    }
    response = httpx.post(f"{live.url}/v1/chat/completions", json=bad, headers=AUTH, timeout=60)
    assert response.status_code == 422, response.text
    assert "INVALID_FILTER" in response.text
    assert "rag_filter.must[0]: a condition needs a key" in response.text
    nothing = search(live, HARBOUR, filter={"must": [{"key": "name", "match": {"value": "nope.md"}}]})
    assert nothing == []
    upstream.verify()
