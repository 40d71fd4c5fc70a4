"""``POST /search`` with agentic retrieval on: a live ragd, its LLM scripted on loopback.

The model writes the query with a ``search_documents`` call and grades the numbered previews with
a ``grade`` call (by keyword, reading what it was sent); the route returns the hits graded
relevant, counts the request as the ``agentic`` pipeline, and a grade that comes too late still
gets a 200 with the first round's results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragd.api.app import create_app
from ragd.settings import AgentSettings, LlmSettings
from tests.api.conftest import AUTH, ingest_over_http, service_settings
from tests.support.live_server import LiveServer
from tests.support.scripted_http import RecordedRequest, Reply, ScriptedServer

CHAT = "/v1/chat/completions"
NUMBERED = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def tool_reply(name: str, arguments: dict[str, Any], delay_s: float = 0.0) -> Reply:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }
    return Reply.json(
        {
            "id": "chatcmpl-agent",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
        },
        delay_s=delay_s,
    )


def grade_by(keyword: str, delay_s: float = 0.0):  # type: ignore[no-untyped-def]
    def grade(request: RecordedRequest) -> Reply:
        results = request.json["messages"][-1]["content"].split("### Results\n", 1)[1]
        relevant = [int(m.group(1)) for m in NUMBERED.finditer(results) if keyword in m.group(2)]
        return tool_reply("grade", {"relevant": relevant, "verdict": "accept"}, delay_s)

    return grade


@pytest.fixture(scope="module")
def upstream() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, model_cache: Path, upstream: ScriptedServer
) -> Iterator[LiveServer]:
    settings = service_settings(tmp_path_factory.mktemp("ragd"), model_cache)
    settings = settings.model_copy(
        update={
            "llm": LlmSettings(base_url=f"{upstream.url}/v1", model="m", retries=0, timeout_s=10),  # type: ignore[call-arg]
            "agent": AgentSettings(enabled=True, timeout_s=1.5),  # type: ignore[call-arg]
        }
    )
    with LiveServer(create_app(settings)) as server:
        server.wait_ready()
        ingest_over_http(server)
        yield server


def search(live: LiveServer, question: str, k: int) -> dict[str, list[list[Any]]]:
    body = {"collection_names": ["kb"], "messages": [{"role": "user", "content": question}], "k": k}
    r = httpx.post(f"{live.url}/search", json=body, headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def metrics(live: LiveServer) -> str:
    return httpx.get(f"{live.url}/metrics", headers=AUTH).text


def test_search_returns_what_the_agent_graded_relevant(live: LiveServer, upstream: ScriptedServer) -> None:
    before = len(upstream.requests_to("POST", CHAT))
    upstream.expect("POST", CHAT, tool_reply("search_documents", {"queries": ["beta deployment schedule"]}))
    upstream.on("POST", CHAT, grade_by("Tuesday"))
    data = search(live, "When do beta deployments run?", k=3)

    assert len(data["documents"]) == 1
    assert len(data["documents"][0]) == 1
    assert "Tuesday" in data["documents"][0][0]
    assert data["metadatas"][0][0]["name"] == "beta.md"
    sent = upstream.requests_to("POST", CHAT)[before:]
    assert [r.json["tools"][0]["function"]["name"] for r in sent] == ["search_documents", "grade"]
    assert "beta deployment schedule" in sent[1].json["messages"][-1]["content"]
    text = metrics(live)
    assert 'search_requests_total{code="",outcome="ok",pipeline="agentic"} 1.0' in text
    assert 'agent_tokens_total{role="prompt"} 80.0' in text


def test_a_grade_past_the_timeout_still_answers_with_the_first_round(
    live: LiveServer, upstream: ScriptedServer
) -> None:
    upstream.expect("POST", CHAT, tool_reply("search_documents", {"queries": ["gamma release freeze"]}))
    upstream.on("POST", CHAT, grade_by("December", delay_s=5.0))
    data = search(live, "When are gamma releases frozen?", k=2)

    assert len(data["documents"][0]) == 2  # ungraded: the whole first round
    assert "December" in data["documents"][0][0]
    text = metrics(live)
    assert 'search_requests_total{code="",outcome="partial",pipeline="agentic"} 1.0' in text
    assert "agent_timeouts_total 1.0" in text
