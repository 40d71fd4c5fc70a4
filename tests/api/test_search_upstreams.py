"""``POST /search`` with a remote reranker and an LLM for query generation, both scripted on loopback.

The reranker speaks Cohere's ``/v1/rerank``; the LLM OpenAI's chat completions.  Checked: candidates
are fetched ``k x multiplier`` deep and reordered by relevance; a failing reranker fails open (200,
retrieval order, a metric); messages-only searches run the LLM's queries and merge their results.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragd.api.app import create_app
from ragd.settings import LlmSettings, RerankSettings
from tests.api.conftest import AUTH, ingest_over_http, service_settings
from tests.support.live_server import LiveServer
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer


def cohere_scores(request: RecordedRequest) -> Reply:
    """Relevance by a keyword the test controls: 'Tuesday' wins, everything else is weak."""
    docs = request.json["documents"]
    results = [{"index": i, "relevance_score": 0.99 if "Tuesday" in d else 0.1} for i, d in enumerate(docs)]
    return Reply.json({"results": sorted(results, key=lambda r: -r["relevance_score"])})


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        server.on("POST", "/v1/rerank", cohere_scores)
        yield server


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("ragd"), model_cache)
    settings = settings.model_copy(
        update={
            "rerank": RerankSettings(
                provider="remote", base_url=upstream.url, model="rr", retries=0, multiplier=3
            ),  # type: ignore[call-arg]
            "llm": LlmSettings(base_url=f"{upstream.url}/v1", model="m", retries=0, timeout_s=5),  # type: ignore[call-arg]
        }
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server)
        yield server


def search(live: LiveServer, body: dict[str, object]) -> dict[str, list[list[object]]]:
    r = httpx.post(f"{live.url}/search", json={"collection_names": ["kb"], **body}, headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_reranker_reorders_the_candidates(live: LiveServer, upstream: ScriptedServer) -> None:
    before = len(upstream.requests_to("POST", "/v1/rerank"))
    data = search(live, {"queries": ["alpha protocol approvals"], "k": 1})
    assert "Tuesday" in data["documents"][0][0]  # retrieval put alpha first; the reranker said beta
    assert data["distances"][0] == [0.99]
    sent = upstream.requests_to("POST", "/v1/rerank")[before:]
    assert len(sent) == 1
    body = sent[0].json
    assert (body["model"], body["query"], body["top_n"]) == ("rr", "alpha protocol approvals", 3)
    assert len(body["documents"]) == 3  # k=1 x multiplier 3 candidates (all three files)


def test_a_failing_reranker_fails_open(live: LiveServer, upstream: ScriptedServer) -> None:
    upstream.expect("POST", "/v1/rerank", Reply.error(503))
    data = search(live, {"queries": ["alpha protocol approvals"], "k": 2})
    assert "three approvals" in data["documents"][0][0]  # retrieval order kept
    assert all(0 < d <= 1 for d in data["distances"][0])  # retrieval scores, not zeros
    metrics = httpx.get(f"{live.url}/metrics", headers=AUTH).text
    assert 'reranker_failures_total{reason="RERANK_FAILED"} 1.0' in metrics


def test_messages_only_search_runs_the_generated_queries(live: LiveServer, upstream: ScriptedServer) -> None:
    answer = '{"queries": ["gamma release freeze", "beta deployment schedule"]}'
    upstream.expect(
        "POST",
        "/v1/chat/completions",
        Reply.json(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "m",
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}
                ],
            }
        ),
    )
    messages = [
        {"role": "user", "content": "What are the release rules?"},
        {"role": "assistant", "content": "Which team?"},
        {"role": "user", "content": "Both gamma and beta, please"},
    ]
    data = search(live, {"messages": messages, "k": 3})
    prompt = upstream.requests_to("POST", "/v1/chat/completions")[-1].json["messages"][0]["content"]
    assert "USER: Both gamma and beta, please" in prompt
    docs = " ".join(data["documents"][0])
    assert "December" in docs
    assert "Tuesday" in docs
    assert len(data["documents"]) == 1


@pytest.fixture(scope="module")
def hurried(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    """A service whose whole search must end within 2 s, with an LLM it would wait 30 s for."""
    settings = service_settings(tmp_path_factory.mktemp("hurried"), model_cache, search_timeout_s=2.0)
    llm = LlmSettings(base_url=f"{upstream.url}/v1", model="m", retries=0, timeout_s=30)  # type: ignore[call-arg]
    with LiveServer(create_app(settings.model_copy(update={"llm": llm}))) as server:
        server.wait_ready()
        ingest_over_http(server)
        yield server


def test_the_search_timeout_bounds_query_generation_too(
    hurried: LiveServer, upstream: ScriptedServer
) -> None:
    """A hanging LLM costs at most half the deadline; then the last user message is searched."""
    slow = Reply.json(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": "[]"}}]}, delay_s=20
    )
    upstream.expect("POST", "/v1/chat/completions", slow)
    messages = [{"role": "user", "content": "When do beta deployments run?"}]
    started = time.monotonic()
    data = search(hurried, {"messages": messages, "k": 3})
    assert time.monotonic() - started < 4.0  # 2 s deadline (1 s for generation) + HTTP
    assert "Tuesday" in data["documents"][0][0]
